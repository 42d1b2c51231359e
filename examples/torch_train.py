#!/usr/bin/env python3
"""A complete data-parallel training script on a dataset generated in code.

    hvdrun -np 2 /usr/bin/python3 examples/torch_train.py --checkpoint /tmp/model.pt
    /usr/bin/python3 examples/torch_train.py        # one process, no hvdrun
    hvdrun -np 2 /usr/bin/python3 examples/torch_train.py --cuda  # GPUs (local rank i: GPU i mod n)

The task: 4-class classification of 20-dimensional points labelled by a fixed random
teacher network (the same on every rank: fixed seed). Each rank trains on its shard of every
epoch (DistributedSampler), the learning rate is scaled by the number of ranks, rank 0's
initial weights and optimizer state are broadcast, DistributedOptimizer averages gradients,
test accuracy is averaged over ranks and printed by rank 0, and rank 0 writes a checkpoint
each epoch (resumed with --resume). --min-accuracy makes the exit code fail below a target.
"""
import argparse
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

import hvd.torch as hvd

FEATURES, CLASSES = 20, 4


def make_dataset(samples: int, seed: int) -> TensorDataset:
    generator = torch.Generator().manual_seed(1234)  # the teacher is the same for every split
    teacher = torch.randn(FEATURES, CLASSES, generator=generator)
    bias = torch.randn(CLASSES, generator=generator) * 0.5
    points = torch.randn(samples, FEATURES, generator=torch.Generator().manual_seed(seed))
    labels = (points @ teacher + bias).argmax(dim=1)
    return TensorDataset(points, labels)


def metric_average(value: float, name: str) -> float:
    return hvd.allreduce(torch.tensor(value, dtype=torch.float64), name=name).item()


def evaluate(model: nn.Module, loader: DataLoader, device: torch.device) -> float:
    model.eval()
    correct, total = 0, 0
    with torch.no_grad():
        for points, labels in loader:
            points, labels = points.to(device), labels.to(device)
            correct += (model(points).argmax(dim=1) == labels).sum().item()
            total += labels.numel()
    model.train()
    counts = hvd.allreduce(torch.tensor([correct, total], dtype=torch.float64), op=hvd.Sum,
                           name="eval.counts")
    return (counts[0] / counts[1]).item()


def main() -> int:
    parser = argparse.ArgumentParser(description="hvd example: train an MLP on synthetic data")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=32, help="per rank")
    parser.add_argument("--lr", type=float, default=0.05, help="per rank; scaled by size")
    parser.add_argument("--train-samples", type=int, default=8192)
    parser.add_argument("--test-samples", type=int, default=2048)
    parser.add_argument("--checkpoint", default="", help="rank 0 saves here every epoch")
    parser.add_argument("--resume", action="store_true", help="resume from --checkpoint")
    parser.add_argument("--min-accuracy", type=float, default=0.0,
                        help="exit 1 if the final test accuracy is below this")
    parser.add_argument("--cuda", action="store_true",
                        help="train on the GPU local_rank() mod the visible GPUs")
    parser.add_argument("--use-adasum", action="store_true",
                        help="combine the ranks' updates with Adasum (learning rate not scaled)")
    args = parser.parse_args()

    hvd.init()
    device = torch.device("cpu")
    if args.cuda:
        if not torch.cuda.is_available():
            sys.exit("--cuda: no CUDA GPU is visible to this rank (torch.cuda.is_available() is "
                     "False; Debian's python3-torch is built without CUDA)")
        torch.cuda.set_device(hvd.local_rank() % torch.cuda.device_count())
        device = torch.device("cuda", torch.cuda.current_device())
    torch.manual_seed(42)
    torch.set_num_threads(1)

    train_set = make_dataset(args.train_samples, seed=1)
    test_set = make_dataset(args.test_samples, seed=2)
    train_sampler = DistributedSampler(train_set, num_replicas=hvd.size(), rank=hvd.rank(),
                                       shuffle=True, seed=0)
    test_sampler = DistributedSampler(test_set, num_replicas=hvd.size(), rank=hvd.rank(),
                                      shuffle=False)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, sampler=train_sampler)
    test_loader = DataLoader(test_set, batch_size=256, sampler=test_sampler)

    model = nn.Sequential(nn.Linear(FEATURES, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(),
                          nn.Linear(64, CLASSES)).to(device)
    # As Horovod's examples: the summed-then-averaged gradients take a learning rate scaled by the
    # ranks; Adasum's combination of updates does not.
    lr_scaler = 1 if args.use_adasum else hvd.size()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr * lr_scaler, momentum=0.9)

    start_epoch = 0
    if args.resume and args.checkpoint and hvd.rank() == 0 and os.path.exists(args.checkpoint):
        checkpoint = torch.load(args.checkpoint, map_location=device)
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        start_epoch = checkpoint["epoch"] + 1
    start_epoch = hvd.broadcast_object(start_epoch, root_rank=0, name="start_epoch")
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters(),
                                         op=hvd.Adasum if args.use_adasum else hvd.Average)

    accuracy = evaluate(model, test_loader, device)
    if hvd.rank() == 0:
        print(f"ranks {hvd.size()}  epoch {start_epoch}  before training  "
              f"test accuracy {accuracy:.4f}", flush=True)
    for epoch in range(start_epoch, args.epochs):
        train_sampler.set_epoch(epoch)
        total_loss, batches = 0.0, 0
        for points, labels in train_loader:
            points, labels = points.to(device), labels.to(device)
            optimizer.zero_grad()
            loss = F.cross_entropy(model(points), labels)
            loss.backward()
            optimizer.step()
            total_loss += loss.item()
            batches += 1
        train_loss = metric_average(total_loss / max(batches, 1), "train_loss")
        accuracy = evaluate(model, test_loader, device)
        if hvd.rank() == 0:
            print(f"ranks {hvd.size()}  epoch {epoch + 1}  train loss {train_loss:.4f}  "
                  f"test accuracy {accuracy:.4f}", flush=True)
            if args.checkpoint:
                torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                            "epoch": epoch}, args.checkpoint)
    if accuracy < args.min_accuracy:
        print(f"rank {hvd.rank()}: final accuracy {accuracy:.4f} is below "
              f"--min-accuracy {args.min_accuracy}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
