#!/usr/bin/python3
"""Elastic-restart probe for torch.distributed.run (torchrun).

Attempt 0: every rank inits the gloo process group and does one allreduce;
then rank 1 exits with status 1 (a simulated worker failure).  The agent
tears the worker group down, re-rendezvous and restarts all workers
(needs --max_restarts >= 1).  Attempt 1 runs to completion.  Each rank
prints wall-clock stamps so the restart gap can be read off.

  /usr/bin/python3 -m torch.distributed.run --standalone --nproc_per_node 2 \
      --redirects 9:1 --tee 9:1 \
      --max_restarts 1 --monitor_interval 0.1 torch_elastic_restart.py
"""
import os
import sys
import time

import torch
import torch.distributed as dist

attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
t_start = time.time()
dist.init_process_group("gloo")
rank = dist.get_rank()
t = torch.ones(1024)
dist.all_reduce(t)
t_ready = time.time()
print(f"attempt={attempt} rank={rank} process_start={t_start:.3f} ready={t_ready:.3f}", flush=True)
if attempt == 0 and rank == 1:
    print(f"attempt=0 rank=1 failing_at={time.time():.3f}", flush=True)
    os._exit(1)
if attempt == 0:
    time.sleep(30)  # survivors would keep training; the agent kills them
dist.destroy_process_group()
