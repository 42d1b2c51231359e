"""Python overhead of hvd.torch / hvd.numpy over the C API, per op (issue target: <= 10 us).

    hvdrun -np 1 /usr/bin/python3 bench/python_overhead.py      (or plain python3: size 1)

Times a 4 KiB float32 Sum allreduce through each path and through the C API itself (the
hvd._hvd_c calls hvd_allreduce + hvd_wait + hvd_release, the least any binding must do), and
the same for allgather, broadcast, alltoall and reducescatter (their C API rows also take the
output: hvd_output; "+" columns are against the C API row of the same collective). Two
clocks: wall time, and the calling thread's own CPU time (time.thread_time: what the Python
layer adds on this thread, unaffected by the background thread and by waiting). Variants run
in interleaved rounds so machine load drifts over all of them alike; medians of the rounds.

A second table times each Python path with the runtime calls replaced by no-ops: the Python
layer's own cost, which does not move with the machine's load or the thread hand-off.
"""
import argparse
import statistics
import time

import numpy as np
import torch

import hvd.numpy as hnp
import hvd.torch as hvd
import hvd.torch.mpi_ops as torch_ops
from hvd import _hvd_c as _c


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--elements", type=int, default=1024)
    parser.add_argument("--iters", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    torch.set_num_threads(1)
    hvd.init()
    t = torch.ones(args.elements)
    a = np.ones(args.elements, dtype=np.float32)
    desc = (t.data_ptr(), _c.FLOAT32, tuple(t.shape), _c.DEVICE_CPU)

    def c_api():
        h = _c.allreduce(desc, desc, "allreduce.c_api", hvd.Sum, 1.0, 1.0, 0)
        _c.wait(h)
        _c.release(h)

    def c_api_output(enqueue):
        def run():
            h = enqueue()
            _c.wait(h)
            _c.output(h, 0)  # freed with the returned buffer, as a binding's tensor would
            _c.release(h)
        return run

    def c_api_broadcast():
        h = _c.broadcast(desc, desc, 0, "broadcast.c_api", 0)
        _c.wait(h)
        _c.release(h)

    # op -> {path: function}; the first path of each op is its C API baseline.
    ops = {
        "allreduce": {
            "C API (hvd_allreduce+wait+release)": c_api,
            "hvd.torch.allreduce_ (in place)":
                lambda: hvd.allreduce_(t, name="inplace", op=hvd.Sum),
            "hvd.torch.allreduce": lambda: hvd.allreduce(t, name="outofplace", op=hvd.Sum),
            "hvd.torch.allreduce_async_+synchronize":
                lambda: hvd.synchronize(hvd.allreduce_async_(t, name="async", op=hvd.Sum)),
            "hvd.numpy.allreduce": lambda: hnp.allreduce(a, name="numpy", op=hvd.Sum),
        },
        "allgather": {
            "C API allgather (+hvd_output)":
                c_api_output(lambda: _c.allgather(desc, "allgather.c_api", 0)),
            "hvd.torch.allgather": lambda: hvd.allgather(t, name="ag"),
            "hvd.numpy.allgather": lambda: hnp.allgather(a, name="ag_np"),
        },
        "broadcast": {
            "C API broadcast": c_api_broadcast,
            "hvd.torch.broadcast_ (in place)": lambda: hvd.broadcast_(t, 0, name="bc_"),
            "hvd.torch.broadcast": lambda: hvd.broadcast(t, 0, name="bc"),
            "hvd.numpy.broadcast": lambda: hnp.broadcast(a, 0, name="bc_np"),
        },
        "alltoall": {
            "C API alltoall (+hvd_output)":
                c_api_output(lambda: _c.alltoall(desc, None, "alltoall.c_api", 0)),
            "hvd.torch.alltoall": lambda: hvd.alltoall(t, name="a2a"),
        },
        "reducescatter": {
            "C API reducescatter (+hvd_output)": c_api_output(
                lambda: _c.reducescatter(desc, "reducescatter.c_api", hvd.Sum, 1.0, 1.0, 0)),
            "hvd.torch.reducescatter": lambda: hvd.reducescatter(t, name="rs", op=hvd.Sum),
        },
    }
    variants = {k: f for paths in ops.values() for k, f in paths.items()}
    wall = {k: [] for k in variants}
    cpu = {k: [] for k in variants}
    for f in variants.values():
        for _ in range(200):
            f()
    for _ in range(args.rounds):
        for key, f in variants.items():
            c0, w0 = time.thread_time(), time.perf_counter()
            for _ in range(args.iters):
                f()
            cpu[key].append((time.thread_time() - c0) / args.iters * 1e6)
            wall[key].append((time.perf_counter() - w0) / args.iters * 1e6)
    print(f"# {args.elements * 4} B float32 (allreduce and reducescatter: Sum), size "
          f"{hvd.size()}, median of {args.rounds} interleaved rounds x {args.iters} ops")
    print(f"{'path':40s} {'wall_us':>9} {'+wall':>8} {'thread_cpu_us':>14} {'+cpu':>8}")
    for paths in ops.values():
        base = next(iter(paths))
        base_w, base_c = statistics.median(wall[base]), statistics.median(cpu[base])
        for key in paths:
            w, c = statistics.median(wall[key]), statistics.median(cpu[key])
            print(f"{key:40s} {w:9.1f} {w - base_w:+8.1f} {c:14.1f} {c - base_c:+8.1f}")
    layer_only(ops, t, args)


class _NoRuntime:
    """hvd._hvd_c with the calls that reach the runtime replaced by no-ops; the synchronous
    calls that return an output return `output` (a real one, taken before)."""

    def __init__(self, output):
        self.output = output

    def __getattr__(self, name):
        return getattr(_c, name)

    def allreduce_now(self, *args):
        pass

    def broadcast_now(self, *args):
        pass

    def allgather_now(self, *args):
        return self.output

    def reducescatter_now(self, *args):
        return self.output

    def alltoall_now(self, *args):
        return self.output, []

    def allreduce(self, *args):
        return 1

    def wait(self, handle):
        pass

    def release(self, handle):
        pass


def layer_only(ops, t, args) -> None:
    output = _c.allgather_now(t.data_ptr(), _c.FLOAT32, t.shape, "allgather.stub", 0)
    torch_ops._c = hnp._c = _NoRuntime(output)
    try:
        print(f"\n{'python layer alone (runtime calls stubbed)':40s} {'thread_cpu_us':>14}")
        for paths in ops.values():
            for key, f in list(paths.items())[1:]:
                if "async" in key:
                    continue  # its handle bookkeeping needs a live runtime
                samples = []
                for _ in range(args.rounds):
                    c0 = time.thread_time()
                    for _ in range(args.iters):
                        f()
                    samples.append((time.thread_time() - c0) / args.iters * 1e6)
                print(f"{key:40s} {statistics.median(samples):14.2f}")
    finally:
        torch_ops._c = hnp._c = _c


if __name__ == "__main__":
    main()
