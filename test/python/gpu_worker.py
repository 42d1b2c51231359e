"""Worker for test_torch_gpu.py's own jobs (run under hvdrun).

allreduce  -- three allreduces of a CUDA tensor, checked.
kill-peer  -- rank 1 dies (os._exit) after three allreduces; rank 0 keeps allreducing and must
              get HorovodInternalError, which it prints with the time it took.
"""
import os
import signal
import sys
import time

import torch

import hvd.torch as hvd


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
    if hvd.rank() == 1:
        os._exit(9)
    # hvdrun ends the job once rank 1 has died; ignoring its SIGTERM lets the survivor show
    # what its own collective did (the test gives a long grace period before SIGKILL).
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    started = time.monotonic()
    try:
        for i in range(100000):
            hvd.allreduce(x, op=hvd.Sum, name=f"after.{i}")
    except hvd.HorovodInternalError as error:
        print(f"survivor: HorovodInternalError after {time.monotonic() - started:.2f} s: {error}",
              flush=True)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
