"""--log-level reaches the ranks: DEBUG shows what each rank set up and what each negotiation
decided, TRACE adds every cycle that ran cached responses, and the default shows neither.

hvdrun -np 2 with hvd-step-bench (4 tensors a step, so the first step negotiates and the rest
are cache hits).
"""
import re

import pytest

import jobs

BENCH = ["--steps", "20", "--tensors", "4", "--bytes", "1K"]


def rank0_lines(proc, level):
    return [line for line in proc.stderr.splitlines()
            if line.startswith("[0]<stderr>:") and f"hvd rank 0 {level}: " in line]


@pytest.mark.parametrize("level", ["DEBUG", "TRACE"])
def test_debug_shows_the_set_up_and_each_negotiation(tmp_path, level):
    proc = jobs.check(jobs.hvdrun(2, ["--log-level", level], BENCH, tmp_path))
    debug = "\n".join(rank0_lines(proc, "debug"))
    assert re.search(r"rank 0 of 2 \(local 0 of 2, cross 0 of 1, homogeneous\): global set on "
                     r"SHM; fusion threshold \d+ bytes, cycle time [\d.]+ ms", debug), proc.stderr
    assert re.search(r"process set 0: negotiated allreduce of \d+ tensors? \[", debug), debug
    # by both ranks, or by the first to get there
    assert re.search(r"negotiated a shutdown \(asked by members \[(0, 1|0|1)\]\)", debug), debug
    trace = rank0_lines(proc, "trace")
    if level == "TRACE":
        # The 19 steps after the first are cache hits, logged per cycle only at TRACE
        assert any("process set 0: cycle ran" in line for line in trace), proc.stderr
    else:
        assert trace == [], trace


def test_the_default_level_shows_neither(tmp_path):
    proc = jobs.check(jobs.hvdrun(2, ["--log-level", "WARNING"], BENCH, tmp_path))
    assert "negotiated" not in proc.stderr and "cycle ran" not in proc.stderr, proc.stderr
