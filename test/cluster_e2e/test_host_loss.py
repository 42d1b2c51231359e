"""A host that vanishes mid-job without closing its sockets (its veth set down), on the hosts
of scripts/cluster/up.sh 2: hvdrun names it within HVD_HEARTBEAT_TIMEOUT_SECONDS, the
survivors' in-flight collectives fail with HorovodInternalError instead of hanging, and once
the link is back nothing of the job is left anywhere.
"""
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from test_multi_host import (SSH, assert_hosts_clean, kill_leftovers,  # noqa: E402
                             start, unique_marker)

PYTHONPATH = os.environ.get("HVD_TEST_PYTHONPATH", "")
TIMEOUT = 5.0  # HVD_HEARTBEAT_TIMEOUT_SECONDS, the default

WORKER = r'''
import signal, sys, time
import torch
import hvd.torch as hvd
# hvdrun stops the job once it sees the host is lost; ignore its SIGTERM so that the survivors
# show what their own collective did (SIGKILL comes after the grace period).
signal.signal(signal.SIGTERM, signal.SIG_IGN)
hvd.init()
t = torch.ones(1 << 16)
hvd.allreduce(t, name="warmup")
print("ready %d" % hvd.rank(), flush=True)
begin = time.time()
try:
    while time.time() - begin < 120:
        hvd.allreduce(t, name="step")
    print("rank %d never failed" % hvd.rank(), flush=True)
    sys.exit(5)
except hvd.HorovodInternalError as error:
    print("rank %d HorovodInternalError at %.3f: %s" % (hvd.rank(), time.time(), error),
          flush=True)
    sys.exit(3)
'''


def link(host_index, state):
    subprocess.run(["ip", "link", "set", "hvd-v%d" % host_index, state], check=True)


def collect(stream, sink):
    for line in iter(stream.readline, b""):
        sink.append((time.time(), line.decode(errors="replace")))


def test_host_cut_off_mid_job_is_named_and_survivors_fail_instead_of_hanging(tmp_path):
    # Given 4 ranks: rank 0 here, rank 1 on hvd-h1, ranks 2 and 3 on hvd-h2, allreducing
    marker = unique_marker()
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    env = dict(os.environ, PYTHONPATH=PYTHONPATH)
    env.pop("HVD_HEARTBEAT_TIMEOUT_SECONDS", None)
    proc = start(SSH + ["-np", "4", "-H", "localhost:1,hvd-h1:1,hvd-h2:2",
                        "--grace-period-seconds", "10", "/usr/bin/python3", str(script), marker],
                 env=env)
    out, err = [], []
    readers = [threading.Thread(target=collect, args=(proc.stdout, out), daemon=True),
               threading.Thread(target=collect, args=(proc.stderr, err), daemon=True)]
    for reader in readers:
        reader.start()
    cut = None
    try:
        deadline = time.monotonic() + 90
        while sum("ready" in line for _, line in out) < 4 and time.monotonic() < deadline:
            assert proc.poll() is None, "".join(line for _, line in out + err)
            time.sleep(0.05)
        assert sum("ready" in line for _, line in out) == 4, out + err
        # When hvd-h2's link goes down (no FIN, no RST: it just stops answering)
        cut = time.time()
        link(2, "down")
        proc.wait(timeout=60)
        for reader in readers:
            reader.join(timeout=10)
        text = "".join(line for _, line in out + err)
        # Then hvdrun names the host within the heartbeat timeout ...
        lost = [t for t, line in err if "host hvd-h2 lost: no sign of life" in line]
        assert lost, text
        print("hvdrun named the lost host %.2f s after the cut" % (lost[0] - cut))
        assert lost[0] - cut < TIMEOUT + 0.5, (lost[0] - cut, text)
        assert proc.returncode != 0
        assert "hvd-h2 lost" in text.split("job failed")[-1], text  # in the failure summary
        # ... and the survivors' collectives failed with HorovodInternalError, not a hang
        for rank in (0, 1):
            failed = [t for t, line in out if "rank %d HorovodInternalError" % rank in line]
            assert failed, text
            print("rank %d raised HorovodInternalError %.2f s after the cut" % (rank, failed[0] - cut))
            assert failed[0] - cut < TIMEOUT + 2.0, (rank, failed[0] - cut, text)
    finally:
        if cut is not None:
            link(2, "up")
        if proc.poll() is None:
            proc.kill()
    try:
        # The cut-off agent stopped its ranks on its own; with the link back, sshd's last
        # retransmission meets a closed connection and its session ends too.
        assert_hosts_clean(marker, timeout=40)
    finally:
        kill_leftovers(marker)
