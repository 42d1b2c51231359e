"""Worker for test_torch_gpu.py's own jobs (run under hvdrun).

allreduce  -- three allreduces of a CUDA tensor, checked.
gather     -- allgather (uneven rows), reducescatter and alltoall (with splits) of CUDA tensors,
              checked, and their outputs hvd's device memory (torch's allocator grows by
              nothing: no host copy moved in) when the job runs on NCCL (each rank its host).
gather-without-numpy -- the same in an interpreter where `import numpy` fails (PyTorch 2.x
              does not install numpy; hvd.torch reads CUDA outputs through DLPack, not
              through __cuda_array_interface__, which torch reads only with numpy).
kill-peer  -- rank 1 dies (os._exit) after three allreduces; rank 0 keeps allreducing and must
              get HorovodInternalError, which it prints with the time it took.
kill-peer:OP -- the same with rank 0 calling OP (allreduce, allgather, reducescatter, alltoall,
              broadcast) after the death.
"""
import os
import signal
import sys
import time

if sys.argv[1:] == ["gather-without-numpy"]:
    sys.modules["numpy"] = None  # before torch: `import numpy` raises ImportError from here on
import torch  # noqa: E402

import hvd.torch as hvd  # noqa: E402


def main(mode: str) -> int:
    hvd.init()
    torch.cuda.set_device(hvd.local_rank() % torch.cuda.device_count())
    x = torch.full((1 << 16,), 1.0 + hvd.rank(), device="cuda")
    expected = float(sum(r + 1 for r in range(hvd.size())))
    for i in range(3):
        out = hvd.allreduce(x, op=hvd.Sum, name=f"step.{i}")
        assert torch.all(out == expected).item(), out
    if mode == "allreduce":
        hvd.shutdown()
        return 0
    if mode in ("gather", "gather-without-numpy"):
        gather_checks()
        hvd.shutdown()
        if mode == "gather-without-numpy":
            try:
                import numpy  # noqa: F401
            except ImportError:
                return 0
            return 4  # numpy was importable: the check did not check anything
        return 0
    if hvd.rank() == 1:
        os._exit(9)
    # hvdrun ends the job once rank 1 has died; ignoring its SIGTERM lets the survivor show
    # what its own collective did (the test gives a long grace period before SIGKILL).
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    op = mode.split(":")[1] if ":" in mode else "allreduce"
    calls = {
        "allreduce": lambda i: hvd.allreduce(x, op=hvd.Sum, name=f"after.{i}"),
        "allgather": lambda i: hvd.allgather(x, name=f"after.{i}"),
        "reducescatter": lambda i: hvd.reducescatter(x, op=hvd.Sum, name=f"after.{i}"),
        "alltoall": lambda i: hvd.alltoall(x, name=f"after.{i}"),
        "broadcast": lambda i: hvd.broadcast(x, root_rank=1, name=f"after.{i}"),
    }
    started = time.monotonic()
    try:
        for i in range(100000):
            calls[op](i)
    except hvd.HorovodInternalError as error:
        print(f"survivor: HorovodInternalError after {time.monotonic() - started:.2f} s: {error}",
              flush=True)
        return 3
    return 0


def _grown(call):
    """call()'s result, and how much torch's allocator grew meanwhile (a staged output moved
    to the device grows it by the output; hvd's device output by nothing)."""
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    result = call()
    return result, torch.cuda.memory_allocated() - before


def gather_checks() -> None:
    size, rank = hvd.size(), hvd.rank()
    x = torch.full((rank + 1, 3), float(rank), device="cuda")
    gathered, grown = _grown(lambda: hvd.allgather(x, name="g.allgather"))
    expected = torch.cat([torch.full((r + 1, 3), float(r)) for r in range(size)])
    assert torch.equal(gathered.cpu(), expected), gathered
    assert grown == 0, f"allgather: torch allocated {grown} bytes (a host output moved in?)"
    y = torch.arange(2 * size + 1, dtype=torch.float32, device="cuda") + rank
    scattered, grown = _grown(lambda: hvd.reducescatter(y, op=hvd.Sum, name="g.reducescatter"))
    total = sum(torch.arange(2 * size + 1, dtype=torch.float32) + r for r in range(size))
    first = sum(3 if k == 0 else 2 for k in range(rank))  # rank 0 gets 3 rows, the others 2
    assert torch.equal(scattered.cpu(), total[first:first + scattered.numel()]), scattered
    assert grown == 0, f"reducescatter: torch allocated {grown} bytes"
    splits = [rank + 1 if k == 0 else 1 for k in range(size)]
    rows = torch.full((sum(splits), 2), float(rank), device="cuda")
    (out, received), grown = _grown(lambda: hvd.alltoall(rows, splits=splits, name="g.alltoall"))
    assert received.is_cuda
    assert received.tolist() == [r + 1 if rank == 0 else 1 for r in range(size)], received
    assert torch.equal(out.cpu()[:, 0], torch.cat([torch.full((n,), float(r)) for r, n in
                                                   enumerate(received.tolist())])), out
    assert grown <= 512, f"alltoall: torch allocated {grown} bytes (only the received splits)"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
