#!/usr/bin/python3
"""torch.distributed (Gloo) collective timings, the peer of hvd-bench in compare_allreduce.sh
and compare_collectives.sh.

Spawns N local processes itself (no torchrun: its 5 s monitor interval and the Debian
torch 1.13 / Python 3.11 Std.from_str bug are avoided), rendezvous over a TCPStore on
127.0.0.1. Same method as hvd-bench: float32 SUM, 2 warm-up ops, iterations calibrated to
~0.3 s per round, per-round max over ranks, median of the rounds.

  /usr/bin/python3 bench/torch_gloo_bench.py -n 2 --sizes 4096,65536 [--rounds 5]
  /usr/bin/python3 bench/torch_gloo_bench.py -n 2 --many 100x16384
  /usr/bin/python3 bench/torch_gloo_bench.py -n 2 --op allgather --sizes 4096,65536

--op (default allreduce) takes hvd-bench's collectives, with hvd-bench's meaning of bytes and
what a torch user writes for the result hvd returns: broadcast (the buffer, from rank 0, in
place), allgather (the gathered output: all_gather into a fresh list, then torch.cat, since
Gloo has no all_gather_into_tensor in torch 1.13), alltoall (the per-rank input:
all_to_all_single into a fresh tensor), reducescatter (the input; Gloo has no reduce_scatter
in torch 1.13: printed as "RESULT <bytes> unsupported").

Prints a table and, per size, a machine-readable line "RESULT <bytes> <median_us>"
("RESULT many-fused|many-single <K> <median_us>" for --many).
"""
import argparse
import os
import socket

os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
import time  # noqa: E402


def max_over_ranks(value):
    t = torch.tensor([value], dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.item()


def timed(fn, rounds, round_seconds=0.3):
    for _ in range(2):
        fn()
    t0 = time.perf_counter()
    for _ in range(3):
        fn()
    est = max_over_ranks((time.perf_counter() - t0) / 3)
    iters = max(3, min(2000, int(round_seconds / est)))
    times = []
    for _ in range(rounds):
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        times.append(max_over_ranks((time.perf_counter() - t0) / iters))
    times.sort()
    return iters, times


def bind(rank, n):
    """hvdrun --bind-to core's rule: local rank r of n gets CPUs [r*C/n, (r+1)*C/n) of the
    allowed C; nobody is bound when ranks outnumber CPUs."""
    cpus = sorted(os.sched_getaffinity(0))
    if n > len(cpus):
        return
    os.sched_setaffinity(0, cpus[rank * len(cpus) // n:(rank + 1) * len(cpus) // n])


# nccl-tests' bus-bandwidth factors, as hvd-bench prints them.
BUS_FACTOR = {
    "allreduce": lambda n: 2 * (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "allgather": lambda n: (n - 1) / n,
    "alltoall": lambda n: (n - 1) / n,
    "reducescatter": lambda n: (n - 1) / n,
}


def collective(op, size, n):
    """One op of `size` bytes (hvd-bench's meaning) as a torch user writes it, or None when
    this torch's Gloo lacks it."""
    floats = max(size // 4, 1)
    if op == "allreduce":
        t = torch.ones(floats)
        return lambda: dist.all_reduce(t)
    if op == "broadcast":
        t = torch.ones(floats)
        return lambda: dist.broadcast(t, 0)
    if op == "allgather":
        t = torch.ones(max(floats // n, 1))

        def gather():
            parts = [torch.empty_like(t) for _ in range(n)]
            dist.all_gather(parts, t)
            return torch.cat(parts)
        return gather
    if op == "alltoall":
        t = torch.ones(max(floats // n, 1) * n)
        return lambda: dist.all_to_all_single(torch.empty_like(t), t)
    if op == "reducescatter":
        t = torch.ones(max(floats // n, 1) * n)
        scatter = getattr(dist, "reduce_scatter_tensor", None)
        if scatter is None:
            return None
        try:  # Gloo refuses it before communicating, on every rank alike
            scatter(torch.empty(t.numel() // n), t)
        except RuntimeError:
            return None
        return lambda: scatter(torch.empty(t.numel() // n), t)
    raise ValueError(op)


def worker(rank, n, port, args):
    if args.bind == "core":
        bind(rank, n)
    torch.set_num_threads(1)
    store = dist.TCPStore("127.0.0.1", port, n, rank == 0)
    dist.init_process_group("gloo", store=store, rank=rank, world_size=n)
    if args.many:
        k, size = (int(x) for x in args.many.split("x"))
        tensors = [torch.ones(size // 4) for _ in range(k)]

        def fused():
            works = [dist.all_reduce(t, async_op=True) for t in tensors]
            for w in works:
                w.wait()

        def single():
            for t in tensors:
                dist.all_reduce(t)

        _, tf = timed(fused, args.rounds)
        _, ts = timed(single, args.rounds)
        if rank == 0:
            f, s = tf[len(tf) // 2], ts[len(ts) // 2]
            print(f"# torch {torch.__version__} gloo: {k} x {size} B, n={n}")
            print(f"async (all, then wait) {f * 1e6:10.1f} us   one by one {s * 1e6:10.1f} us")
            print(f"RESULT many-fused {k} {f * 1e6:.1f}")
            print(f"RESULT many-single {k} {s * 1e6:.1f}")
    else:
        if rank == 0:
            print(f"# torch {torch.__version__} gloo {args.op} float32, n={n}, rounds={args.rounds}")
            print(f"{'bytes':>12} {'iters':>6} {'time_us':>12} {'min_us':>12} {'busbw_GB/s':>11}")
        for size in (int(s) for s in args.sizes.split(",")):
            op = collective(args.op, size, n)
            if op is None:
                if rank == 0:
                    print(f"RESULT {size} unsupported", flush=True)
                continue
            iters, times = timed(op, args.rounds)
            med = times[len(times) // 2]
            if rank == 0:
                busbw = size / med / 1e9 * BUS_FACTOR[args.op](n)
                print(f"{size:12d} {iters:6d} {med * 1e6:12.1f} {times[0] * 1e6:12.1f} {busbw:11.3f}")
                print(f"RESULT {size} {med * 1e6:.1f}", flush=True)
    dist.barrier()
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("-n", type=int, default=2)
    parser.add_argument("--op", default="allreduce", choices=sorted(BUS_FACTOR))
    parser.add_argument("--sizes", default="4096,65536,1048576,16777216,67108864")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--many", default="")
    parser.add_argument("--bind", choices=["none", "core"], default="none",
                        help="core: bind each rank as hvdrun --bind-to core does")
    args = parser.parse_args()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.start_processes(worker, args=(args.n, port, args), nprocs=args.n, start_method="fork")


if __name__ == "__main__":
    main()
