"""A plain torch.distributed script, no hvd in it: what a torchrun user runs under hvdrun.

init_process_group("gloo") from torchrun's variables (env://), one DistributedDataParallel step
whose averaged gradient is known, and an all_reduce; prints one checked line per rank.
"""
import os

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
assert (rank, world) == (int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
torch.manual_seed(0)  # the same initial weights everywhere (DDP also broadcasts rank 0's)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(1, 1, bias=False))
# Rank r's input is r + 1 and the loss is the output: the weight's gradient on rank r is r + 1,
# and DDP averages it to (world + 1) / 2.
model(torch.tensor([[float(rank + 1)]])).sum().backward()
grad = model.module.weight.grad.item()
assert abs(grad - (world + 1) / 2) < 1e-6, grad
total = torch.tensor([float(rank)])
dist.all_reduce(total)
assert total.item() == world * (world - 1) / 2, total
print("DDP OK rank %d of %d local %s/%s group %s/%s master %s grad %.1f" % (
    rank, world, os.environ["LOCAL_RANK"], os.environ["LOCAL_WORLD_SIZE"],
    os.environ["GROUP_RANK"], os.environ["GROUP_WORLD_SIZE"], os.environ["MASTER_ADDR"], grad))
dist.destroy_process_group()
