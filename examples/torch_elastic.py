#!/usr/bin/env python3
"""Elastic data-parallel training (Horovod's elastic PyTorch example, on hvd).

    hvdrun -np 2 --min-np 1 --max-np 4 --host-discovery-script ./hosts.sh \\
        /usr/bin/python3 examples/torch_elastic.py
    hvdrun --elastic -np 4 --min-np 2 -H localhost:2,127.0.0.1:2 \\
        /usr/bin/python3 examples/torch_elastic.py

The training loop runs inside ``@hvd.elastic.run``; everything it must not lose lives in an
``hvd.elastic.TorchState`` (model, optimizer, the ElasticSampler, epoch and batch).
``state.commit()`` every --batches-per-commit batches saves it and is where a host change
interrupts training (HostsUpdatedInterrupt); a failed collective (a peer died) rolls back to
the last commit (HorovodInternalError). Either way hvd re-forms the job with the workers that
are left or have joined, syncs the state from rank 0 and goes on; the reset callback rescales
the learning rate to the new number of ranks, and the ElasticSampler re-shards the samples
of the epoch that have not been processed yet.

The data: 4-class classification of 20-dimensional points labelled by a fixed random
teacher network (no download). --epoch-log FILE gets one JSON line per epoch from rank 0
(size, accuracy), and --min-accuracy makes the exit code fail below a target.
"""
import argparse
import json
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

import hvd.torch as hvd

FEATURES, CLASSES = 20, 4


def make_dataset(samples: int, seed: int) -> TensorDataset:
    generator = torch.Generator().manual_seed(1234)  # the same teacher for every split
    teacher = torch.randn(FEATURES, CLASSES, generator=generator)
    bias = torch.randn(CLASSES, generator=generator) * 0.5
    points = torch.randn(samples, FEATURES, generator=torch.Generator().manual_seed(seed))
    labels = (points @ teacher + bias).argmax(dim=1)
    return TensorDataset(points, labels)


def evaluate(model: nn.Module, test_set: TensorDataset) -> float:
    """Accuracy over the whole test set, each rank scoring its share."""
    model.eval()
    points, labels = test_set.tensors
    mine = slice(hvd.rank(), None, hvd.size())
    with torch.no_grad():
        correct = (model(points[mine]).argmax(dim=1) == labels[mine]).sum().item()
    model.train()
    counts = hvd.allreduce(torch.tensor([correct, labels[mine].numel()], dtype=torch.float64),
                           op=hvd.Sum, name="eval.counts")
    return (counts[0] / counts[1]).item()


def main() -> int:
    parser = argparse.ArgumentParser(description="hvd example: elastic training")
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=32, help="per rank")
    parser.add_argument("--lr", type=float, default=0.05, help="per rank; scaled by size")
    parser.add_argument("--batches-per-commit", type=int, default=10)
    parser.add_argument("--train-samples", type=int, default=8192)
    parser.add_argument("--test-samples", type=int, default=2048)
    parser.add_argument("--epoch-log", default="", help="rank 0 appends a JSON line per epoch")
    parser.add_argument("--min-accuracy", type=float, default=0.0,
                        help="exit 1 if the final test accuracy is below this")
    args = parser.parse_args()

    hvd.init()
    torch.manual_seed(42)
    torch.set_num_threads(1)
    train_set = make_dataset(args.train_samples, seed=1)
    test_set = make_dataset(args.test_samples, seed=2)
    train_sampler = hvd.elastic.ElasticSampler(train_set, shuffle=True, seed=0)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, sampler=train_sampler)

    model = nn.Sequential(nn.Linear(FEATURES, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(),
                          nn.Linear(64, CLASSES))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr * hvd.size(), momentum=0.9)
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())

    @hvd.elastic.run
    def train(state):
        while state.epoch < args.epochs:
            for points, labels in train_loader:
                optimizer.zero_grad()
                loss = F.cross_entropy(model(points), labels)
                loss.backward()
                optimizer.step()
                state.train_sampler.record_batch(state.batch, args.batch_size)
                state.batch += 1
                if state.batch % args.batches_per_commit == 0:
                    state.commit()
            accuracy = evaluate(model, test_set)
            if hvd.rank() == 0:
                print(f"ranks {hvd.size()}  epoch {state.epoch + 1}  test accuracy "
                      f"{accuracy:.4f}", flush=True)
                if args.epoch_log:
                    with open(args.epoch_log, "a") as f:
                        f.write(json.dumps({"epoch": state.epoch + 1, "size": hvd.size(),
                                            "accuracy": accuracy}) + "\n")
            state.epoch += 1
            state.batch = 0
            state.train_sampler.set_epoch(state.epoch)
            state.commit()
        return evaluate(model, test_set)

    def on_state_reset():
        # The effective batch changed with the number of ranks: rescale the learning rate.
        for group in optimizer.param_groups:
            group["lr"] = args.lr * hvd.size()

    state = hvd.elastic.TorchState(model, optimizer, train_sampler=train_sampler, epoch=0,
                                   batch=0)
    state.register_reset_callbacks([on_state_reset])
    accuracy = train(state)
    if accuracy < args.min_accuracy:
        print(f"rank {hvd.rank()}: final accuracy {accuracy:.4f} is below --min-accuracy "
              f"{args.min_accuracy}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
