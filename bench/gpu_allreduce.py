"""GPU allreduce benchmark, side by side in one run (run under hvdrun on a GPU machine).

    hvdrun -np 1 python3 bench/gpu_allreduce.py      # NCCL path vs a bare ncclAllReduce
    hvdrun -np 2 python3 bench/gpu_allreduce.py      # staged path vs torch.distributed Gloo

-np 1: hvd.allreduce_ of a CUDA tensor (NCCL; enqueue, negotiation, completion) against a bare
ncclAllReduce of the same buffer through CuPy's NCCL binding plus a stream synchronize, in
nccl-tests' columns (size, count, time, algbw, busbw; busbw = algbw at one rank).

-np >= 2 with each rank its own host (`-H localhost:1,127.0.0.1:1`: hvdrun gives every rank its
NCCL_HOSTID, so NCCL runs several ranks on one GPU over its socket transport): hvd's NCCL path
against torch.distributed's NCCL backend on the same CUDA tensors in the same processes, for
allreduce, allgather and reducescatter (--ops), with the ratio torch/hvd (> 1: hvd faster).

-np >= 2 on one host (ranks share the GPU, so hvd stages through host memory): hvd against
torch.distributed's Gloo backend on the same CUDA tensors in the same processes, and against
the sum of its parts measured here: device->host copy + hvd's CPU allreduce of the same bytes +
host->device copy (pinned). Medians of --iters runs after --warmup; float32 sum. The sides
compared are timed interleaved (paired_medians_us: each iteration runs every side once, a
different one first each time), so that the GPU's and the sockets' drift during a run falls on
all of them alike.
"""
import argparse
import os
import statistics
import time

import torch

import hvd.torch as hvd


def paired_medians_us(fns, warmup, iters):
    """Median us of each of `fns`, timed interleaved: every iteration runs each once, starting
    with the next one in turn."""
    for fn in fns:
        for _ in range(warmup):
            fn()
    samples = [[] for _ in fns]
    for i in range(iters):
        for k in range(len(fns)):
            j = (i + k) % len(fns)
            torch.cuda.synchronize()
            start = time.perf_counter()
            fns[j]()
            torch.cuda.synchronize()
            samples[j].append((time.perf_counter() - start) * 1e6)
    return [statistics.median(s) for s in samples]


def stamp():
    """Where and when: the device and the UTC time, for the table's header."""
    return f"{torch.cuda.get_device_name()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"


def agreed(value):
    """The slowest rank's time: a collective is as fast as its last member."""
    return float(hvd.allreduce(torch.tensor([value]), op=hvd.Max, name="bench.max")[0])


def one_rank(sizes, args):
    import cupy
    from cupy.cuda import nccl
    comm = nccl.NcclCommunicator(1, nccl.get_unique_id(), 0)
    stream = cupy.cuda.Stream(non_blocking=True)
    print(f"# hvd NCCL path vs bare ncclAllReduce, 1 rank, {stamp()}")
    print(f"{'size(B)':>12} {'count':>10} {'bare(us)':>10} {'algbw':>8} {'hvd(us)':>10} "
          f"{'algbw':>8} {'busbw':>8} {'hvd-bare(us)':>13} {'cpu op(us)':>11}")
    for size in sizes:
        count = size // 4
        x = torch.ones(count, device="cuda")
        ptr = x.data_ptr()

        def bare():
            comm.allReduce(ptr, ptr, count, nccl.NCCL_FLOAT32, nccl.NCCL_SUM, stream.ptr)
            stream.synchronize()

        def ours():
            hvd.allreduce_(x, op=hvd.Sum, name="bench")

        # The same call on a one-element CPU tensor: what hvd's Python layer and runtime cost
        # before any GPU work (at one rank the CPU allreduce itself moves nothing).
        c = torch.ones(1)

        def cpu_op():
            hvd.synchronize(hvd.allreduce_async_(c, op=hvd.Sum, name="cpu"))

        b, h, k = paired_medians_us([bare, ours, cpu_op], args.warmup, args.iters)
        print(f"{size:>12} {count:>10} {b:>10.1f} {size / b / 1e3:>8.2f} {h:>10.1f} "
              f"{size / h / 1e3:>8.2f} {size / h / 1e3:>8.2f} {h - b:>13.1f} {k:>11.1f}")


def many_ranks(sizes, args):
    import torch.distributed as dist
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{args.port}",
                            rank=hvd.rank(), world_size=hvd.size())
    n = hvd.size()
    if hvd.rank() == 0:
        print(f"# staged GPU allreduce, {n} ranks sharing one GPU, {stamp()}, float32 sum, "
              "median us")
        print(f"{'size':>8} {'hvd gpu':>10} {'torch gloo':>11} {'d2h+cpu+h2d':>12} "
              f"{'gloo/hvd':>9} {'hvd/parts':>10}")
    for size in sizes:
        count = size // 4
        x = torch.ones(count, device="cuda")
        host = torch.ones(count).pin_memory()
        cpu = torch.ones(count)
        medians = paired_medians_us(
            [lambda: hvd.allreduce_(x, op=hvd.Sum, name="g"), lambda: dist.all_reduce(x),
             lambda: host.copy_(x, non_blocking=True), lambda: x.copy_(host, non_blocking=True),
             lambda: hvd.allreduce_(cpu, op=hvd.Sum, name="c")], args.warmup, args.iters)
        t_hvd, t_gloo, t_d2h, t_h2d, t_cpu = (agreed(m) for m in medians)
        parts = t_d2h + t_cpu + t_h2d
        if hvd.rank() == 0:
            label = f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB"
            print(f"{label:>8} {t_hvd:>10.1f} {t_gloo:>11.1f} {parts:>12.1f} "
                  f"{t_gloo / t_hvd:>9.2f} {t_hvd / parts:>10.2f}")
    dist.destroy_process_group()


def nccl_ranks(sizes, args):
    """Each rank its own host: hvd's NCCL path against torch's NCCL backend, same tensors."""
    import torch.distributed as dist
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{args.port}",
                            rank=hvd.rank(), world_size=hvd.size())
    n = hvd.size()
    if hvd.rank() == 0:
        print(f"# NCCL ranks on one GPU (NCCL_HOSTID per rank), {n} ranks, {stamp()}, float32, "
              "median us of the slowest rank")
        print(f"{'op':>14} {'size':>8} {'hvd':>10} {'torch nccl':>11} {'torch/hvd':>10}")
    for op in args.ops.split(","):
        for size in sizes:
            count = max(size // 4 // n, 1) * n
            x = torch.ones(count, device="cuda")
            if op == "allreduce":
                ours = lambda: hvd.allreduce_(x, op=hvd.Sum, name="n.ar")
                peer = lambda: dist.all_reduce(x)
            elif op == "allgather":
                out = torch.empty(count * n, device="cuda")
                ours = lambda: hvd.allgather(x, name="n.ag")
                peer = lambda: dist.all_gather_into_tensor(out, x)
            elif op == "reducescatter":
                out = torch.empty(count // n, device="cuda")
                ours = lambda: hvd.reducescatter(x, op=hvd.Sum, name="n.rs")
                peer = lambda: dist.reduce_scatter_tensor(out, x)
            else:
                raise SystemExit(f"unknown op {op}: allreduce, allgather or reducescatter")
            t_hvd, t_peer = (agreed(m) for m in paired_medians_us([ours, peer], args.warmup,
                                                                   args.iters))
            if hvd.rank() == 0:
                label = f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB"
                print(f"{op:>14} {label:>8} {t_hvd:>10.1f} {t_peer:>11.1f} "
                      f"{t_peer / t_hvd:>10.2f}")
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="4096,65536,1048576,16777216,67108864")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--port", type=int, default=int(os.environ.get("BENCH_PORT", "29531")))
    parser.add_argument("--ops", default="allreduce,allgather,reducescatter",
                        help="NCCL ranks (each its own host): the collectives to compare")
    args = parser.parse_args()
    hvd.init()
    torch.cuda.set_device(hvd.local_rank() % torch.cuda.device_count())
    sizes = [int(s) for s in args.sizes.split(",")]
    if hvd.size() == 1:
        one_rank(sizes, args)
    elif hvd.local_size() == 1:  # every rank its own host: NCCL ranks on one GPU
        nccl_ranks(sizes, args)
    else:
        many_ranks(sizes, args)
    hvd.shutdown()


if __name__ == "__main__":
    main()
