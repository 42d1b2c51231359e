"""hvdrun's job control: exit codes, fail-fast, signals, cleanup, bad input, --dry-run."""
import os
import re
import signal
import time

import pytest

from hvdrun_harness import (HVDRUN, assert_no_survivors, kill_leftovers, python3_without_torch,
                            python_rank, run, start, unique_marker, wait_for)
from memory_cgroup import memory_cgroup

# A rank that records that it is up (a file named after its rank in argv[-1]) and then waits;
# with "ignore" in argv it also ignores SIGTERM.
WAITER = r"""
import os, signal, sys, time
if "ignore" in sys.argv:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
d = sys.argv[-1]
open(os.path.join(d, "up.%s" % os.environ["HVD_RANK"]), "w").close()
time.sleep(120)
"""


def all_up(path, n):
    return lambda: all((path / ("up.%d" % r)).exists() for r in range(n))


def signal_and_wait(proc, signo):
    """Sends hvdrun `signo` and waits for it to exit (30 s); (its stderr, the seconds taken)."""
    sent = time.monotonic()
    proc.send_signal(signo)
    _, err = proc.communicate(timeout=30)
    return err, time.monotonic() - sent


def end(proc, marker):
    """hvdrun and its ranks are gone, whatever the test saw."""
    proc.kill()
    proc.wait(timeout=30)
    kill_leftovers(marker)


def test_first_failing_rank_code_is_hvdruns_code_and_nothing_survives(tmp_path):
    marker = unique_marker()
    script = r"""
import os, sys, time
if os.environ["HVD_RANK"] == "2":
    print("about to fail", file=sys.stderr)
    print("reason: rank 2 is broken", file=sys.stderr)
    sys.exit(3)
time.sleep(120)
"""
    started = time.monotonic()
    try:
        result = run(["-np", "4", "-H", "localhost:4"] + python_rank(script, marker), timeout=60)
    finally:
        kill_leftovers(marker)
    assert time.monotonic() - started < 30
    assert result.returncode == 3
    err = result.stderr.decode()
    assert "rank 2 on localhost failed first: exit code 3; hvdrun exits 3" in err, err
    assert "reason: rank 2 is broken" in err.split("last stderr lines of rank 2:")[1]
    assert "stopped by hvdrun" in err
    assert_no_survivors(marker)


# A plain script (torch.distributed, or one failing before hvd.init()) reports nothing to hvdrun:
# the headline takes the exception from the end of the rank's traceback.
PLAIN_TRACEBACK = r"""
import os, time
def load(batch):
    return {"step 1": 1}[batch]
if os.environ["RANK"] == "1":
    load("step 2")
time.sleep(120)
"""
# torch 2.x writes "[rankN]: " before each line of a rank's traceback, and its warning at exit
# after it; NCCL's messages run over several lines (as its refusal of two ranks on one GPU read on
# the GPU machine). The exception line is 7 lines from the end, past the 5 shown.
TORCH2_TRACEBACK = r"""
import os, sys, time, traceback
def hook(kind, value, tb):
    for line in "".join(traceback.format_exception(kind, value, tb)).splitlines():
        sys.stderr.write("[rank1]: " + line + "\n")
    for i in range(3):
        sys.stderr.write("[rank1]:[W1128 15:18:07.525993852 ProcessGroupNCCL.cpp:1575] Warning: "
                         "destroy_process_group() was not called before program exit\n")
sys.excepthook = hook
if os.environ["RANK"] == "1":
    raise RuntimeError("NCCL error in: NCCLUtils.cpp:93, invalid usage\nncclInvalidUsage: this "
                       "usually reflects invalid usage\nLast error:\nDuplicate GPU detected")
time.sleep(120)
"""


@pytest.mark.parametrize("script, exception", [
    (PLAIN_TRACEBACK, "KeyError: 'step 2'"),
    (TORCH2_TRACEBACK, "RuntimeError: NCCL error in: NCCLUtils.cpp:93, invalid usage"),
], ids=["plain", "torch2_prefix_and_message_of_several_lines"])
def test_a_python_rank_without_hvd_is_named_with_the_exception_it_died_of(script, exception):
    marker = unique_marker()
    try:
        result = run(["-np", "2"] + python_rank(script, marker), timeout=60)
    finally:
        kill_leftovers(marker)
    assert result.returncode == 1
    err = result.stderr.decode()
    assert f"rank 1 on localhost failed first: exit code 1: {exception}; hvdrun exits 1" \
        in err, err


def test_rank_killed_by_sigkill_gives_137_and_signal_name():
    result = run(["-np", "2", "sh", "-c", 'if [ "$HVD_RANK" = 1 ]; then kill -9 $$; fi; sleep 60'])
    assert result.returncode == 137
    assert "rank 1 on localhost failed first: SIGKILL (signal 9); hvdrun exits 137" in \
        result.stderr.decode()


def test_a_stopped_rank_gets_the_sigterm_without_waiting_out_the_grace_period(tmp_path):
    # Rank 1 stops itself (as SIGSTOP or a ^Z would); once it is stopped, rank 0 fails. hvdrun's
    # SIGTERM is followed by SIGCONT, so rank 1 ends by the SIGTERM: without the SIGCONT it
    # would hold it pending until the SIGKILL 30 s later.
    flag = tmp_path / "pid"
    script = (
        'if [ "$HVD_RANK" = 1 ]; then echo $$ > %(f)s.tmp; mv %(f)s.tmp %(f)s; kill -STOP $$; '
        'sleep 60; fi; '
        'while [ ! -f %(f)s ]; do sleep 0.01; done; '
        'while ! grep -q "^[0-9]* ([^)]*) T" /proc/$(cat %(f)s)/stat; do sleep 0.01; done; '
        'exit 3' % {"f": flag})
    result = run(["-np", "2", "--grace-period-seconds", "30", "sh", "-c", script], timeout=120)
    err = result.stderr.decode()
    assert result.returncode == 3, err
    assert "1     localhost  SIGTERM (signal 15), stopped by hvdrun" in err, err


def test_rank_killed_by_the_oom_killer_is_said_to_be_out_of_memory():
    # A real OOM kill: rank 1 joins a memory cgroup of 64 MiB and reads 256 MiB into one buffer.
    # hvdrun reads the kernel's record of it (launcher/local/oom_kills.h).
    with memory_cgroup(64 << 20) as procs:
        result = run(["-np", "2", "sh", "-c",
                      'if [ "$HVD_RANK" = 1 ]; then echo $$ > %s; '
                      'exec dd if=/dev/zero of=/dev/null bs=256M count=1; fi; sleep 60' % procs])
    err = result.stderr.decode()
    assert result.returncode == 137, err
    assert ("rank 1 on localhost failed first: SIGKILL (signal 9): killed by the kernel's OOM "
            "killer (") in err, err
    assert "; dd, anon-rss " in err, err


def test_sigint_stops_ranks_that_ignore_sigterm_after_the_grace_period(tmp_path):
    marker = unique_marker()
    proc = start(["--grace-period-seconds", "1", "-np", "3"] +
                 python_rank(WAITER, marker) + ["ignore", str(tmp_path)])
    try:
        wait_for(all_up(tmp_path, 3), 30, "all ranks to start")
        err, elapsed = signal_and_wait(proc, signal.SIGINT)
    finally:
        end(proc, marker)
    assert proc.returncode == 130, err.decode()
    assert 0.9 <= elapsed < 15, elapsed
    assert "received SIGINT" in err.decode()
    assert_no_survivors(marker, timeout=1)


# hvdrun's stdout is a pipe whose reader has stopped reading (a `| less` left at a page): the
# ranks' lines wait for it, and Ctrl-C still stops the job at once, exiting 130, with
# hvdrun's own line on its stderr. Until 2026-12-02 hvdrun's event loop was blocked writing
# to the full pipe: the signal waited for the reader, and once it read, a second signal or
# the closed pipe killed every rank (exit 141).
def test_ctrl_c_stops_the_job_while_the_console_reader_is_stalled(tmp_path):
    import fcntl
    import termios
    import array
    marker = unique_marker()
    chatty = WAITER.replace("time.sleep(120)",
                            "while True:\n    print('x' * 200, flush=True)")
    read_end, write_end = os.pipe()
    proc = start(["-np", "2"] + python_rank(chatty, marker) + [str(tmp_path)], stdout=write_end)
    os.close(write_end)
    try:
        wait_for(all_up(tmp_path, 2), 30, "all ranks to start")

        def pipe_full():
            held = array.array("i", [0])
            fcntl.ioctl(read_end, termios.FIONREAD, held)
            return held[0] >= 60000
        wait_for(pipe_full, 30, "the ranks' lines to fill the pipe nobody reads")
        err, elapsed = signal_and_wait(proc, signal.SIGINT)
    finally:
        end(proc, marker)
        os.close(read_end)
    assert proc.returncode == 130, err.decode()
    assert elapsed < 15, elapsed
    assert "received SIGINT, stopping the job" in err.decode(), err.decode()
    assert_no_survivors(marker, timeout=1)


def test_sigterm_to_hvdrun_exits_143(tmp_path):
    marker = unique_marker()
    proc = start(["-np", "2"] + python_rank(WAITER, marker) + [str(tmp_path)])
    try:
        wait_for(all_up(tmp_path, 2), 30, "all ranks to start")
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
    finally:
        proc.kill()
        proc.wait(timeout=30)
        kill_leftovers(marker)
    assert proc.returncode == 143
    assert_no_survivors(marker, timeout=1)


def test_hvdruns_own_failure_mid_job_exits_70_not_0(tmp_path):
    # hvdrun's poll of its ranks fails (here its descriptor limit lowered under it, so poll()
    # refuses its set: EINVAL): it kills every rank. None of them failed first, so until
    # 2026-12-01 hvdrun exited 0 with no summary.
    import shutil
    import subprocess
    if shutil.which("prlimit") is None:
        pytest.skip("prlimit (util-linux) is not installed")
    # Ranks that print now and then, so that hvdrun's poll wakes and runs again after the limit
    # (a blocked poll() is not re-checked against it).
    ticker = WAITER.replace("time.sleep(120)",
                            "for _ in range(400):\n    print('tick', flush=True)\n    time.sleep(0.3)")
    marker = unique_marker()
    proc = start(["-np", "4"] + python_rank(ticker, marker) + [str(tmp_path)])
    try:
        wait_for(all_up(tmp_path, 4), 30, "all ranks to start")
        subprocess.run(["prlimit", "--pid", str(proc.pid), "--nofile=3:3"], check=True,
                       timeout=10)
        _, err = proc.communicate(timeout=60)
        err = err.decode(errors="replace")
    finally:
        proc.kill()
        proc.wait(timeout=30)
        kill_leftovers(marker)
    assert proc.returncode == 70, err
    assert "poll failed" in err and "hvdrun exits 70" in err, err
    assert_no_survivors(marker, timeout=5)


def test_hvdrun_killed_with_sigkill_leaves_no_rank(tmp_path):
    marker = unique_marker()
    proc = start(["-np", "3"] + python_rank(WAITER, marker) + ["ignore", str(tmp_path)])
    try:
        wait_for(all_up(tmp_path, 3), 30, "all ranks to start")
        proc.kill()
        proc.wait(timeout=30)
        assert_no_survivors(marker, timeout=10)
    finally:
        kill_leftovers(marker)


def test_hvdrun_killed_with_sigkill_leaves_no_grandchild(tmp_path):
    # The rank is a shell whose child does the waiting: PDEATHSIG alone would miss it.
    marker = unique_marker()
    waiter = " ".join("'%s'" % a for a in python_rank(WAITER, marker) + ["ignore", str(tmp_path)])
    proc = start(["-np", "2", "sh", "-c", waiter + "; true"])
    try:
        wait_for(all_up(tmp_path, 2), 30, "all ranks to start")
        proc.kill()
        proc.wait(timeout=30)
        assert_no_survivors(marker, timeout=10)
    finally:
        kill_leftovers(marker)


def test_rank_crashing_with_sigsegv_gives_139():
    result = run(["-np", "2", "sh", "-c", 'if [ "$HVD_RANK" = 0 ]; then kill -SEGV $$; fi; sleep 60'])
    assert result.returncode == 139
    assert "SIGSEGV" in result.stderr.decode()


def test_closed_output_pipe_stops_the_job_with_141(tmp_path):
    marker = unique_marker()
    script = "import sys\nwhile True:\n    print('x' * 100)"
    reader_r, reader_w = os.pipe()
    proc = start(["-np", "2"] + python_rank(script, marker), stdout=reader_w)
    os.close(reader_w)
    try:
        os.read(reader_r, 100)  # the job is producing output; now hang up on it
        os.close(reader_r)
        proc.wait(timeout=30)
        err = proc.stderr.read().decode()
    finally:
        proc.kill()
        proc.wait(timeout=30)
        kill_leftovers(marker)
    assert proc.returncode == 141, err
    assert "output was closed" in err
    assert_no_survivors(marker, timeout=1)


def test_missing_program_exits_127_naming_it():
    result = run(["-np", "2", "hvd-e2e-no-such-program", "--flag"])
    assert result.returncode == 127
    assert "hvd-e2e-no-such-program" in result.stderr.decode()


def test_a_script_given_as_the_program_is_told_how_to_run_it(tmp_path):
    # The first thing a Horovod user may type: the script without its interpreter
    (tmp_path / "train.py").write_text("print('trained')\n")
    bare = run(["-np", "2", "train.py"], cwd=tmp_path)
    assert bare.returncode == 127
    assert ("cannot execute 'train.py': command not found in PATH (train.py is in the working "
            "directory: run it as /usr/bin/python3 train.py)") in bare.stderr.decode()
    by_path = run(["-np", "2", "./train.py"], cwd=tmp_path)  # not executable
    assert by_path.returncode == 126
    assert ("cannot execute './train.py': Permission denied (a Python script without execute "
            "permission: run it as /usr/bin/python3 ./train.py)") in by_path.stderr.decode()


def assert_hint(err, text):
    # The ranks named are those whose error line reached hvdrun before it stopped them: the
    # first to fail, or both
    assert re.search(r"^hint: (rank 0|rank 1|ranks 0, 1): " + re.escape(text), err, re.M), err


def test_a_python_without_torch_is_pointed_at_debians_interpreter(tmp_path):
    # Given a python3 first on PATH that is not Debian's, without torch
    shim, env = python3_without_torch(tmp_path)
    # When a torch script runs on it
    result = run(["-np", "2", "python3", "-c", "import torch"], env=env)
    # Then the job fails, and the hint names the interpreter the ranks ran and the one to use
    err = result.stderr.decode()
    assert result.returncode == 1, err
    assert_hint(err, "No module named 'torch'. Debian installs python3-torch for "
                "/usr/bin/python3 alone, and the ranks run `python3` (%s on hvdrun's PATH): "
                "give /usr/bin/python3 in its place." % shim)


def test_a_python_without_hvd_is_told_where_this_hvdruns_package_is():
    # Given ranks whose interpreter cannot see hvd's package (-S: no site folders, and the
    # test's PYTHONPATH dropped)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    result = run(["-np", "2", "/usr/bin/python3", "-S", "-c", "import horovod.torch"], env=env)
    err = result.stderr.decode()
    assert result.returncode == 1, err
    # Then the hint gives the PYTHONPATH that would find the package of this build tree
    package = os.path.realpath(os.path.join(os.path.dirname(HVDRUN), "..", "python"))
    assert_hint(err, "No module named 'horovod'. hvd provides it; this hvdrun's package is in "
                "its build tree, %s, which Python does not search: run PYTHONPATH=%s hvdrun ..."
                % (package, package))


def test_more_processes_than_slots_is_a_usage_error_naming_both_numbers():
    result = run(["-np", "5", "-H", "localhost:2", "true"])
    assert result.returncode == 64
    err = result.stderr.decode()
    assert "5" in err and "2" in err, err


def test_unreachable_remote_host_fails_before_anything_starts(tmp_path):
    flag = tmp_path / "ran"
    result = run(["-np", "2", "-H", "localhost:1,192.0.2.1:1", "--start-timeout", "3",
                  "touch", str(flag)])
    assert result.returncode == 69
    err = result.stderr.decode()
    assert "\n  192.0.2.1: " in err and "remote hosts; nothing was started" in err, err
    assert not flag.exists()


def test_elastic_usage_errors_start_nothing(tmp_path):
    flag = tmp_path / "ran"
    # horovodrun (argparse) reads "--elastic -np 2" as "--elastic-timeout -np 2"; not here.
    result = run(["--elastic-t", "5", "-np", "1", "touch", str(flag)])
    assert result.returncode == 64
    assert "unrecognized argument: --elastic-t (long options are never abbreviated; did you " \
           "mean --elastic-timeout?)" in result.stderr.decode()
    assert not flag.exists()
    # An elastic-only flag in a static job is ignored with a warning, as horovodrun ignores it
    result = run(["--max-np", "2", "-np", "1", "touch", str(flag)])
    assert result.returncode == 0, result.stderr.decode()
    assert "--max-np applies to elastic jobs only; ignored in this static job (add --min-np N, " \
           "--host-discovery-script SCRIPT or --elastic for an elastic one)" in \
        result.stderr.decode()
    assert flag.exists()


def test_elastic_dry_run_prints_the_elastic_plan(tmp_path):
    flag = tmp_path / "ran"
    result = run(["--dry-run", "--elastic", "-np", "2", "--max-np", "3", "-H",
                  "localhost:2,127.0.0.1:2", "touch", str(flag)])
    assert result.returncode == 0, result.stderr.decode()
    out = result.stdout.decode()
    assert "elastic job (hvdrun's elastic driver)" in out
    assert "maximum:      3 processes (--max-np)" in out
    assert "fixed: localhost:2,127.0.0.1:2 (-H)" in out
    assert "2     127.0.0.1  0" in out, out  # the first plan fills up to --max-np
    assert not flag.exists()


def test_elastic_print_config_shows_the_elastic_settings_and_starts_nothing(tmp_path):
    flag = tmp_path / "ran"
    result = run(["--print-config", "--min-np", "1", "-np", "2", "--max-np", "4",
                  "--elastic-timeout", "42", "-H", "localhost:4", "touch", str(flag)])
    assert result.returncode == 0, result.stderr.decode()
    out = result.stdout.decode()
    assert "elastic job (hvdrun's elastic driver)" in out, out
    assert "minimum:      1 process (--min-np); fewer for 42 s (--elastic-timeout)" in out, out
    assert "maximum:      4 processes (--max-np)" in out, out
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line.startswith("HVD_")}
    assert rows["HVD_ELASTIC"][2:4] == ["1", "command"], rows["HVD_ELASTIC"]
    assert rows["HVD_ELASTIC_TIMEOUT"][2] == "42", rows["HVD_ELASTIC_TIMEOUT"]
    assert not flag.exists()


def test_dry_run_prints_plan_and_commands_and_starts_nothing(tmp_path):
    flag = tmp_path / "ran"
    result = run(["--dry-run", "-np", "3", "-H", "localhost:2,127.0.0.1:1",
                  "touch", str(flag)])
    assert result.returncode == 0, result.stderr.decode()
    out = result.stdout.decode()
    assert "rank  host" in out and "local_rank" in out and "cross_size" in out
    rows = [line.split() for line in out.splitlines() if line[:1].isdigit()]
    assert rows == [["0", "localhost", "0", "2", "0", "2"],
                    ["1", "localhost", "1", "2", "0", "1"],
                    ["2", "127.0.0.1", "0", "1", "1", "2"]]
    assert out.count("command: touch " + str(flag)) == 2
    assert "HVD_RANK=2" in out and "MASTER_ADDR=127.0.0.1" in out
    assert "HVD_SECRET_FD='<descriptor number" in out
    assert not flag.exists()


# The dry run shows the environment the ranks really get: what the launch adds for the network
# interfaces and the threads, and nothing hvdrun's own environment overrides. Until 2026-12-01
# it listed hvdrun's knob variables only: HVD_CPU_OPERATIONS=auto while the ranks got the tcp
# exported to hvdrun, and no interface variables.
def test_dry_run_shows_the_environment_the_ranks_get():
    env = dict(os.environ, HVD_CPU_OPERATIONS="tcp")
    env.pop("OMP_NUM_THREADS", None)
    result = run(["--dry-run", "-np", "1", "--network-interface", "lo", "true"], env=env)
    assert result.returncode == 0, result.stderr.decode()
    out = result.stdout.decode()
    for line in ["HVD_GLOO_IFACE=lo", "NCCL_SOCKET_IFNAME=lo", "GLOO_SOCKET_IFNAME=lo",
                 "NCCL_HOSTID=localhost", "OMP_NUM_THREADS="]:
        assert "    " + line in out, out
    assert "CPU_OPERATIONS=auto" not in out, out


# Ctrl-C (or a scheduler's SIGTERM) while hvd-agent starts on the remote hosts: hvdrun stops at
# once with 128+N. Nothing read the signals in that phase: they waited out --start-timeout and
# the failed start-up then exited 69 (until 2026-12-01). 192.0.2.1 (TEST-NET-1) is no host of
# this machine; its SSH connection waits unanswered, or fails at once where there is no route.
@pytest.mark.parametrize("signo", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_the_remote_start_up_stops_hvdrun_at_once(signo):
    proc = start(["--verbose", "-np", "1", "-H", "192.0.2.1:1", "--start-timeout", "30", "true"])
    try:
        deadline = time.monotonic() + 20
        said = b""
        while b"Checking ssh on all remote hosts" not in said and time.monotonic() < deadline:
            line = proc.stderr.readline()
            if not line:
                break
            said += line
        if b"Checking ssh on all remote hosts" not in said:
            pytest.fail("hvdrun did not reach the remote start-up: " + said.decode())
        time.sleep(0.2)  # into the connection attempt (a signal before it is the same case)
        if proc.poll() is not None:
            pytest.skip("the connection to 192.0.2.1 failed at once here (no route)")
        signalled = time.monotonic()
        proc.send_signal(signo)
        code = proc.wait(timeout=10)
        err = said.decode() + proc.stderr.read().decode()
        assert code == 128 + signo, err
        assert time.monotonic() - signalled < 5, err
        assert ("received %s while starting hvd-agent on the remote hosts; no rank was started"
                % signal.Signals(signo).name) in err, err
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
