#!/usr/bin/python3
"""The worker of bench/elastic_bench.py: an hvd elastic training loop (one 1 MiB allreduce
and a state.commit() per step, the same loop as the Horovod elastic probe it is compared
with) that prints wall-clock stamps the bench reads:

  STAMP <event> <unix time> worker=<id> rank=<r> size=<n>

events: step (a step finished), failing (the victim is about to die), error (a collective
raised HorovodInternalError), reset (the reset callback ran: re-formed), trigger (this worker
asked the discovery script to add a host).

  --fail-at STEP        worker 1 SIGKILLs itself at this step (first round only)
  --trigger FILE --trigger-at STEP   worker 0 creates FILE at this step (scale-up bench)
"""
import argparse
import os
import signal
import time

import torch

import hvd.torch as hvd

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=40)
parser.add_argument("--fail-at", type=int, default=-1)
parser.add_argument("--trigger", default="")
parser.add_argument("--trigger-at", type=int, default=-1)
parser.add_argument("--sleep", type=float, default=0.02)
args = parser.parse_args()
worker = int(os.environ.get("HVD_ELASTIC_WORKER_ID", "-1"))


def stamp(event):
    print(f"STAMP {event} {time.time():.6f} worker={worker} rank={hvd.rank()} size={hvd.size()}",
          flush=True)


hvd.init()
model = torch.nn.Linear(512, 512)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
state = hvd.elastic.TorchState(model, optimizer, step=0)
state.register_reset_callbacks([lambda: stamp("reset")])


@hvd.elastic.run
def train(state):
    while state.step < args.steps:
        try:
            hvd.allreduce_(torch.ones(256 * 1024), name="probe")
            if worker == 1 and state.step == args.fail_at:
                stamp("failing")
                os.kill(os.getpid(), signal.SIGKILL)
            if worker == 0 and state.step == args.trigger_at and args.trigger:
                stamp("trigger")
                open(args.trigger, "w").close()
            state.step += 1
            state.commit()
        except hvd.HorovodInternalError:
            stamp("error")
            raise
        stamp("step")
        time.sleep(args.sleep)


train(state)
