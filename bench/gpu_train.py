"""Training throughput on the GPU, side by side in one job (run under hvdrun on a GPU machine):

    hvdrun -np 1 python3 bench/gpu_train.py                                # hvd vs plain PyTorch
    hvdrun -np 2 -H localhost:1,127.0.0.1:1 python3 bench/gpu_train.py     # hvd vs DDP on NCCL

ResNet-50 (torchvision's when installed, else the same architecture defined here: bottleneck
blocks [3, 4, 6, 3], 25.6 M parameters) on synthetic 224x224 images, SGD, float32, as Horovod's
pytorch_synthetic_benchmark.py measures it. The sides take turns in the same processes: both
warm up first (--warmup batches each), then --rounds rounds, each of which times both sides
(--iters timed iterations of --batches batches, after --warmup batches) and puts the other side
first in the next round, so that a GPU still warming up (clocks, allocator) or drifting costs
both sides alike. It prints images per second per rank (median of the rounds) and the ratio
hvd/peer (>= 1: hvd as fast or faster):

- one rank: the peer is plain PyTorch (no hvd on the step): what hvd's DistributedOptimizer
  costs a job that runs on one GPU;
- several ranks, each its own host (hvdrun gives each its NCCL_HOSTID, so NCCL runs them on one
  GPU over its socket transport): the peer is torch DistributedDataParallel on the NCCL backend,
  initialised in the same processes with the same NCCL_HOSTID.

--device cpu and --model small run the same loop without a GPU (a check of the script).
"""
import argparse
import os
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import hvd.torch as hvd


class Bottleneck(nn.Module):
    def __init__(self, inplanes, planes, stride=1):
        super().__init__()
        width, out = planes, planes * 4
        self.conv1 = nn.Conv2d(inplanes, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, out, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out)
        self.down = None
        if stride != 1 or inplanes != out:
            self.down = nn.Sequential(nn.Conv2d(inplanes, out, 1, stride, bias=False),
                                      nn.BatchNorm2d(out))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = F.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        return F.relu(y + (x if self.down is None else self.down(x)))


def resnet(layers, num_classes=1000):
    """torchvision's ResNet layout (ResNet-50: layers [3, 4, 6, 3])."""
    blocks = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
              nn.MaxPool2d(3, 2, 1)]
    inplanes = 64
    for i, count in enumerate(layers):
        planes = 64 * 2 ** i
        for j in range(count):
            blocks.append(Bottleneck(inplanes, planes, 2 if i > 0 and j == 0 else 1))
            inplanes = planes * 4
    blocks += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(inplanes, num_classes)]
    return nn.Sequential(*blocks)


def make_model(name):
    if name == "small":
        return resnet([1, 1, 1, 1], num_classes=10)
    try:
        import torchvision
        return torchvision.models.resnet50()
    except ImportError:
        return resnet([3, 4, 6, 3])


def images_per_second(step, args, device):
    """Median over --iters timed iterations of --batches steps, per rank."""
    for _ in range(args.warmup):
        step()
    rates = []
    for _ in range(args.iters):
        if device.type == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(args.batches):
            step()
        if device.type == "cuda":
            torch.cuda.synchronize()
        rates.append(args.batch_size * args.batches / (time.perf_counter() - start))
    return statistics.median(rates)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="resnet50", help="resnet50, or small (a check)")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--image-size", type=int, default=224)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--iters", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--port", type=int, default=int(os.environ.get("BENCH_PORT", "29533")))
    args = parser.parse_args()

    hvd.init()
    device = torch.device(args.device)
    if device.type == "cuda":
        torch.cuda.set_device(hvd.local_rank() % torch.cuda.device_count())
    n = hvd.size()
    torch.manual_seed(42)
    data = torch.randn(args.batch_size, 3, args.image_size, args.image_size, device=device)
    target = torch.randint(0, 10 if args.model == "small" else 1000, (args.batch_size,),
                           device=device)

    def trainer(wrap):
        model = make_model(args.model).to(device)
        model, optimizer = wrap(model, torch.optim.SGD(model.parameters(), lr=0.01))

        def step():
            optimizer.zero_grad()
            F.cross_entropy(model(data), target).backward()
            optimizer.step()
        return step

    def with_hvd(model, optimizer):
        hvd.broadcast_parameters(model.state_dict(), root_rank=0)
        return model, hvd.DistributedOptimizer(optimizer,
                                               named_parameters=model.named_parameters())

    if n == 1:
        peer_name = "plain torch"

        def with_peer(model, optimizer):
            return model, optimizer
    else:
        import torch.distributed as dist
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo",
                                init_method=f"tcp://127.0.0.1:{args.port}", rank=hvd.rank(),
                                world_size=n)
        peer_name = "DDP " + dist.get_backend()

        def with_peer(model, optimizer):
            return nn.parallel.DistributedDataParallel(model), optimizer

    steps = {"hvd": trainer(with_hvd), "peer": trainer(with_peer)}
    for step in steps.values():
        for _ in range(args.warmup):
            step()
    sides = {"hvd": [], "peer": []}
    for round_ in range(args.rounds):
        # hvd first in even rounds, the peer first in odd ones.
        for side in (("hvd", "peer") if round_ % 2 == 0 else ("peer", "hvd")):
            sides[side].append(images_per_second(steps[side], args, device))
    # The slowest rank's rate: a data-parallel step is as fast as its last member.
    hvd_rate = float(hvd.allreduce(torch.tensor([statistics.median(sides["hvd"])]), op=hvd.Min,
                                   name="bench.hvd"))
    peer_rate = float(hvd.allreduce(torch.tensor([statistics.median(sides["peer"])]),
                                    op=hvd.Min, name="bench.peer"))
    if hvd.rank() == 0:
        where = torch.cuda.get_device_name() if device.type == "cuda" else "cpu"
        print(f"# {args.model}, batch {args.batch_size} per rank, {n} rank(s), {where}, "
              f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, median of {args.rounds} "
              f"rounds of {args.iters} x {args.batches} batches, images/s per rank")
        # HVD_GPU_ASYNC_COMPLETION=1: NCCL allreduces complete off hvd's cycle (docs/gpu.md).
        mode = " (async completion)" if os.environ.get(
            "HVD_GPU_ASYNC_COMPLETION", "0").lower() in ("1", "true", "yes", "on") else ""
        print(f"hvd{mode} {hvd_rate:.1f}  {peer_name} {peer_rate:.1f}  hvd/peer "
              f"{hvd_rate / peer_rate:.3f}")
    hvd.shutdown()


if __name__ == "__main__":
    main()
