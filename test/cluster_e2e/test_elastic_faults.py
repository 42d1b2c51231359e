"""Host-level faults of an elastic job on the real SSH hosts of scripts/cluster/up.sh 2: a host
whose link is cut comes back once it is restored (twice in one job), a host whose processes
are all killed or whose hvd-agent alone is killed is admitted again through a new agent
session (also when its sshd refused for a while), a healthy host drained from discovery
leaves without being blacklisted and comes back, a new host joins, losing every host ends the
job with a clear error, and a discovery script that fails, hangs, prints garbage or names an
unresolvable host mid-job changes nothing. Each job asserts its outcome, the sizes it went
through, that every round resumed from the last commit, and that nothing is left on any host.
"""
import json
import os
import queue
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from elastic_fault_job import (FAST, FaultJob, agents_on, job_processes, kill_host,  # noqa
                               link, start_sshd, wait)

BOTH = ["hvd-h1:2", "hvd-h2:2"]
ELASTIC_4 = ["-np", "4", "--min-np", "2", "--max-np", "4"] + FAST


def test_a_flapping_host_rejoins_after_each_cut(tmp_path):
    # Given 4 workers on two hosts, when hvd-h2's link is cut (the first time discovery drops
    # it too, the second time it stays listed) and restored, twice,
    job = FaultJob(tmp_path, ELASTIC_4, hosts=BOTH)
    try:
        job.wait_for_size(4)
        for still_listed in (False, True):
            cut = time.time()
            link("hvd-h2", "down")
            if not still_listed:
                job.set_hosts(["hvd-h1:2"])
            job.wait_for_size(2, after=cut)
            restored = time.time()
            link("hvd-h2", "up")
            job.set_hosts(BOTH)
            job.wait_for_size(4, after=restored)
        # then the job goes back to 4 workers each time, through a new agent session
        assert job.finish() == 0, job.describe()
    finally:
        link("hvd-h2", "up")
        job.close()
    assert job.sizes() == [4, 2, 4, 2, 4], job.describe()
    assert job.err.count("host hvd-h2 lost: no sign of life") >= 2, job.describe()
    assert job.err.count("hvd-agent running on hvd-h2") >= 3, job.describe()
    assert "session on hvd-h2 has ended" not in job.err, job.describe()
    job.assert_resumed_from_last_commit()
    job.assert_nothing_left()


def test_a_new_host_joins_and_a_drained_host_leaves_unblamed_and_comes_back(tmp_path):
    # Given 2 workers on hvd-h1, when discovery adds hvd-h2 (never in the job), then drops it
    # while it is healthy, then lists it again,
    job = FaultJob(tmp_path, ["-np", "2", "--min-np", "2", "--max-np", "4"] + FAST,
                   hosts=["hvd-h1:2"])
    try:
        job.wait_for_size(2)
        job.wait_for_size(4, after=job.set_hosts(BOTH))
        drained = job.set_hosts(["hvd-h1:2"])
        job.wait_for_size(2, after=drained)
        # then the drained host keeps nothing of the job (its agent session is closed) ...
        wait(lambda: not job_processes(["hvd-h2"]), 20,
             "nothing left on the drained hvd-h2 (%s)" % job_processes(["hvd-h2"]))
        job.wait_for_size(4, after=job.set_hosts(BOTH))
        assert job.finish() == 0, job.describe()
    finally:
        job.close()
    # ... is not blamed, and comes back through a new session.
    assert job.sizes() == [2, 4, 2, 4], job.describe()
    assert "removing worker 2 from the job: host hvd-h2 is no longer available" in job.err
    assert "host hvd-h2 has left the job" in job.err, job.describe()
    assert "host hvd-h2 is blacklisted" not in job.err and " failed:" not in job.err, job.describe()
    assert job.err.count("hvd-agent running on hvd-h2") == 2, job.describe()
    job.assert_resumed_from_last_commit()
    job.assert_nothing_left()


def test_a_killed_agent_and_a_crashed_host_whose_sshd_refuses_come_back(tmp_path):
    job = FaultJob(tmp_path, ELASTIC_4, hosts=BOTH)
    try:
        job.wait_for_size(4)
        # When only hvd-h1's hvd-agent is SIGKILLed (its workers, rank 0 among them, die
        # with it), the workers on hvd-h2 go on and hvd-h1 comes back through a new agent.
        killed = time.time()
        for pid in agents_on("hvd-h1"):
            os.kill(pid, signal.SIGKILL)
        job.wait_for_size(2, after=killed)
        job.wait_for_size(4, after=job.wait_for_err("hvd-agent running on hvd-h1", killed))
        # When every process of hvd-h2 is SIGKILLed, its sshd listener included (a crash),
        # hvd-h2 is refused while sshd is down and comes back once it runs again.
        crashed = time.time()
        kill_host("hvd-h2")
        job.wait_for_size(2, after=crashed)
        job.wait_for_err("cannot reach host hvd-h2", after=crashed)
        start_sshd("hvd-h2")
        job.wait_for_size(4, after=job.wait_for_err("hvd-agent running on hvd-h2", crashed))
        assert job.finish() == 0, job.describe()
    finally:
        start_sshd("hvd-h2", if_down=True)
        job.close()
    assert job.sizes() == [4, 2, 4, 2, 4], job.describe()
    rounds = job.rounds()
    assert rounds[1][2] == "hvd-h2" and rounds[3][2] == "hvd-h1", job.describe()
    assert "lost hvd-agent on hvd-h1" in job.err, job.describe()
    assert "refused" in job.err, job.describe()
    job.assert_resumed_from_last_commit()
    job.assert_nothing_left()


def test_losing_every_host_ends_the_job_with_a_clear_error(tmp_path):
    job = FaultJob(tmp_path, ELASTIC_4, hosts=BOTH)
    try:
        job.wait_for_size(4)
        cut = time.time()
        link("hvd-h1", "down")
        link("hvd-h2", "down")
        code = job.wait_exit(timeout=30)
        took = time.time() - cut
    finally:
        link("hvd-h1", "up")
        link("hvd-h2", "up")
        job.close()
    print("every host lost: hvdrun exited %d %.1f s after the cut" % (code, took))
    assert code == 255, job.describe()
    assert took < 10, job.describe()
    assert "every host of round 1 was lost (hvd-h1, hvd-h2): no worker is left to go on; the " \
        "first: worker " in job.err, job.describe()
    assert "no sign of life from its hvd-agent for 2 s" in job.err.split("was lost")[-1], \
        job.describe()
    assert "starting worker 4" not in job.err, job.describe()
    job.assert_nothing_left()


DISCOVERY = """#!/bin/sh
case $(cat %(mode)s) in
fail) echo 'scheduler unreachable' >&2; exit 3 ;;
hang) sleep 30 ;;
garbage) echo 'hvd-h1:x' ;;
unresolvable) cat %(hosts)s; echo nosuchhost.invalid:1 ;;
*) cat %(hosts)s ;;
esac
"""


def test_a_misbehaving_discovery_script_mid_job_changes_nothing(tmp_path):
    # Given 4 workers on both hosts and a discovery script that, in turn, fails, hangs, prints
    # garbage and names a host that does not resolve,
    mode = tmp_path / "mode"
    mode.write_text("good")
    script = tmp_path / "discover-modes.sh"
    script.write_text(DISCOVERY % {"mode": mode, "hosts": tmp_path / "hosts"})
    script.chmod(0o755)
    (tmp_path / "hosts").write_text("hvd-h1:2\nhvd-h2:2\n")
    job = FaultJob(tmp_path, ["-np", "4", "--min-np", "2", "--max-np", "5"] + FAST +
                   ["--host-discovery-script", str(script)])
    try:
        job.wait_for_size(4)
        for phase, warning in [("fail", "exited with code 3; its stderr: scheduler unreachable"),
                               ("hang", "did not finish within 1 s and was killed"),
                               ("garbage", "slot count 'x' is not a positive integer"),
                               ("unresolvable", "cannot reach host nosuchhost.invalid")]:
            mode.write_text(phase)
            job.wait_for_size(4, after=job.wait_for_err(warning))
        mode.write_text("good")
        assert job.finish() == 0, job.describe()
    finally:
        job.close()
    # then the job trains on at 4 workers in its first round throughout.
    assert [r[0] for r in job.rounds()] == [1], job.describe()
    assert "the last good host set stays in force" in job.err, job.describe()
    assert "host nosuchhost.invalid is blacklisted" in job.err, job.describe()
    job.assert_nothing_left()


EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples",
                       "torch_elastic.py")


class EpochFifo:
    """examples/torch_elastic.py's --epoch-log as a FIFO: rank 0 blocks at the end of each epoch
    until take() reads its line, so the test decides when training may go on (a new worker
    imports torch for seconds: without the gate the job could end before it joins)."""

    def __init__(self, path):
        self.path = path
        os.mkfifo(path)
        self.lines = queue.Queue()
        self.go = threading.Semaphore(0)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while True:
            self.go.acquire()
            with open(self.path) as f:  # blocks until rank 0 opens it
                for line in f.read().splitlines():
                    self.lines.put(json.loads(line))

    def take(self, timeout=90):
        self.go.release()
        return self.lines.get(timeout=timeout)

    def close(self):
        try:  # frees the reader from its open() when no writer came
            os.close(os.open(self.path, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass


def test_the_elastic_example_trains_through_a_host_cut_and_return_to_4_ranks(tmp_path):
    job = FaultJob(tmp_path, ELASTIC_4, hosts=BOTH, worker=[
        EXAMPLE, "--epochs", "6", "--train-samples", "4096", "--test-samples", "1024",
        "--epoch-log", str(tmp_path / "epochs.fifo"), "--min-accuracy", "0.85"])
    fifo = EpochFifo(str(tmp_path / "epochs.fifo"))
    sizes = []
    try:
        sizes.append(fifo.take()["size"])
        # When hvd-h2 is cut off (and leaves discovery) during epoch 2,
        cut = time.time()
        link("hvd-h2", "down")
        job.set_hosts(["hvd-h1:2"])
        while sizes[-1] != 2 and len(sizes) < 3:
            sizes.append(fifo.take()["size"])
        # and comes back: rank 0 waits at the end of an epoch until its workers are ready,
        restored = time.time()
        link("hvd-h2", "up")
        job.set_hosts(BOTH)
        job.wait_for_err("new worker(s) ready: announcing the host change", after=restored)
        while len(sizes) < 6:
            sizes.append(fifo.take()["size"])
        code = job.wait_exit(timeout=120)
    finally:
        link("hvd-h2", "up")
        fifo.close()
        job.close()
    # then the example exits 0 at 4 ranks, accurate, having trained at 2 in between.
    print("example: epoch sizes %s, %.1f s from the cut to the end" % (sizes, time.time() - cut))
    assert code == 0, job.describe()
    assert 2 in sizes and sizes[-1] == 4 and sizes[-2] == 4, (sizes, job.describe())
    assert "ranks 4  epoch 6  test accuracy" in "".join(job.out), job.describe()
    job.assert_nothing_left()
