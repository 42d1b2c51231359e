"""Autotune end to end through hvdrun: from a start the job sets (fusion threshold 0, cycle time
100 ms) tuning tries other parameters, the CSV log has Horovod's columns with the best row last,
every rank ends on the same parameters, and --autotune-cache makes a second run skip tuning."""
import csv
import json
import re

import pytest

import jobs

HEADER = ["hierarchical_allreduce", "hierarchical_allgather", "torus_allreduce", "cache_enabled",
          "cycle_time_ms", "tensor_fusion_threshold", "score"]
FINAL = re.compile(r"^\[(\d+)\]<stderr>:.*Autotuner: finished; running with "
                   r"fusion_threshold_bytes=(\d+) cycle_time_us=(\d+) cache_enabled=(\d)$", re.M)
WARMUP = re.compile(r"Autotuner: Warming up \(\d+ remaining\), sample "
                    r"\[false, false, false, (true|false), ([\d.]+) ms, ([\d.]+) mb\] ([\d.e+]+)")


def tune(tmp_path, log_name):
    # Bad start: no fusion, 100 ms cycles. HVD_AUTOTUNE_TUNE_SET_KNOBS makes the explicit
    # values a starting point instead of fixing them.
    args = ["--autotune", "--autotune-log-file", str(tmp_path / log_name),
            "--autotune-cache", str(tmp_path / "cache.json"),
            "--autotune-warmup-samples", "1", "--autotune-steps-per-sample", "2",
            "--autotune-bayes-opt-max-samples", "6",
            "--fusion-threshold-mb", "0", "--cycle-time-ms", "100"]
    return jobs.check(jobs.hvdrun(2, args, ["--steps", "300", "--tensors", "32", "--bytes", "16K"],
                                  cwd=tmp_path, env_extra={"HVD_AUTOTUNE_TUNE_SET_KNOBS": "1"}))


def finals(proc):
    return {int(m.group(1)): m.groups()[1:] for m in FINAL.finditer(proc.stderr)}


@pytest.fixture(scope="module")
def first_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("autotune")
    return tmp, tune(tmp, "tune.csv")


def test_tuning_tries_more_than_the_start_and_every_rank_agrees(first_run):
    tmp, proc = first_run
    # Then the log parses with Horovod's columns, one row per observation plus the best
    with open(tmp / "tune.csv") as f:
        rows = list(csv.reader(f))
    assert rows[0] == HEADER
    body = [[float(x) for x in r] for r in rows[1:]]
    assert len(body) >= 6 + 1 and all(len(r) == 7 for r in body)
    # And the last row is the best observation
    best = body[-1]
    assert best[6] == max(r[6] for r in body[:-1])
    assert best in body[:-1]
    # And the warm-up sample was taken at the start the job set, and tuning tried others. (Not
    # asserted: that the best scores higher than that sample. In hvd this start is barely bad:
    # a waiting caller ends the 100 ms cycle's hold, and unfused 16 KiB allreduces at 2 ranks
    # are about as fast as fused ones; so best and warm-up differ by noise, and on 2026-11-30
    # one CI run had the warm-up's one sample 6 % above the best median. What tuning gains
    # is measured side by side by bench/autotune_bench.sh, not in a test.)
    warm = WARMUP.search(proc.stderr)
    assert warm, proc.stderr[-3000:]
    assert float(warm.group(2)) == 100 and float(warm.group(3)) == 0
    # (The seed points are not the start; the best may still be a corner the search tried.)
    assert any((r[4], r[5]) != (100, 0) for r in body[:-1]), body
    # And every rank ended on the same parameters: the best row's
    ended = finals(proc)
    assert set(ended) == {0, 1}, proc.stderr[-3000:]
    assert ended[0] == ended[1]
    fusion_bytes, cycle_us, cache = (int(x) for x in ended[0])
    assert abs(fusion_bytes - best[5] * 1024 * 1024) <= 1
    assert abs(cycle_us - best[4] * 1000) <= 1
    assert cache == int(best[3])


def test_cached_result_is_reused_without_tuning(first_run):
    tmp, first = first_run
    # When the same job runs again with the same cache file
    proc = tune(tmp, "tune2.csv")
    # Then the log says the cached result was used, nothing was tuned, and every rank runs
    # with the first run's parameters
    assert "using cached autotune result" in proc.stderr
    with open(tmp / "tune2.csv") as f:
        rows = list(csv.reader(f))
    assert rows == [HEADER]
    assert finals(proc) == finals(first)


def test_autotune_says_when_it_has_nothing_to_tune_and_why_it_cannot_log(tmp_path):
    proc = jobs.check(jobs.hvdrun(
        2, ["--autotune", "--fusion-threshold-mb", "0", "--cycle-time-ms", "2",
            "--cache-capacity", "0", "--autotune-log-file", str(tmp_path / "no" / "t.csv")],
        ["--steps", "20", "--tensors", "4", "--bytes", "1K"], tmp_path))
    assert "autotune: nothing to tune: the fusion threshold, the cycle time and the response " \
           "cache are all set" in proc.stderr, proc.stderr
    assert "HVD_AUTOTUNE_TUNE_SET_KNOBS=1" in proc.stderr, proc.stderr
    assert re.search(r"autotune: cannot write the log \S+/no/t\.csv: No such file or directory; "
                     r"tuning goes on without it", proc.stderr), proc.stderr


@pytest.mark.parametrize("content, why", [
    ('{"format": 5, "version": 1, "entries": {}}', "is not an hvd autotune cache"),
    ('[' * 100 + ']' * 100, "is nested deeper than 8 levels"),
], ids=["format-of-another-type", "nested-deep"])
def test_a_cache_file_that_is_no_cache_is_named_and_the_job_tunes_and_keeps_it(
        tmp_path, content, why):
    # Given a cache file that is not one (another program's JSON, say)
    cache = tmp_path / "cache.json"
    cache.write_text(content)
    # When a job tunes with it
    proc = jobs.check(jobs.hvdrun(
        2, ["--autotune", "--autotune-cache", str(cache), "--autotune-warmup-samples", "1",
            "--autotune-steps-per-sample", "2", "--autotune-bayes-opt-max-samples", "2"],
        ["--steps", "200", "--tensors", "8", "--bytes", "4K"], tmp_path))
    # Then it warns naming the file and why, tunes from the start, every rank ends on the
    # same knobs, and the file is left as it was
    warnings = [line for line in proc.stderr.splitlines()
                if f"'{cache}' {why}" in line and "tuning from the start instead" in line]
    assert len(warnings) == 1, proc.stderr[-3000:]
    ended = finals(proc)
    assert set(ended) == {0, 1} and ended[0] == ended[1], proc.stderr[-3000:]
    assert cache.read_text() == content


def test_a_cached_result_brings_only_what_was_tuned(tmp_path):
    # Given a job without a response cache (--cache-capacity 0) that tuned and stored its result
    cache = tmp_path / "cache.json"
    args = ["--autotune", "--autotune-cache", str(cache), "--autotune-warmup-samples", "1",
            "--autotune-steps-per-sample", "2", "--autotune-bayes-opt-max-samples", "2"]
    model = ["--steps", "200", "--tensors", "8", "--bytes", "4K"]
    first = jobs.check(jobs.hvdrun(2, args + ["--cache-capacity", "0"], model, tmp_path))
    assert set(finals(first)) == {0, 1} and finals(first)[0][2] == "0", first.stderr[-3000:]
    entry = next(iter(json.loads(cache.read_text())["entries"].values()))
    assert entry["tuned"] == ["tensor_fusion_threshold", "cycle_time_ms"], entry
    # When the same model runs with its response cache (the default)
    second = jobs.check(jobs.hvdrun(2, args, model, tmp_path))
    # Then it takes the tuned fusion threshold and cycle time, but keeps its response cache:
    # "off" was the first job's configuration, not a result (until 2026-12-01 every later job
    # of the model ran without the cache)
    assert "using cached autotune result" in second.stderr, second.stderr[-3000:]
    ended = finals(second)
    assert set(ended) == {0, 1} and ended[0] == ended[1], second.stderr[-3000:]
    assert ended[0][2] == "1"
    assert ended[0][:2] == finals(first)[0][:2]
