"""Elastic jobs whose workers fail (F02-F06, F09-F11), by exception and by SIGKILL, and a
SIGKILLed hvdrun in the middle of a reset."""
import os
import signal
import subprocess
import time
import uuid

import pytest

from elastic_harness import (HVDRUN, PYTHON, TRAIN, assert_state_recovered, discovery_script,
                             hvdrun, kill_marked, live_marked, require_hvdrun, rounds_by_worker)
from memory_cgroup import memory_cgroup

TWO_HOSTS = ["localhost:2", "127.0.0.1:2"]


def with_discovery(tmp_path, worker_args, hvd_extra=(), np=4, min_np=2):
    script = discovery_script(tmp_path / "discover.sh", tmp_path / "log.jsonl",
                              [(None, TWO_HOSTS)])
    return hvdrun(["-np", str(np), "--min-np", str(min_np), "--host-discovery-script", script,
                   "--host-discovery-interval", "0.05"] + list(hvd_extra), worker_args,
                  tmp_path)


def with_fixed_hosts(tmp_path, worker_args, hvd_extra=(), np=4, min_np=2, **kwargs):
    return hvdrun(["-np", str(np), "--min-np", str(min_np), "-H", ",".join(TWO_HOSTS)] +
                  list(hvd_extra), worker_args, tmp_path, **kwargs)


def assert_single_failure(run, mode):
    assert run.returncode == 0, run.describe()
    assert run.sizes() == [4, 2, 2], run.describe()
    assert [l["rendezvous"] for l in run.log] == [1, 2, 2]
    assert run.log[1]["hostname"] == "127.0.0.1" and run.log[1]["start_rank"] == 2
    # An exception is named from the end of the worker's traceback
    failure = "SIGKILL (signal 9)" if mode == "kill" else (
        "exit code 1: RuntimeError: check_exit: worker 0 (start rank 0) fails at epoch 1 batch 0")
    assert ("worker 0 (rank 0 of round 1) on localhost failed: %s; host localhost is "
            "blacklisted for good" % failure) in run.err, run.describe()
    assert "removing worker 1 from the job: host localhost is blacklisted" in run.err
    assert rounds_by_worker(run)[2] == [(0, 2, 2), (1, 3, 2)]
    assert_state_recovered(run)


# F02: rank 0 fails at epoch 1, batch 0; its host is blacklisted (its other worker drained),
# the two workers on 127.0.0.1 go on as ranks 0 and 1 from the last commit.
@pytest.mark.parametrize("mode", ["exception", "kill"])
def test_f02_single_rank_failure_with_discovery(tmp_path, mode):
    run = with_discovery(tmp_path, ["--exit-schedule", '{"1,0": [0]}', "--exit-mode", mode])
    assert_single_failure(run, mode)


# F03: the same with a fixed host list (fault tolerance without scaling).
@pytest.mark.parametrize("mode", ["exception", "kill"])
def test_f03_fault_tolerance_without_discovery(tmp_path, mode):
    run = with_fixed_hosts(tmp_path, ["--exit-schedule", '{"1,0": [0]}', "--exit-mode", mode])
    assert_single_failure(run, mode)


# A worker the kernel's OOM killer ends (a real OOM kill: it joins a memory cgroup of 256 MiB
# and outgrows it): the job goes on as after any failure, and says why the worker died.
def test_a_worker_killed_by_the_oom_killer_is_said_to_be_out_of_memory(tmp_path):
    with memory_cgroup(256 << 20) as procs:
        run = with_fixed_hosts(tmp_path, ["--exit-schedule", '{"1,0": [0]}', "--exit-mode", "oom",
                                          "--oom-cgroup", procs])
    assert run.returncode == 0, run.describe()
    assert run.sizes() == [4, 2, 2], run.describe()
    assert ("worker 0 (rank 0 of round 1) on localhost failed: SIGKILL (signal 9): killed by the "
            "kernel's OOM killer (") in run.err, run.describe()
    assert ", anon-rss " in run.err, run.describe()
    assert_state_recovered(run)


# F04: every worker fails.
def test_f04_all_ranks_fail(tmp_path):
    run = with_discovery(tmp_path, ["--exit-schedule", '{"1,0": [0, 1, 2, 3]}'])
    assert run.returncode == 1, run.describe()
    assert "every worker of round 1 failed; the first failure: worker" in run.err, run.describe()
    assert run.sizes() == [4]


# A script without hvd.elastic.run under an elastic hvdrun: worker 1 raises, its exit shuts the
# runtime down and its peers' allreduces fail with HorovodInternalError ("Shut down by rank 1"),
# and they exit first (worker 1's exit is held up 2 s, after hvd's exit handler). Worker 1 is
# the first failure, with its code and exception: its peers' runtimes named it to hvdrun. Until
# 2026-11-30 the first peer whose end hvdrun took was named, with HorovodInternalError.
def test_the_worker_whose_exit_failed_its_peers_is_the_first_failure(tmp_path):
    script = tmp_path / "plain.py"
    script.write_text(
        "import atexit, os, time\n"
        "if os.environ['HVD_ELASTIC_WORKER_ID'] == '1':\n"
        "    atexit.register(time.sleep, 2)\n"
        "import torch, hvd.torch as hvd\n"
        "hvd.init()\n"
        "for step in range(100):\n"
        "    if step == 3 and hvd.rank() == 1:\n"
        "        raise RuntimeError('boom on worker 1')\n"
        "    hvd.allreduce(torch.ones(1000), name='g')\n")
    run = with_fixed_hosts(tmp_path, [], worker=str(script))
    assert run.returncode == 1, run.describe()
    assert ("every worker of round 1 failed; the first failure: worker 1 (rank 1 of round 1) on "
            "localhost: exit code 1: RuntimeError: boom on worker 1 (its end failed worker ") \
        in run.err, run.describe()
    assert "  1       localhost  exit code 1  <- first failure" in run.err, run.describe()


# F05: one worker per host fails: both hosts are blacklisted, the other two are drained.
def test_f05_all_hosts_blacklisted(tmp_path):
    run = with_discovery(tmp_path, ["--exit-schedule", '{"1,0": [0, 2]}', "--exit-mode", "kill"])
    assert run.returncode == 137, run.describe()
    assert "all hosts are blacklisted (127.0.0.1, localhost): no host is left" in run.err or \
        "all hosts are blacklisted (localhost, 127.0.0.1): no host is left" in run.err, \
        run.describe()


# F06: below --min-np for --elastic-timeout ends the job (exit 124).
def test_f06_min_np_timeout(tmp_path):
    started = time.monotonic()
    run = with_discovery(tmp_path, ["--exit-schedule", '{"1,0": [0]}'],
                         ["--elastic-timeout", "1"], np=4, min_np=4)
    assert run.returncode == 124, run.describe()
    assert ("Timed out waiting for the minimum number of slots: after 1 s (--elastic-timeout) "
            "only 2 workers can run, fewer than --min-np 4 (blacklisted: localhost)") in run.err
    assert time.monotonic() - started < 60


# F09: the workers of one host fail before their first rendezvous: the job starts on the
# other host.
def test_f09_host_fails_before_the_first_rendezvous(tmp_path):
    run = with_fixed_hosts(tmp_path, ["--fail-before-init-on", "127.0.0.1"], np=2, min_np=2)
    assert run.returncode == 0, run.describe()
    assert run.sizes() == [2, 2, 2], run.describe()
    assert "host 127.0.0.1 is blacklisted" in run.err
    assert [l["rendezvous"] for l in run.log] == [1, 1, 1]


# The workers of one host join no round (their inits fail there: HVD_GLOO_IFACE names no
# interface): each such round is given up at once, so the others do not wait out their
# rendezvous timeout (10 s here) and count it as a try of their own; after its third try the
# failing host is blacklisted and the job goes on without it. Until 2026-12-01 every survivor
# failed too, after three timeouts, and the job ended.
def test_a_host_whose_inits_fail_is_blacklisted_and_the_others_go_on(tmp_path):
    run = hvdrun(["-np", "2", "--min-np", "2", "-H", "localhost:2,127.0.0.1:1"],
                 ["--bad-iface-on", "127.0.0.1"], tmp_path,
                 env={"HVD_GLOO_TIMEOUT_SECONDS": "10"})
    assert run.returncode == 0, run.describe()
    assert run.sizes() == [2, 2, 2], run.describe()
    assert run.err.count("worker 2 (rank 2) could not join round") == 2, run.describe()
    assert "worker 2 (rank 2 of round 3) on 127.0.0.1 failed" in run.err, run.describe()
    assert "HVD_GLOO_IFACE 'nosuch0'" in run.err, run.describe()
    assert "host 127.0.0.1 is blacklisted" in run.err, run.describe()
    assert "host localhost is blacklisted" not in run.err, run.describe()
    # The survivors were told the rounds were given up, none waited out its 10 s.
    assert "waiting for data connections" not in run.err, run.describe()
    assert "did not arrive within" not in run.err, run.describe()


# F10: one worker of a host fails, the host's other worker is stuck (it never re-initializes):
# the host is drained, the others go on without waiting, the stuck one is stopped.
def test_f10_a_failed_slot_drains_its_host(tmp_path):
    run = with_fixed_hosts(tmp_path, ["--exit-schedule", '{"1,0": [0, 1]}',
                                      "--block-start-rank", "1"],
                           ["--grace-period-seconds", "1"])
    assert run.returncode == 0, run.describe()
    assert run.sizes() == [4, 2, 2], run.describe()
    assert "stopping worker 1: it is not needed any more" in run.err, run.describe()
    assert_state_recovered(run)


# F11 (Horovod #3852): a worker that exits 0 does not stop the others; they re-form without
# it (its host is not blacklisted) and finish.
def test_f11_one_worker_exiting_0_does_not_stop_the_others(tmp_path):
    run = with_discovery(tmp_path, ["--exit-schedule", '{"1,0": [3]}', "--exit-mode", "exit0"])
    assert run.returncode == 0, run.describe()
    assert run.sizes() == [4, 3, 3], run.describe()
    assert "exited 0: the job is finishing" in run.err
    assert "host 127.0.0.1 is blacklisted" not in run.err, run.describe()
    assert_state_recovered(run)


# F11 below --min-np (its default, -np): the others re-form at once and finish, instead of
# waiting --elastic-timeout for workers a finishing job never adds and failing with 124.
def test_f11_a_worker_exiting_0_below_min_np_lets_the_others_finish(tmp_path):
    run = with_fixed_hosts(tmp_path, ["--exit-schedule", '{"1,0": [3]}', "--exit-mode", "exit0"],
                           ["--elastic-timeout", "60"], np=4, min_np=4)
    assert run.returncode == 0, run.describe()
    assert run.sizes() == [4, 3, 3], run.describe()
    assert "3 worker(s) left, fewer than --min-np 4: they go on without waiting" in run.err
    assert_state_recovered(run)


# The only worker holding the state dies in its reset callback during the reset that admits a
# new worker, before the new round's sync: the job ends as Horovod's does when no host of the
# previous set remains, instead of going on from the joiner's initial state with exit 0.
def test_a_joiner_that_never_got_the_state_does_not_restart_training(tmp_path):
    script = discovery_script(tmp_path / "discover.sh", tmp_path / "log.jsonl",
                              [(0, ["localhost:1"]), (None, ["localhost:1", "127.0.0.1:1"])])
    run = hvdrun(["-np", "1", "--min-np", "1", "--host-discovery-script", script,
                  "--host-discovery-interval", "0.05"],
                 ["--wait-for-update-after", "0", "--die-in-reset-on-worker", "0"], tmp_path)
    assert run.returncode == 137, run.describe()
    assert "No hosts from previous set remaining, unable to broadcast state" in run.err, \
        run.describe()
    assert [l["round"] for l in run.log] == [1], run.describe()  # no epoch after the loss


# kill -9 of hvdrun while the survivors re-form: nothing of the job survives it.
def test_sigkill_of_hvdrun_mid_reset_leaves_nothing(tmp_path):
    require_hvdrun()
    marker = "hvd-elastic-e2e-" + uuid.uuid4().hex
    env = dict(os.environ, HVD_ELASTIC_TEST_MARKER=marker, OMP_NUM_THREADS="1")
    logfile, events = str(tmp_path / "log.jsonl"), str(tmp_path / "events.jsonl")
    proc = subprocess.Popen(
        [HVDRUN, "--verbose", "-np", "4", "--min-np", "2", "-H", ",".join(TWO_HOSTS), PYTHON,
         TRAIN, "--logfile", logfile, "--events", events, "--epochs", "50",
         "--exit-schedule", '{"1,0": [0]}'],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    try:
        deadline = time.monotonic() + 120
        err = b""
        while b"round 2:" not in err and time.monotonic() < deadline:
            line = proc.stderr.readline()
            if not line:
                break
            err += line
        assert b"round 2:" in err, err.decode(errors="replace")
        proc.kill()
        proc.wait(timeout=10)
        deadline = time.monotonic() + 15
        while live_marked(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not live_marked(marker), "processes left after hvdrun was killed"
    finally:
        proc.kill()
        kill_marked(marker)
