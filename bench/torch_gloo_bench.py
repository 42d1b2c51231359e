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

The result check: after each size's timed rounds (outside them: in no printed time), the same
op once more on rank-distinctive data with an exact answer (n ranks, rank r; exact in float32):
allreduce in[i] = r + 1 + i % 7, sum n(n+1)/2 + n * (i % 7); broadcast from 0: rank 0 holds
7 + i % 13, the others -1; allgather: rank r's element i is r*1000 + i % 1000, found at
out[r*in_count + i]; alltoall (pieces of `per`): rank r sends rank k in[k*per + j] = r*100 + k +
j % 5, so rank me expects out[k*per + j] = k*100 + me + j % 5; reducescatter (blocks of
`per`): the allreduce's input, rank me expects out[j] = n(n+1)/2 + n * ((me*per + j) % 7);
--many: each tensor t as the allreduce, its data shifted by t. A wrong element is printed to
stderr ("torch_gloo_bench: CHECK FAILED: ..."), the ranks agree, and every rank exits 3 before
the size's RESULT line (the script too); rank 0 prints "# results checked" at the end.
"""
import argparse
import os
import socket
import sys

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
    """One op of `size` bytes (hvd-bench's meaning) as a torch user writes it: (fn, numel),
    fn(t) running it on an input t of numel floats and returning the result, or None when this
    torch's Gloo lacks it."""
    floats = max(size // 4, 1)
    if op == "allreduce":
        def reduce(t):
            dist.all_reduce(t)
            return t
        return reduce, floats
    if op == "broadcast":
        def broadcast(t):
            dist.broadcast(t, 0)
            return t
        return broadcast, floats
    if op == "allgather":
        def gather(t):
            parts = [torch.empty_like(t) for _ in range(n)]
            dist.all_gather(parts, t)
            return torch.cat(parts)
        return gather, max(floats // n, 1)
    if op == "alltoall":
        def alltoall(t):
            out = torch.empty_like(t)
            dist.all_to_all_single(out, t)
            return out
        return alltoall, max(floats // n, 1) * n
    if op == "reducescatter":
        numel = max(floats // n, 1) * n
        scatter = getattr(dist, "reduce_scatter_tensor", None)
        if scatter is None:
            return None

        def reducescatter(t):
            out = torch.empty(t.numel() // n)
            scatter(out, t)
            return out
        try:  # Gloo refuses it before communicating, on every rank alike
            reducescatter(torch.ones(numel))
        except RuntimeError:
            return None
        return reducescatter, numel
    raise ValueError(op)


# ---- the result check (untimed) ----

def sum_input(rank, i):
    """The reductions' check data: element i of rank `rank` (i an int32 tensor)."""
    return (rank + 1 + i % 7).float()


def sum_expected(n, i):
    return (n * (n + 1) // 2 + n * (i % 7)).float()


def check_data(op, rank, n, numel):
    """(this rank's input, the result it must get) for the check of `op` on numel floats."""
    i = torch.arange(numel, dtype=torch.int32)
    if op == "allreduce":
        return sum_input(rank, i), sum_expected(n, i)
    if op == "broadcast":
        want = (7 + i % 13).float()
        return (want.clone() if rank == 0 else torch.full((numel,), -1.0)), want
    if op == "allgather":
        j = torch.arange(numel * n, dtype=torch.int32)
        return (rank * 1000 + i % 1000).float(), ((j // numel) * 1000 + (j % numel) % 1000).float()
    per = numel // n
    if op == "alltoall":
        return ((rank * 100 + i // per + (i % per) % 5).float(),
                ((i // per) * 100 + rank + (i % per) % 5).float())
    if op == "reducescatter":
        mine = rank * per + torch.arange(per, dtype=torch.int32)  # this rank's block
        return sum_input(rank, i), sum_expected(n, mine)
    raise ValueError(op)


def fmt(v):
    """An integer value as "5.0", anything else (a fraction, nan, inf, huge) as %.9g."""
    return f"{v:.1f}" if abs(v) < 1e15 and v == int(v) else f"{v:.9g}"


def wrong(got, want):
    """What is wrong with `got` against `want` ("element 17 is 3.0, expected 5.0"), or None."""
    if got.shape != want.shape:
        return f"the result has shape {tuple(got.shape)}, expected {tuple(want.shape)}"
    bad = (got != want).nonzero()
    if bad.numel() == 0:
        return None
    i = bad[0, 0].item()
    return f"element {i} is {fmt(got[i].item())}, expected {fmt(want[i].item())}"


def agree(what, rank, problem):
    """Every rank learns whether any rank's check failed (those print what, one line each to
    stderr); then all exit 3."""
    if problem is not None:  # one write: not interleaved with another rank's line
        sys.stderr.write(f"torch_gloo_bench: CHECK FAILED: {what} rank {rank}: {problem}\n")
        sys.stderr.flush()
    t = torch.tensor([0.0 if problem is None else 1.0], dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    if t.item() > 0:
        sys.exit(3)


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

        def check(run, mode):
            """One untimed `run` on check data (tensor t shifted by t, so that swapped tensors
            show); then the tensors are ones again, as the timed rounds had them."""
            i = torch.arange(size // 4, dtype=torch.int32)
            for t, tensor in enumerate(tensors):
                tensor.copy_(sum_input(rank, i + t))
            run()
            problem = None
            for t, tensor in enumerate(tensors):
                problem = wrong(tensor, sum_expected(n, i + t))
                if problem is not None:
                    problem = f"tensor {t} {problem}"
                    break
            agree(f"{mode} {k} x {size} B", rank, problem)
            for tensor in tensors:
                tensor.fill_(1.0)

        _, tf = timed(fused, args.rounds)
        check(fused, "many-fused")
        _, ts = timed(single, args.rounds)
        check(single, "many-single")
        if rank == 0:
            f, s = tf[len(tf) // 2], ts[len(ts) // 2]
            print(f"# torch {torch.__version__} gloo: {k} x {size} B, n={n}")
            print(f"async (all, then wait) {f * 1e6:10.1f} us   one by one {s * 1e6:10.1f} us")
            print(f"RESULT many-fused {k} {f * 1e6:.1f}")
            print(f"RESULT many-single {k} {s * 1e6:.1f}")
            print("# results checked")
    else:
        if rank == 0:
            print(f"# torch {torch.__version__} gloo {args.op} float32, n={n}, rounds={args.rounds}")
            print(f"{'bytes':>12} {'iters':>6} {'time_us':>12} {'min_us':>12} {'busbw_GB/s':>11}")
        checked = False
        for size in (int(s) for s in args.sizes.split(",")):
            op = collective(args.op, size, n)
            if op is None:
                if rank == 0:
                    print(f"RESULT {size} unsupported", flush=True)
                continue
            fn, numel = op
            t = torch.ones(numel)
            iters, times = timed(lambda: fn(t), args.rounds)
            data, want = check_data(args.op, rank, n, numel)
            agree(f"{args.op} {size} B", rank, wrong(fn(data), want))
            checked = True
            med = times[len(times) // 2]
            if rank == 0:
                busbw = size / med / 1e9 * BUS_FACTOR[args.op](n)
                print(f"{size:12d} {iters:6d} {med * 1e6:12.1f} {times[0] * 1e6:12.1f} {busbw:11.3f}")
                print(f"RESULT {size} {med * 1e6:.1f}", flush=True)
        if rank == 0 and checked:
            print("# results checked", flush=True)
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
    try:
        mp.start_processes(worker, args=(args.n, port, args), nprocs=args.n, start_method="fork")
    except mp.ProcessExitedException as e:  # a failed check (exit 3) or a crash
        print(f"torch_gloo_bench: {e}", file=sys.stderr)
        sys.exit(e.exit_code if e.exit_code and e.exit_code > 0 else 1)


if __name__ == "__main__":
    main()
