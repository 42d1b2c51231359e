"""Elastic training for torch (Horovod's horovod.torch.elastic)."""
from typing import Callable

from hvd.basics import init, shutdown
from hvd.elastic import ObjectState, State, run_fn
from hvd.torch.elastic.sampler import ElasticSampler
from hvd.torch.elastic.state import TorchState

__all__ = ["run", "State", "ObjectState", "TorchState", "ElasticSampler"]


def _reset() -> None:
    shutdown()
    init()


def run(func: Callable) -> Callable:
    """Decorator for ``train(state, ...)``: see hvd.elastic.run_fn."""
    return run_fn(func, _reset)
