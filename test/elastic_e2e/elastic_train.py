"""An elastic PyTorch worker for the end-to-end tests, in the style of Horovod's
test/integration/data/elastic_torch_main.py: a small model trained with hvd.elastic.run and a
TorchState, and two logs the tests read.

--logfile   rank 0 appends one JSON line per finished epoch: epoch, commits, hostname,
            start_rank (HVD_RANK when the worker started), rank, size, rendezvous (entries
            into the training function), round (hvdrun's round) and the model's hash.
--events    every rank appends "commit" (each time the state is saved) and "resume" (on entering the
            training function, after the state sync) lines with the model's hash, so a test
            can check that the state after a recovery is exactly the last committed one.

--exit-schedule '{"1,0": [0]}' makes the workers whose start_rank is listed fail at (epoch,
batch) = (1, 0) the first time they get there: --exit-mode exception raises, kill SIGKILLs
itself, exit0 leaves with status 0, oom joins --oom-cgroup and fills memory until the kernel's
OOM killer ends it. --wait-for-update-after 0,1: after those epochs every
rank waits (checking for host updates, at most --update-wait seconds) until hvdrun's host
change arrives, so a test's discovery schedule lines up with epochs, as Horovod's test does
with its epoch wait.
"""
import argparse
import hashlib
import json
import os
import signal
import sys
import time

import torch
import torch.nn.functional as F

import hvd.torch as hvd
from hvd import _hvd_c

parser = argparse.ArgumentParser()
parser.add_argument("--logfile", required=True)
parser.add_argument("--events", required=True)
parser.add_argument("--epochs", type=int, default=3)
parser.add_argument("--batches-per-epoch", type=int, default=4)
parser.add_argument("--exit-schedule", default="{}")
parser.add_argument("--exit-mode", default="exception",
                    choices=["exception", "kill", "exit0", "oom"])
parser.add_argument("--oom-cgroup", default="",
                    help="--exit-mode oom: the cgroup.procs file of a memory-limited cgroup the "
                         "worker joins before it outgrows the limit (the OOM killer ends it)")
parser.add_argument("--wait-for-update-after", default="")
parser.add_argument("--update-wait", type=float, default=60.0)
parser.add_argument("--block-start-rank", type=int, default=-1,
                    help="this worker stops training (sleeps) at its first failure")
parser.add_argument("--fail-before-init-on", default="",
                    help="workers on this host exit 1 before hvd.init()")
parser.add_argument("--bad-iface-on", default="",
                    help="workers on this host name a network interface that does not exist "
                         "(HVD_GLOO_IFACE): every init of theirs fails to join its round")
parser.add_argument("--die-in-reset-on-worker", type=int, default=-1,
                    help="this worker (elastic worker id) SIGKILLs itself in its first reset "
                         "callback, before the new round's state sync")
parser.add_argument("--mismatch-at-epoch", type=int, default=-1,
                    help="every rank submits a differently shaped allreduce once, at batch 0")
parser.add_argument("--sleep-before-epoch", default="",
                    help="E:S: every rank sleeps S seconds once at the start of epoch E, before "
                         "its first commit there (members that commit rarely)")
args = parser.parse_args()

hostname = os.environ.get("HVD_HOSTNAME", "?")
start_rank = int(os.environ.get("HVD_RANK", "0"))
worker = int(os.environ.get("HVD_ELASTIC_WORKER_ID", "-1"))
exit_schedule = {tuple(int(x) for x in k.split(",")): v
                 for k, v in json.loads(args.exit_schedule).items()}
wait_after = {int(e) for e in args.wait_for_update_after.split(",") if e}
sleep_epoch, sleep_s = (int(args.sleep_before_epoch.split(":")[0]),
                        float(args.sleep_before_epoch.split(":")[1])) \
    if args.sleep_before_epoch else (-1, 0.0)
slept = False

if args.fail_before_init_on and hostname == args.fail_before_init_on:
    print(f"worker {worker} on {hostname}: failing before init", file=sys.stderr)
    sys.exit(1)

if args.bad_iface_on and hostname == args.bad_iface_on:
    os.environ["HVD_GLOO_IFACE"] = "nosuch0"

hvd.init()
torch.manual_seed(1000 + start_rank)
data = torch.randn(16, 4)
target = torch.randint(0, 2, (16,))
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())


def model_hash():
    h = hashlib.sha256()
    for tensor in model.state_dict().values():
        h.update(tensor.detach().contiguous().numpy().tobytes())
    for group in optimizer.state_dict()["state"].values():
        for value in group.values():
            if torch.is_tensor(value):
                h.update(value.detach().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


def append(path, record):
    with open(path, "a") as f:
        f.write(json.dumps(record) + "\n")


def event(kind, state):
    round_number = _hvd_c.elastic_round()[0]
    append(args.events, {"ev": kind, "worker": worker, "start_rank": start_rank,
                         "round": round_number, "rank": hvd.rank(), "size": hvd.size(),
                         "epoch": state.epoch, "batch": state.batch, "commits": state.commits,
                         "hash": model_hash()})


def check_exit(epoch, batch):
    ranks = exit_schedule.get((epoch, batch), [])
    if start_rank not in ranks:
        return
    if args.exit_mode == "exception":
        raise RuntimeError(f"check_exit: worker {worker} (start rank {start_rank}) fails at "
                           f"epoch {epoch} batch {batch}")
    if args.exit_mode == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if args.exit_mode == "oom":
        with open(args.oom_cgroup, "w") as f:
            f.write(str(os.getpid()))
        hog = [b"x" * (64 << 20) for _ in range(64)]  # 4 GiB, every page written
        raise RuntimeError(f"worker {worker} was not killed holding {len(hog) * 64} MiB")
    print(f"worker {worker} leaves with status 0 at epoch {epoch} batch {batch}", flush=True)
    sys.exit(0)


def wait_for_host_update(state):
    # The same number of checks on every rank: each is a collective (rank 0's view broadcast),
    # and a per-rank deadline let one rank stop a check before the others and go on to train
    # while they still waited in the next check's broadcast (a hang the Slurm test met once in
    # CI, 2026-11-26).
    for _ in range(max(1, int(args.update_wait / 0.05))):
        state.check_host_updates()  # raises HostsUpdatedInterrupt on every rank at once
        time.sleep(0.05)
    print(f"rank {hvd.rank()}: no host update within {args.update_wait} s", flush=True)


def mismatch(state):
    tensor = torch.ones(hvd.rank() + 1)
    try:
        hvd.allreduce(tensor, name="mismatch")
    except Exception as error:  # every rank must get the same message
        append(args.events, {"ev": "mismatch", "worker": worker, "rank": hvd.rank(),
                             "type": type(error).__name__, "message": str(error)})


@hvd.elastic.run
def train(state):
    state.rendezvous += 1
    event("resume", state)
    global slept
    while state.epoch < args.epochs:
        if state.epoch == args.mismatch_at_epoch and state.batch == 0:
            mismatch(state)
        if state.epoch == sleep_epoch and not slept:
            slept = True
            time.sleep(sleep_s)
        while state.batch < args.batches_per_epoch:
            try:
                check_exit(state.epoch, state.batch)
            except RuntimeError:
                if start_rank == args.block_start_rank:
                    time.sleep(3600)  # F10: stuck, never re-initializes by itself
                raise
            optimizer.zero_grad()
            loss = F.cross_entropy(model(data), target)
            loss.backward()
            optimizer.step()
            state.batch += 1
            state.commits += 1
            state.commit()
        if hvd.rank() == 0:
            append(args.logfile, {"epoch": state.epoch, "commits": state.commits,
                                  "hostname": hostname, "start_rank": start_rank,
                                  "rank": hvd.rank(), "size": hvd.size(),
                                  "rendezvous": state.rendezvous,
                                  "round": _hvd_c.elastic_round()[0], "hash": model_hash()})
        finished = state.epoch
        state.epoch += 1
        state.batch = 0
        state.commits += 1
        state.commit()
        if finished in wait_after:
            wait_for_host_update(state)


class LoggedState(hvd.elastic.TorchState):
    """A TorchState that logs a "commit" event each time it is saved. commit() is save() followed
    by a collective (check_host_updates); when that collective fails, the state just saved is
    the one restored, so the event must be written at the save, not after commit() returns
    (logging after commit() missed exactly that state when a host was cut mid-commit)."""

    log_saves = False

    def save(self):
        super().save()
        if self.log_saves:
            event("commit", self)


state = LoggedState(model, optimizer, epoch=0, batch=0, commits=0, rendezvous=0)
state.log_saves = True
if worker == args.die_in_reset_on_worker:
    state.register_reset_callbacks([lambda: os.kill(os.getpid(), signal.SIGKILL)])
train(state)
print(f"worker {worker} done: rank {hvd.rank()} of {hvd.size()}", flush=True)
