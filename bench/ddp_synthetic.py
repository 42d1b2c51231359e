#!/usr/bin/env python3
"""The peer of examples/torch_synthetic_benchmark.py: the same models and timing loop under
torch DistributedDataParallel (Gloo), launched by torchrun. Prints the same summary lines.

    /usr/bin/python3 -m torch.distributed.run --standalone --nproc_per_node 2 \
        --redirects 9:1 --tee 9:1 bench/ddp_synthetic.py --model convnet
"""
import argparse
import os
import sys
import timeit

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from torch_synthetic_benchmark import make_model  # noqa: E402  (same model definitions)


def main() -> None:
    parser = argparse.ArgumentParser(description="DDP synthetic benchmark (peer of hvd's)")
    parser.add_argument("--model", default="convnet")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--num-warmup-batches", type=int, default=10)
    parser.add_argument("--num-batches-per-iter", type=int, default=10)
    parser.add_argument("--num-iters", type=int, default=10)
    args = parser.parse_args()

    dist.init_process_group("gloo")
    rank, size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(42)
    model = torch.nn.parallel.DistributedDataParallel(make_model(args.model, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01 * size)
    data = torch.randn(args.batch_size, 3, 32, 32)
    target = torch.randint(0, 10, (args.batch_size,))

    def step() -> None:
        optimizer.zero_grad()
        F.cross_entropy(model(data), target).backward()
        optimizer.step()

    timeit.timeit(step, number=args.num_warmup_batches)
    rates = [args.batch_size * args.num_batches_per_iter /
             timeit.timeit(step, number=args.num_batches_per_iter) for _ in range(args.num_iters)]
    mean, conf = np.mean(rates), 1.96 * np.std(rates)
    if rank == 0:
        print(f"Img/sec per CPU: {mean:.1f} +-{conf:.1f}")
        print(f"Total img/sec on {size} CPU(s): {size * mean:.1f} +-{size * conf:.1f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
