"""Elastic recovery across real hosts, for bench/elastic_bench.py --hosts: the namespace
cluster of scripts/cluster/up.sh 2 (hvd-h1, hvd-h2, each a network namespace with its own
sshd), brought up here and torn down after (as root, under flock /work/cluster.lock or the
like when others use the cluster).

hvd: one job per rep, 2 workers per host (test/cluster_e2e/elastic_fault_worker.py: a small
model, one DistributedOptimizer step + commit per step, 0.02 s apart), discovery every 0.1 s,
cooldown 1-2 s, the default 5 s heartbeat unless --heartbeat. It goes through, timing each
from the change to rank 0's first step at the new size:
  new host   discovery starts listing hvd-h2 (never in the job)        2 -> 4
  drain      discovery stops listing the healthy hvd-h2                 4 -> 2
  re-add     discovery lists it again                                   2 -> 4
  cut        hvd-h2's link goes down (and it leaves discovery)          4 -> 2
  return     link back, discovery lists it again after the cooldown     2 -> 4
  exit       one worker on hvd-h2 is SIGKILLed (its host is blacklisted) 4 -> 2
torchrun (--torchrun): the same cut under torchrun's elastic agent, one agent per host
(`ip netns exec`, c10d rendezvous on this machine's bridge address, --nnodes 1:2,
--max_restarts 3), gloo with a 5 s timeout (torch's default is 30 min: a cut peer would hang
the survivors that long): cut -> the restarted group's first allreduce on hvd-h1.
"""
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "test", "cluster_e2e"))
import elastic_fault_job as fj  # noqa: E402  (the test's harness: hosts, links, events)

BOTH = ["hvd-h1:2", "hvd-h2:2"]
PYTHON = "/usr/bin/python3"


def cluster(action):
    script = os.path.join(REPO, "scripts", "cluster", "up.sh" if action == "up" else "down.sh")
    subprocess.run([script] + (["2"] if action == "up" else []), check=True,
                   stdout=subprocess.DEVNULL)


def worker_on(job, host):
    for pid in fj.netns_pids(host):
        if "elastic_fault_worker" in fj.cmdline(pid):
            try:
                with open("/proc/%d/environ" % pid, "rb") as f:
                    if job.marker.encode() in f.read():
                        return pid
            except OSError:
                pass
    raise RuntimeError("no worker of the job on " + host)


def hvd_rep(hvdrun, heartbeat):
    fj.HVDRUN = hvdrun
    tmp = tempfile.mkdtemp(prefix="hvd-elastic-hosts-")
    events = os.path.join(tmp, "events.jsonl")
    job = fj.FaultJob(
        Path(tmp), ["-np", "2", "--min-np", "2", "--max-np", "4", "--blacklist-cooldown-range",
                    "1", "2", "--host-discovery-interval", "0.1", "--start-timeout", "20"],
        hosts=["hvd-h1:2"], env={"HVD_HEARTBEAT_TIMEOUT_SECONDS": str(heartbeat)},
        worker=[fj.WORKER, "--events", events, "--stop-file", os.path.join(tmp, "stop"),
                "--sleep", "0.02"])
    r = {}
    try:
        job.wait_for_size(2, timeout=120)
        t = job.set_hosts(BOTH)
        r["new host"] = job.wait_for_size(4, after=t, steps=1) - t
        job.wait_for_size(4, after=t)
        t = job.set_hosts(["hvd-h1:2"])
        r["drain"] = job.wait_for_size(2, after=t, steps=1) - t
        job.wait_for_size(2, after=t)
        t = job.set_hosts(BOTH)
        r["re-add"] = job.wait_for_size(4, after=t, steps=1) - t
        job.wait_for_size(4, after=t)
        t = time.time()
        fj.link("hvd-h2", "down")
        job.set_hosts(["hvd-h1:2"])
        r["cut"] = job.wait_for_size(2, after=t, steps=1) - t
        fj.link("hvd-h2", "up")
        time.sleep(2.5)  # past any cooldown
        t = job.set_hosts(BOTH)
        r["return"] = job.wait_for_size(4, after=t, steps=1) - t
        job.wait_for_size(4, after=t)
        t = time.time()
        os.kill(worker_on(job, "hvd-h2"), signal.SIGKILL)
        r["exit"] = job.wait_for_size(2, after=t, steps=1) - t
        if job.finish() != 0:
            raise RuntimeError("hvdrun failed:\n" + job.describe())
    finally:
        fj.link("hvd-h2", "up")
        job.close()
    return r


TORCHRUN_WORKER = r'''
import datetime, os, sys, time
import torch, torch.distributed as dist
attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=5))
t = torch.ones(1024)
dist.all_reduce(t)
print("READY %.6f attempt=%d rank=%d world=%d" % (time.time(), attempt, dist.get_rank(),
                                                    dist.get_world_size()), flush=True)
for _ in range(100000):
    dist.all_reduce(t)
    time.sleep(0.02)
    if os.path.exists(sys.argv[1]):
        break
'''


def torchrun_rep():
    """The same cut under torchrun: seconds from the cut to hvd-h1's restarted first allreduce,
    or None when torchrun did not recover within 120 s."""
    tmp = tempfile.mkdtemp(prefix="torchrun-hosts-")
    script = os.path.join(tmp, "worker.py")
    with open(script, "w") as f:
        f.write(TORCHRUN_WORKER)
    stop = os.path.join(tmp, "stop")
    port = 29400 + os.getpid() % 500
    # The c10d rendezvous store, on this machine's bridge address (where hvdrun would run): no
    # agent runs here, so torchrun's agents all connect to it as clients.
    store = subprocess.Popen(
        [PYTHON, "-c", "import time, datetime, torch.distributed as d; "
         "s = d.TCPStore('10.77.0.1', %d, is_master=True, wait_for_workers=False, "
         "timeout=datetime.timedelta(seconds=300)); time.sleep(600)" % port],
        start_new_session=True)
    procs, logs = [store], []
    for host in ("hvd-h1", "hvd-h2"):
        log = open(os.path.join(tmp, host + ".log"), "w+")
        logs.append(log)
        procs.append(subprocess.Popen(
            # Own UTS namespace: the hosts share this machine's host name, which torchrun's
            # agent hands its workers as the master address.
            ["ip", "netns", "exec", host, "unshare", "--uts", "sh", "-c",
             'hostname %s && exec "$@"' % host, "sh", PYTHON, "-m", "torch.distributed.run",
             "--nnodes",
             "1:2", "--nproc_per_node", "2", "--max_restarts", "3", "--monitor_interval", "0.1",
             "--redirects", "9:1", "--tee", "9:1",  # Debian torch 1.13 fails without a map
             "--rdzv_backend", "c10d", "--rdzv_endpoint", "10.77.0.1:%d" % port,
             "--rdzv_id", "bench", "--rdzv_conf", "last_call_timeout=1",
             script, stop], stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            env=dict(os.environ, OMP_NUM_THREADS="1")))
    try:
        def text():
            logs[0].flush()
            with open(logs[0].name) as f:
                return f.read()
        deadline = time.time() + 120
        while "world=4" not in text() and time.time() < deadline:
            time.sleep(0.1)
        if "world=4" not in text():
            raise RuntimeError("torchrun did not start 4 workers:\n" + text()[-3000:])
        cut = time.time()
        fj.link("hvd-h2", "down")
        while time.time() < cut + 120:
            ready = [float(m.group(1)) for m in
                     re.finditer(r"READY ([\d.]+) attempt=(\d+) rank=\d+ world=2", text())]
            if ready:
                return min(ready) - cut
            time.sleep(0.1)
        return None
    finally:
        fj.link("hvd-h2", "up")
        open(stop, "w").close()
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except OSError:
                pass
            p.wait()
