"""The elastic worker of the host-fault tests (test_elastic_faults.py, test/cluster_slurm): it
trains until the test says stop, and logs every commit, resume and step so a test can tell
the sizes the job went through and that each round resumed from exactly the last commit.

Each step: one DistributedOptimizer step of a small model, one allreduce of the stop flag
(rank 0 sets it once --stop-file exists, so every rank stops after the same step), then
state.commit(). --events gets one JSON line per event from every rank:
  commit  the state was saved (at save(): a commit whose collective then fails is still the
          state a reset restores)
  resume  entering the training function, after the state sync of a new round
  step    a step finished and was committed
each with the time, worker id, hvdrun's round, rank, size, step and the state's hash.
"""
import argparse
import hashlib
import json
import os
import sys
import time

import torch
import torch.nn.functional as F

import hvd.torch as hvd
from hvd import _hvd_c

parser = argparse.ArgumentParser()
parser.add_argument("--events", required=True)
parser.add_argument("--stop-file", required=True)
parser.add_argument("--sleep", type=float, default=0.05, help="seconds between steps")
parser.add_argument("--max-steps", type=int, default=100000)
args = parser.parse_args()

worker = int(os.environ.get("HVD_ELASTIC_WORKER_ID", "-1"))
host = os.environ.get("HVD_HOSTNAME", "?")

hvd.init()
torch.set_num_threads(1)
torch.manual_seed(0)
data, target = torch.randn(16, 4), torch.randint(0, 2, (16,))
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9),
                                     named_parameters=model.named_parameters())


def state_hash(state):
    h = hashlib.sha256(str(state.step).encode())
    for tensor in model.state_dict().values():
        h.update(tensor.detach().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


def event(kind, state):
    record = {"ev": kind, "t": time.time(), "worker": worker, "host": host,
              "round": _hvd_c.elastic_round()[0], "rank": hvd.rank(), "size": hvd.size(),
              "step": state.step, "hash": state_hash(state)}
    with open(args.events, "a") as f:
        f.write(json.dumps(record) + "\n")


class LoggedState(hvd.elastic.TorchState):
    log_saves = False

    def save(self):
        super().save()
        if self.log_saves:
            event("commit", self)


@hvd.elastic.run
def train(state):
    event("resume", state)
    while state.step < args.max_steps:
        optimizer.zero_grad()
        F.cross_entropy(model(data), target).backward()
        optimizer.step()
        stop = hvd.rank() == 0 and os.path.exists(args.stop_file)
        flag = hvd.allreduce(torch.tensor([float(stop)]), op=hvd.Sum, name="stop")
        state.step += 1
        state.commit()
        event("step", state)
        if flag.item() > 0:
            return
        time.sleep(args.sleep)


state = LoggedState(model, optimizer, step=0)
state.log_saves = True
train(state)
print("worker %d on %s done: rank %d of %d" % (worker, host, hvd.rank(), hvd.size()), flush=True)
sys.exit(0)
