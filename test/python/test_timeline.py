"""End-to-end timeline: `hvdrun -np 2 --timeline-filename` and HVD_TIMELINE=DYNAMIC produce a
parseable Chrome trace written by rank 0, and `hvd-timeline summary` reads it.

Runs from a single pytest process that launches hvdrun; the binaries come from the build tree
(HVD_TEST_HVDRUN, HVD_TEST_TIMELINE_TOOL, set by test/python/CMakeLists.txt).
"""
import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

HVDRUN = os.environ.get("HVD_TEST_HVDRUN")
TOOL = os.environ.get("HVD_TEST_TIMELINE_TOOL")

pytestmark = pytest.mark.skipif(not HVDRUN or not TOOL,
                                reason="HVD_TEST_HVDRUN / HVD_TEST_TIMELINE_TOOL not set")

WORKER = textwrap.dedent("""
    import sys
    import torch
    import hvd.torch as hvd

    hvd.init()
    dynamic = len(sys.argv) > 1
    if dynamic:
        hvd.start_timeline(sys.argv[1], mark_cycles=True)
    for step in range(3):
        hvd.allreduce(torch.ones(4, 3), name="grad.weight")
        hvd.allreduce(torch.ones(5), name="grad.bias")
    hvd.broadcast(torch.arange(3.0), root_rank=0, name="bcast.init")
    hvd.allgather(torch.ones(2, 2) * hvd.rank(), name="gather.x")
    if dynamic:
        hvd.stop_timeline()
        hvd.barrier()  # rank 0 has stopped before anyone sends the next request
        hvd.allreduce(torch.ones(2), name="after.stop")
    hvd.shutdown()
""")


def _run(tmp_path, args, env_extra=None, worker_args=()):
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    env = dict(os.environ)
    env.update(env_extra or {})
    cmd = [HVDRUN, "-np", "2", *args, sys.executable, str(script), *worker_args]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, f"{cmd} failed:\n{proc.stdout}\n{proc.stderr}"


def _load(path):
    with open(path) as f:
        trace = json.load(f)
    assert isinstance(trace, list) and trace
    names = {e.get("name") for e in trace}
    rows = {e["args"]["name"] for e in trace
            if e.get("name") == "process_name" and "name" in e.get("args", {})}
    return trace, names, rows


def _summary(path):
    proc = subprocess.run([TOOL, "summary", str(path)], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_timeline_filename_records_the_job(tmp_path):
    path = tmp_path / "timeline.json"
    _run(tmp_path, ["--timeline-filename", str(path), "--timeline-mark-cycles"])
    trace, names, rows = _load(path)
    assert any("start_time_since_epoch_in_micros" in e.get("args", {}) for e in trace)
    for expected in ("NEGOTIATE_ALLREDUCE", "ALLREDUCE", "BROADCAST", "ALLGATHER",
                     "CYCLE_START"):
        assert expected in names, f"{expected} missing from {sorted(n for n in names if n)}"
    # The transfer activity is named after the backend in use (SHM_, TCP_, GLOO_, MPI_).
    for op in ("ALLREDUCE", "BCAST", "ALLGATHER"):
        assert any(re.fullmatch(r"(SHM|TCP|GLOO|MPI)_" + op, n or "") for n in names), \
            f"no <BACKEND>_{op} in {sorted(n for n in names if n)}"
    # hvd.torch prefixes names with the op, as Horovod does
    assert {"allreduce.grad.weight", "allreduce.grad.bias", "broadcast.bcast.init",
            "allgather.gather.x"} <= rows
    ends = [e for e in trace if e.get("ph") == "E" and "shape" in e.get("args", {})]
    assert any(e["args"]["shape"] == "[4, 3]" and e["args"]["dtype"] == "float32" for e in ends)
    out = _summary(path)
    assert "ALLREDUCE" in out and "allreduce.grad.weight" in out


def test_dynamic_timeline_start_stop(tmp_path):
    path = tmp_path / "dynamic.json"
    _run(tmp_path, [], {"HVD_TIMELINE": "DYNAMIC"}, [str(path)])
    _, names, rows = _load(path)
    assert "allreduce.grad.weight" in rows and "allreduce.after.stop" not in rows
    assert "CYCLE_START" in names
    assert "ALLREDUCE" in _summary(path)
