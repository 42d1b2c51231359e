"""A numpy worker for the elastic runtime tests (F27, per transport): every rank starts one
collective; the victim leaves while the others wait in it (SIGKILL, or exit 0, which does
not blacklist its host). Each survivor records how it failed and how long that took, re-forms
with hvd.shutdown(); hvd.init(), and checks the same collective at the new size. Lines go to
--events as JSON.
"""
import argparse
import json
import os
import signal
import sys
import time

import numpy as np

import hvd.numpy as hvd
from hvd.exceptions import HorovodInternalError

parser = argparse.ArgumentParser()
parser.add_argument("--logfile", required=True)
parser.add_argument("--events", required=True)
parser.add_argument("--victim", type=int, required=True, help="worker id that leaves")
parser.add_argument("--victim-mode", choices=["kill", "exit0"], default="kill")
parser.add_argument("--op", choices=["allreduce", "allgather", "broadcast"], default="allreduce")
args = parser.parse_args()
worker = int(os.environ["HVD_ELASTIC_WORKER_ID"])


def record(**fields):
    with open(args.events, "a") as f:
        f.write(json.dumps(dict(worker=worker, **fields)) + "\n")


def run_op(round_tag):
    """Runs the op; returns the result and what every rank must get."""
    r, n = hvd.rank(), hvd.size()
    if args.op == "allreduce":
        got = hvd.allreduce(np.full(1000, r + 1, np.float32), op=hvd.Sum, name="op." + round_tag)
        want = np.full(1000, n * (n + 1) / 2, np.float32)
    elif args.op == "allgather":
        got = hvd.allgather(np.full((r + 1, 3), r, np.int64), name="op." + round_tag)
        want = np.concatenate([np.full((k + 1, 3), k, np.int64) for k in range(n)])
    else:
        got = hvd.broadcast(np.full(500, r + 7, np.float64), root_rank=0, name="op." + round_tag)
        want = np.full(500, 7, np.float64)
    return bool(np.array_equal(got, want))


hvd.init()
record(ev="start", rank=hvd.rank(), size=hvd.size())
if worker == args.victim:
    time.sleep(0.5)  # the others are waiting in the collective by now
    record(ev="victim leaves", mode=args.victim_mode)
    if args.victim_mode == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    os._exit(0)
started = time.monotonic()
try:
    run_op("1")
    record(ev="no error")
    sys.exit(1)
except HorovodInternalError as error:
    record(ev="failed", seconds=time.monotonic() - started, message=str(error)[:300])
hvd.shutdown()
started = time.monotonic()
hvd.init()
record(ev="reformed", seconds=time.monotonic() - started, rank=hvd.rank(), size=hvd.size())
ok = run_op("2")
record(ev="checked", ok=ok, rank=hvd.rank(), size=hvd.size())
hvd.shutdown()
sys.exit(0 if ok else 1)
