"""End-to-end: two hvdrun jobs on one machine at the same time (two users, a sweep) keep to
themselves: each job's collectives see only its own ranks' data, over shared memory and over
hvd's TCP, and one job failing (a rank SIGKILLed mid-run, whose leftovers its hvdrun removes)
leaves the other's results and segments alone.

Runs from a single pytest process that launches the build tree's hvdrun (HVD_TEST_HVDRUN).
"""
import os
import subprocess
import sys
import textwrap

import pytest

HVDRUN = os.environ.get("HVD_TEST_HVDRUN")

pytestmark = pytest.mark.skipif(not HVDRUN, reason="HVD_TEST_HVDRUN not set")

# Each job's ranks contribute values from their job's own base, so data crossing from one job
# to the other would change every sum. With "die" in argv, the last rank SIGKILLs itself
# halfway; the others then fail (that job's end), the other job must not notice. Every rank
# of the three jobs says it is up (a file beside its job's folder) and starts its steps only
# once all nine are: the jobs' collectives run at the same time, whatever their start-up took.
WORKER = textwrap.dedent("""
    import os, signal, sys, time
    import numpy as np
    import hvd.numpy as hvd

    base = float(sys.argv[1])
    hvd.init()
    n = hvd.size()
    shared = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    open(os.path.join(shared, "up.%g.%d" % (base, hvd.rank())), "w").close()
    deadline = time.monotonic() + 120
    while sum(e.startswith("up.") for e in os.listdir(shared)) < 9:
        assert time.monotonic() < deadline, "the other jobs never started"
        time.sleep(0.01)
    for i in range(400):
        if i == 200 and "die" in sys.argv and hvd.rank() == n - 1:
            os.kill(os.getpid(), signal.SIGKILL)
        got = hvd.allreduce(np.full((1000,), base + hvd.rank() + i), op=hvd.Sum,
                            name="t%d" % (i % 7))
        want = sum(base + r + i for r in range(n))
        assert (got == want).all(), (base, i, got[0], want)
        gathered = hvd.allgather(np.array([base + hvd.rank() + i]), name="g%d" % (i % 3))
        assert gathered.tolist() == [base + r + i for r in range(n)], gathered
    print("job %g rank %d: 400 steps ok" % (base, hvd.rank()), flush=True)
""")


def shm_entries():
    return sorted(e for e in os.listdir("/dev/shm") if e.startswith("hvd-"))


def start(tmp_path, base, hosts, *extra):
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    return subprocess.Popen([HVDRUN, "-np", "3", "-H", hosts, sys.executable, str(script),
                             str(base), *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize("hosts", ["localhost:3", "localhost:1,127.0.0.1:1,127.0.0.2:1"])
def test_two_jobs_at_once_keep_their_data_apart_and_a_failing_one_leaves_the_other_alone(
        tmp_path, hosts):
    before = shm_entries()
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "c").mkdir()
    a = start(tmp_path / "a", 1000, hosts)
    b = start(tmp_path / "b", 5000, hosts)
    c = start(tmp_path / "c", 9000, hosts, "die")
    results = {}
    for name, proc in (("a", a), ("b", b), ("c", c)):
        try:
            out, err = proc.communicate(timeout=240)
        except subprocess.TimeoutExpired:
            for p in (a, b, c):
                p.kill()
            raise
        results[name] = (proc.returncode, out, err)
    for name, base in (("a", 1000), ("b", 5000)):
        code, out, err = results[name]
        assert code == 0, (name, err[-3000:])
        for r in range(3):
            assert "job %d rank %d: 400 steps ok" % (base, r) in out, (name, out, err[-3000:])
    code, out, err = results["c"]
    assert code == 137, err[-3000:]
    assert "rank 2 on" in err and "failed first: SIGKILL (signal 9)" in err, err[-3000:]
    assert shm_entries() == before
