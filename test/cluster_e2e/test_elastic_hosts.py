"""Elastic jobs across the SSH hosts of scripts/cluster/up.sh 2 (network namespaces): workers
start through each host's hvd-agent as the discovery script lists the host, and a host cut
off mid-job (its veth set down: no FIN, no RST) is noticed, blacklisted, and the survivors go
on from their last commit. Nothing of the job is left on any host afterwards.
"""
import os
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "elastic_e2e"))
import elastic_harness  # noqa: E402
from elastic_harness import (PYTHON, TRAIN, assert_state_recovered, discovery_script,  # noqa
                             hvdrun, kill_marked, read_json_lines)
from test_multi_host import SSH, job_processes_on_hosts, wait_for  # noqa: E402

PYTHONPATH = os.environ.get("HVD_TEST_PYTHONPATH", "")


def test_elastic_job_grows_and_shrinks_across_ssh_hosts(tmp_path):
    script = discovery_script(tmp_path / "discover.sh", tmp_path / "log.jsonl",
                              [(0, ["hvd-h1:1"]), (1, ["hvd-h1:1", "hvd-h2:1"]),
                               (None, ["hvd-h2:1"])])
    run = hvdrun(SSH + ["-np", "1", "--min-np", "1", "--max-np", "2",
                        "--host-discovery-script", script, "--host-discovery-interval", "0.1"],
                 ["--epochs", "3", "--wait-for-update-after", "0,1", "--update-wait", "90"],
                 tmp_path, env={"PYTHONPATH": PYTHONPATH}, timeout=240)
    assert run.returncode == 0, run.describe()
    assert run.sizes() == [1, 2, 1], run.describe()
    assert [l["hostname"] for l in run.log] == ["hvd-h1", "hvd-h1", "hvd-h2"]
    assert "worker 1 started on hvd-h2 (hvd-agent)" in run.err
    assert_state_recovered(run)
    wait_for(lambda: not job_processes_on_hosts(), 30,
             "no job process in the host namespaces (%s)" % job_processes_on_hosts())


def link(host_index, state):
    subprocess.run(["ip", "link", "set", "hvd-v%d" % host_index, state], check=True)


def test_a_host_cut_off_is_blacklisted_and_the_survivors_go_on(tmp_path):
    logfile, events = tmp_path / "log.jsonl", tmp_path / "events.jsonl"
    marker = "hvd-elastic-e2e-cut-%d" % os.getpid()
    env = dict(os.environ, PYTHONPATH=PYTHONPATH, OMP_NUM_THREADS="1",
               HVD_ELASTIC_TEST_MARKER=marker)
    env.pop("HVD_HEARTBEAT_TIMEOUT_SECONDS", None)  # the default, 5 s
    proc = subprocess.Popen(
        [elastic_harness.HVDRUN, "--verbose"] + SSH +
        ["--elastic", "-np", "3", "--min-np", "2", "-H", "localhost:1,hvd-h1:1,hvd-h2:1",
         PYTHON, TRAIN, "--logfile", str(logfile), "--events", str(events), "--epochs", "3",
         "--wait-for-update-after", "0", "--update-wait", "90"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    # One reader owns stderr (a second one, such as communicate(), would take some lines).
    err = []
    reader = threading.Thread(target=lambda: err.extend(proc.stderr), daemon=True)
    reader.start()
    cut = None
    try:
        deadline = time.monotonic() + 120
        while not read_json_lines(logfile) and time.monotonic() < deadline:
            assert proc.poll() is None, b"".join(err).decode(errors="replace")
            time.sleep(0.1)
        assert read_json_lines(logfile), b"".join(err).decode(errors="replace")
        cut = time.monotonic()
        link(2, "down")  # hvd-h2 stops answering while the ranks wait in a collective
        proc.wait(timeout=120)
        reader.join(timeout=10)
        text = b"".join(err).decode(errors="replace")
        assert proc.returncode == 0, text
        log = read_json_lines(logfile)
        assert [l["size"] for l in log] == [3, 2, 2], (log, text)
        assert "host hvd-h2 lost" in text, text
        assert "host hvd-h2 is blacklisted for good" in text, text
        assert time.monotonic() - cut < 60
    finally:
        if cut is not None:
            link(2, "up")
        if proc.poll() is None:
            proc.kill()
        kill_marked(marker)
    run = elastic_harness.Run(proc, "", text, str(logfile), str(events))
    assert_state_recovered(run)
    wait_for(lambda: not job_processes_on_hosts(), 40,
             "no job process in the host namespaces (%s)" % job_processes_on_hosts())
