"""hvd.torch without numpy: PyTorch 2.x does not depend on it, so a user may not have it. Every
op whose output the runtime allocates, and the object collectives, must work then (before
2026-11-27 hvd.torch read CUDA outputs through torch.as_tensor(__cuda_array_interface__) and the
objects through Tensor.numpy(), both "Numpy is not available" without it). Runs a one-rank job
in a fresh interpreter in which `import numpy` fails, outside any launcher."""
import os
import subprocess
import sys

import hvd

_SCRIPT = r"""
import sys
sys.modules["numpy"] = None  # `import numpy` raises ImportError from here on
import torch
import hvd.torch as hvd
hvd.init()
x = torch.arange(6, dtype=torch.float32).view(2, 3)
assert torch.equal(hvd.allgather(x), x)
assert torch.equal(hvd.allgather(torch.tensor([True, False])), torch.tensor([True, False]))
assert torch.equal(hvd.allgather(x.to(torch.bfloat16)), x.to(torch.bfloat16))
out, received = hvd.alltoall(x, splits=torch.tensor([2]))
assert torch.equal(out, x) and received.tolist() == [2]
assert torch.equal(hvd.reducescatter(x, op=hvd.Sum), x)
assert hvd.broadcast_object({"a": [1, 2]}, root_rank=0) == {"a": [1, 2]}
assert hvd.allgather_object(("b", 3)) == [("b", 3)]
handle = hvd.allgather_async(x, name="async")
assert torch.equal(hvd.synchronize(handle), x)
# A training step as a Horovod script takes it, and the elastic state's sync.
model = torch.nn.Sequential(torch.nn.Linear(3, 4), hvd.SyncBatchNorm(4), torch.nn.Linear(4, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
hvd.broadcast_parameters(model.state_dict(), root_rank=0)
optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters(),
                                     compression=hvd.Compression.fp16)
hvd.broadcast_optimizer_state(optimizer, root_rank=0)
loss = model(torch.randn(8, 3)).square().mean()
optimizer.zero_grad()
loss.backward()
optimizer.step()
from hvd.torch.elastic import TorchState
state = TorchState(model=model, optimizer=optimizer, epoch=2)
state.sync()
assert state.epoch == 2
hvd.shutdown()
try:
    import numpy  # noqa: F401
except ImportError:
    print("ok without numpy")
"""


def test_hvd_torch_runs_without_numpy():
    # Outside hvdrun: a single rank of its own.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HVD_", "HOROVOD_"))}
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(os.path.abspath(hvd.__file__)))
    run = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "ok without numpy" in run.stdout
