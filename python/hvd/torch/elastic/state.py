"""TorchState: elastic state of a model, an optimizer, samplers and plain attributes
(Horovod's horovod.torch.elastic.state)."""
import copy
from typing import Any, Dict, Tuple

import torch

from hvd.basics import rank
from hvd.elastic import ObjectState
from hvd.torch.elastic.sampler import ElasticSampler
from hvd.torch.functions import (broadcast_object, broadcast_optimizer_state,
                                 broadcast_parameters)


class StateHandler:
    """Saves, restores and synchronizes one kind of value held by a TorchState."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def save(self) -> None:
        raise NotImplementedError

    def restore(self) -> None:
        raise NotImplementedError

    def sync(self) -> None:
        raise NotImplementedError

    def set_value(self, value: Any) -> None:
        self.value = value
        self.save()

    def reset(self) -> None:
        """After every re-init (the number of ranks may have changed)."""


class _StateDictHandler(StateHandler):
    """A handler for objects with state_dict()/load_state_dict(): saves a deep copy."""

    def __init__(self, value: Any) -> None:
        super().__init__(value)
        self.save()

    def save(self) -> None:
        self._saved = copy.deepcopy(self.value.state_dict())

    def restore(self) -> None:
        # A copy: torch >= 2.1's Optimizer.load_state_dict keeps the tensors it is given (of the
        # right dtype and device) as its state, which later steps then change in place; a
        # second failure before the next commit would restore those.
        self.value.load_state_dict(copy.deepcopy(self._saved))


class ModelStateHandler(_StateDictHandler):
    def sync(self) -> None:
        broadcast_parameters(self.value.state_dict(), root_rank=0)


class OptimizerStateHandler(_StateDictHandler):
    def sync(self) -> None:
        broadcast_optimizer_state(self.value, root_rank=0)


class SamplerStateHandler(_StateDictHandler):
    def sync(self) -> None:
        self.value.load_state_dict(broadcast_object(self.value.state_dict(),
                                                    name="ElasticSampler.state"))

    def reset(self) -> None:
        # Re-shard the rest of the epoch over the new ranks, also when the sync is skipped.
        self.value.reset()


class LRSchedulerStateHandler(_StateDictHandler):
    """An LR scheduler (not in Horovod's TorchState): saved and restored with the model, and
    synced from rank 0, so a worker that joins an elastic job steps its schedule from rank 0's
    epoch. As a plain attribute it became an unpickled copy bound to a copy of the optimizer on
    the other ranks, and a scheduler rebuilt in a reset callback started a joiner (which runs
    no reset callback) at epoch 0: its learning rate left rank 0's at the next milestone."""

    def sync(self) -> None:
        self.value.load_state_dict(broadcast_object(self.value.state_dict(),
                                                    name="LRScheduler.state"))


# torch 1.13 names the base class _LRScheduler (2.x: LRScheduler, the old name kept); its
# ReduceLROnPlateau derives from neither before 2.2.
_SCHEDULER_TYPES = tuple(
    t for t in (getattr(torch.optim.lr_scheduler, "LRScheduler", None),
                getattr(torch.optim.lr_scheduler, "_LRScheduler", None),
                getattr(torch.optim.lr_scheduler, "ReduceLROnPlateau", None)) if t is not None)

_handler_registry = [
    (torch.nn.Module, ModelStateHandler),
    (torch.optim.Optimizer, OptimizerStateHandler),
    (ElasticSampler, SamplerStateHandler),
    (_SCHEDULER_TYPES, LRSchedulerStateHandler),
]


def get_handler_registry():
    return _handler_registry


def set_handler_registry(registry) -> None:
    global _handler_registry
    _handler_registry = registry


def _get_handler(value: Any):
    for handler_type, handler_cls in _handler_registry:
        if isinstance(value, handler_type):
            return handler_cls(value)
    return None


def _get_handlers(kwargs: Dict[str, Any]) -> Tuple[Dict[str, StateHandler], Dict[str, Any]]:
    handlers, remainder = {}, {}
    for key, value in kwargs.items():
        handler = _get_handler(value)
        if handler is not None:
            handlers[key] = handler
        else:
            remainder[key] = value
    return handlers, remainder


class TorchState(ObjectState):
    """Elastic state: ``model`` and ``optimizer`` (and any nn.Module, Optimizer or
    ElasticSampler keyword) get dedicated handlers; other keywords are plain attributes.
    Assigning a handled attribute saves it at once."""

    def __init__(self, model=None, optimizer=None, **kwargs: Any) -> None:
        kwargs.update(dict(model=model, optimizer=optimizer))
        self._handlers, kwargs = _get_handlers(kwargs)
        for name, handler in self._handlers.items():
            setattr(self, name, handler.value)
        super().__init__(bcast_object=broadcast_object, get_rank=rank, **kwargs)

    def save(self) -> None:
        for handler in self._handlers.values():
            handler.save()
        super().save()

    def restore(self) -> None:
        for handler in self._handlers.values():
            handler.restore()
        super().restore()

    def sync(self) -> None:
        for handler in self._handlers.values():
            handler.sync()
        super().sync()

    def reset(self) -> None:
        for handler in self._handlers.values():
            handler.reset()

    def __setattr__(self, name: str, value: Any) -> None:
        if hasattr(self, name) and name in self._handlers:
            self._handlers[name].set_value(value)
        super().__setattr__(name, value)
