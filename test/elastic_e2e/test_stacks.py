"""Where is each worker of an elastic job? The stall inspector naming a rank that never
submitted its tensor, and SIGQUIT to hvdrun, make the workers print their Python stacks (the
rank mapped to the worker of the current round); the job goes on."""
import os
import re
import signal
import subprocess
import sys

from elastic_harness import HVDRUN, PYTHON, require_hvdrun

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "launcher_e2e"))
from hvdrun_harness import wait_for  # noqa: E402

# The Python tests' stack worker: rank 1 waits outside hvd for "go", the others in an allreduce.
STACK_WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python",
                            "stack_worker.py")


def test_the_stall_inspector_and_sigquit_ask_workers_for_their_stacks(tmp_path):
    require_hvdrun()
    out_path, err_path = tmp_path / "out", tmp_path / "err"
    env = dict(os.environ, HOROVOD_STALL_CHECK_TIME_SECONDS="1")
    with open(out_path, "w") as out, open(err_path, "w") as err:
        proc = subprocess.Popen([HVDRUN, "-np", "2", "--min-np", "2", "-H",
                                 "localhost:1,127.0.0.1:1", PYTHON, STACK_WORKER, str(tmp_path)],
                                stdout=out, stderr=err, env=env, start_new_session=True)
    try:
        wait_for(lambda: "named by the stall inspector" in err_path.read_text(), 60,
                 "the stall inspector's request")
        wait_for(lambda: err_path.read_text().count("in stuck_loading_data") == 1, 30,
                 "worker 1's stack")
        proc.send_signal(signal.SIGQUIT)
        wait_for(lambda: err_path.read_text().count("in stuck_loading_data") == 2, 30,
                 "worker 1's stack again")
        wait_for(lambda: "in allreduce" in err_path.read_text(), 30, "worker 0's stack")
    finally:
        (tmp_path / "go").touch()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    out, err = out_path.read_text(), err_path.read_text()
    assert proc.returncode == 0, err
    # Each worker checked its allreduce's sum before it said so.
    assert sorted(l for l in out.splitlines() if "finished" in l) == [
        "[0]<stdout>:finished 0", "[1]<stdout>:finished 1"], out + err
    asked = [line for line in err.splitlines() if line.startswith("hvdrun: asking")]
    assert asked == [
        "hvdrun: asking worker 1 for its Python stacks (named by the stall inspector: rank 1 is "
        "worker 1); the job goes on",
        "hvdrun: asking workers 0, 1 for their Python stacks (hvdrun received SIGQUIT); the job "
        "goes on"], err
    assert len(re.findall(r"^\[0\]<stderr>:Missing ranks:", err, re.M)) >= 1, err


def test_past_the_timeout_every_worker_prints_its_stack_and_hvdrun_exits_124(tmp_path):
    require_hvdrun()
    # no "go": worker 1 never arrives
    result = subprocess.run([HVDRUN, "-np", "2", "--min-np", "2", "-H", "localhost:1,127.0.0.1:1",
                             "--timeout", "10", PYTHON, STACK_WORKER, str(tmp_path)],
                            capture_output=True, text=True, timeout=120, start_new_session=True)
    err = result.stderr
    assert result.returncode == 124, err
    assert "hvdrun: the job ran past --timeout (10 s): every worker prints its Python stacks, " \
           "then the job is stopped" in err, err
    assert re.search(r"^\[1\]<stderr>:.* in stuck_loading_data$", err, re.M), err
    assert re.search(r"^\[0\]<stderr>:.* in allreduce$", err, re.M), err
    assert "hvdrun: elastic job stopped: the job ran past --timeout (10 s); hvdrun exits 124" in \
        err, err
