#!/usr/bin/env python3
"""Synthetic training throughput, shaped like Horovod's pytorch_synthetic_benchmark.py.

    hvdrun -np 2 /usr/bin/python3 examples/torch_synthetic_benchmark.py --model convnet
    /usr/bin/python3 examples/torch_synthetic_benchmark.py   # one process, no hvdrun

Random 3x32x32 images and labels; each step is forward, backward, DistributedOptimizer step.
Prints img/sec per worker and in total. Models are defined here (no torchvision download).
"""
import argparse
import timeit

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import hvd.torch as hvd


def make_model(name: str, num_classes: int) -> nn.Module:
    if name == "convnet":
        return nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(64, 128, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
            nn.Flatten(), nn.Linear(128, num_classes))
    if name == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, 1024), nn.ReLU(),
                             nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, num_classes))
    raise SystemExit(f"unknown --model {name!r}: choose convnet or mlp")


def main() -> None:
    parser = argparse.ArgumentParser(description="hvd synthetic benchmark (PyTorch)")
    parser.add_argument("--model", default="convnet", help="convnet or mlp")
    parser.add_argument("--batch-size", type=int, default=32, help="input batch size per worker")
    parser.add_argument("--num-warmup-batches", type=int, default=10)
    parser.add_argument("--num-batches-per-iter", type=int, default=10)
    parser.add_argument("--num-iters", type=int, default=10)
    parser.add_argument("--fp16-allreduce", action="store_true", help="fp16 compression")
    parser.add_argument("--use-adasum", action="store_true", help="use Adasum (Horovod's flag)")
    parser.add_argument("--num-threads", type=int, default=0,
                        help="torch intra-op threads per worker (0: torch's default)")
    args = parser.parse_args()

    hvd.init()
    torch.manual_seed(42)
    if args.num_threads > 0:
        torch.set_num_threads(args.num_threads)

    num_classes = 10
    model = make_model(args.model, num_classes)
    lr_scaler = 1 if args.use_adasum else hvd.size()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01 * lr_scaler)
    compression = hvd.Compression.fp16 if args.fp16_allreduce else hvd.Compression.none
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters(),
                                         compression=compression,
                                         op=hvd.Adasum if args.use_adasum else hvd.Average)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)

    data = torch.randn(args.batch_size, 3, 32, 32)
    target = torch.randint(0, num_classes, (args.batch_size,))

    def benchmark_step() -> None:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(data), target)
        loss.backward()
        optimizer.step()

    def log(text: str) -> None:
        if hvd.rank() == 0:
            print(text, flush=True)

    log(f"Model: {args.model}")
    log(f"Batch size: {args.batch_size}")
    log(f"Number of CPUs: {hvd.size()}")
    log("Running warmup...")
    timeit.timeit(benchmark_step, number=args.num_warmup_batches)
    log("Running benchmark...")
    img_secs = []
    for i in range(args.num_iters):
        elapsed = timeit.timeit(benchmark_step, number=args.num_batches_per_iter)
        img_sec = args.batch_size * args.num_batches_per_iter / elapsed
        log(f"Iter #{i}: {img_sec:.1f} img/sec per CPU")
        img_secs.append(img_sec)
    mean, conf = np.mean(img_secs), 1.96 * np.std(img_secs)
    log(f"Img/sec per CPU: {mean:.1f} +-{conf:.1f}")
    log(f"Total img/sec on {hvd.size()} CPU(s): {hvd.size() * mean:.1f} +-{hvd.size() * conf:.1f}")


if __name__ == "__main__":
    main()
