"""Model/optimizer state broadcast and object collectives (Horovod's horovod.torch.functions).

broadcast_object/allgather_object carry any object cloudpickle (or, without it, pickle) can
serialize, as Horovod's and torch.distributed's do: the bytes only ever travel between the
authenticated members of one job. See docs/python.md.
"""
import io
import pickle
from typing import Any, List, Optional, Tuple

import torch

from hvd.basics import rank
from hvd.process_sets import ProcessSet, global_process_set
from hvd.torch.mpi_ops import allgather, broadcast_, broadcast_async_, synchronize

# Sent in place of a size when an object cannot be pickled, so that no rank waits forever.
_UNENCODABLE = -1


def broadcast_parameters(params, root_rank: int, process_set: ProcessSet = global_process_set):
    """Broadcasts parameters or buffers in place from `root_rank`.

    params: a dict such as ``model.state_dict()`` (sent in sorted-name order), or a list of
    tensors or of (name, tensor) pairs such as ``model.named_parameters()``.
    """
    if isinstance(params, dict):
        params = sorted(params.items())
    elif isinstance(params, list):
        params = [p if isinstance(p, tuple) else (None, p) for p in params]
    else:
        raise ValueError(f"invalid params of type: {type(params)}")
    handles = [broadcast_async_(p, root_rank, name, process_set=process_set)
               for name, p in params]
    for handle in handles:
        synchronize(handle)


def _initialize_optimizer_state(optimizer: torch.optim.Optimizer) -> None:
    """Runs one zero-gradient step so a fresh optimizer has state tensors to broadcast; the
    parameters and gradients are put back as they were.

    The step is not a no-op on the model: weight decay (SGD's, Adam's, AdamW's) moves the
    parameters even with zero gradients. Horovod leaves them moved, which is harmless when every
    rank takes the step, but a rank that joins an elastic job (the others' optimizers have state)
    takes it alone, after the model was synchronized: its parameters then differed from every
    other rank's for the rest of the job (up to lr per step of Adam, until 2026-12-01)."""
    touched = []
    for group in optimizer.param_groups:
        for p in group["params"]:
            if p.requires_grad and p not in optimizer.state:
                touched.append((p, p.detach().clone(), p.grad))
                p.grad = p.data.new(p.size()).zero_()
                if isinstance(optimizer, torch.optim.SparseAdam):
                    p.grad = p.grad.to_sparse()
    # A DistributedOptimizer's step() would allreduce; run the wrapped optimizer's step.
    step = getattr(optimizer, "_hvd_base_step", None) or optimizer.step
    step()
    with torch.no_grad():
        for p, data, grad in touched:
            p.copy_(data)
            p.grad = grad


def broadcast_optimizer_state(optimizer: torch.optim.Optimizer, root_rank: int, model=None,
                              process_set: ProcessSet = global_process_set) -> None:
    """Makes every rank's optimizer state (state tensors, scalars and param_group options
    such as the learning rate) equal to `root_rank`'s."""
    if isinstance(optimizer, torch.optim.LBFGS):
        raise ValueError("cannot broadcast torch.optim.LBFGS state")
    if len(optimizer.state_dict()["state"]) == 0:
        _initialize_optimizer_state(optimizer)
    state_dict = optimizer.state_dict()
    if len(state_dict["state"]) == 0:
        return  # a stateless optimizer: nothing to broadcast

    # Each parameter by its state_dict id (the same order on every rank).
    params = {}
    for group, saved in zip(optimizer.param_groups, state_dict["param_groups"]):
        params.update(zip(saved["params"], group["params"]))
    scalars = {}
    layout = []  # (id, key, shape, dtype, on the CPU) of each state tensor
    # (group index, key, shape, dtype, on the CPU) of each tensor-valued option (a capturable or
    # fused Adam's lr tensor): broadcast into the rank's own tensor, as the state tensors are. A
    # new tensor in its place (pickled with the scalars until 2026-12-02) left a captured CUDA
    # graph, or anything else holding the old one, with the rank's own value.
    group_tensors = []
    for index, group in enumerate(state_dict["param_groups"]):
        options = {}
        for k, v in group.items():
            if k == "params":
                continue
            if torch.is_tensor(v):
                group_tensors.append((index, k, tuple(v.shape), v.dtype, v.device.type == "cpu"))
            else:
                options[k] = v
        scalars[f"group.{index}"] = options
        for pid in group["params"]:
            for key, value in state_dict["state"].get(pid, {}).items():
                if torch.is_tensor(value):
                    layout.append((pid, key, tuple(value.shape), value.dtype,
                                   value.device.type == "cpu"))
                else:
                    scalars[f"state.{pid}.{key}"] = value
    # The root's layout and scalars first, so that a rank whose state covers other parameters
    # or keys takes the root's: the usual resume (only the root loads a checkpoint, which has
    # no state for a parameter that got no gradient) made the others broadcast tensors the
    # root never sent, a wait until the stall shutdown (until 2026-12-01; Horovod's too).
    layout, scalars, group_tensors = broadcast_object(
        (layout, scalars, group_tensors), root_rank, name="broadcast_optimizer_state.layout",
        process_set=process_set)
    wanted = {(pid, key) for pid, key, _, _, _ in layout}
    for pid, p in params.items():
        state = optimizer.state.get(p)
        for key in list(state or ()):
            held = torch.is_tensor(state[key])
            if (held and (pid, key) not in wanted) or (
                    not held and f"state.{pid}.{key}" not in scalars):
                del state[key]  # the root has no such state
    def own_tensor(holder, key, shape, dtype, device):
        """holder[key] when it is a tensor of that shape and dtype, else a new one put there."""
        value = holder.get(key)
        if not torch.is_tensor(value) or tuple(value.shape) != shape or value.dtype != dtype:
            value = torch.zeros(shape, dtype=dtype, device=device)
            holder[key] = value
        return value

    cpu = torch.device("cpu")
    tensors = []
    for pid, key, shape, dtype, on_cpu in layout:
        value = own_tensor(optimizer.state[params[pid]], key, shape, dtype,
                           cpu if on_cpu else params[pid].device)
        tensors.append((f"{key}.{pid}", value))
    for index, key, shape, dtype, on_cpu in group_tensors:
        group = optimizer.param_groups[index]
        device = cpu if on_cpu or not group["params"] else group["params"][0].device
        tensors.append((f"group.{index}.{key}", own_tensor(group, key, shape, dtype, device)))
    # In place: the tensors are the optimizer's own.
    broadcast_parameters(tensors, root_rank, process_set)
    for index, group in enumerate(optimizer.param_groups):
        group.update(scalars[f"group.{index}"])
    for name, value in scalars.items():
        if name.startswith("state."):
            _, pid, key = name.split(".", 2)
            optimizer.state[params[int(pid)]][key] = value


def _pickler():
    """Horovod pickles with cloudpickle (lambdas, local classes and functions travel too);
    imported on first use, not at `import hvd.torch` (it costs start-up time)."""
    try:
        import cloudpickle
        return cloudpickle
    except ImportError:  # pragma: no cover - python3-cloudpickle is in scripts/packages.txt
        return pickle


def _encode(obj: Any) -> Tuple[Optional[torch.Tensor], Optional[Exception]]:
    try:
        buffer = io.BytesIO()
        _pickler().dump(obj, buffer)
    except Exception as error:  # pickling runs user code (__reduce__): any error is possible
        return None, error
    return torch.frombuffer(bytearray(buffer.getvalue()), dtype=torch.uint8), None


def _bytes_of(tensor: torch.Tensor) -> bytearray:
    """A CPU uint8 tensor's bytes, copied without numpy (Tensor.numpy() needs it)."""
    out = bytearray(tensor.numel())
    if out:
        torch.frombuffer(out, dtype=torch.uint8).copy_(tensor)
    return out


def _decode(data: bytes) -> Any:
    return pickle.loads(data)  # cloudpickle's output is standard pickle


def broadcast_object(obj: Any, root_rank: int = 0, name: Optional[str] = None,
                     process_set: ProcessSet = global_process_set) -> Any:
    """Returns `root_rank`'s `obj` on every rank (the root gets its own object back).

    If the root cannot pickle `obj`, the root raises the pickling error and every other rank
    raises TypeError naming the root; no rank is left waiting.
    """
    if name is None:
        name = type(obj).__name__
    size = torch.tensor([_UNENCODABLE], dtype=torch.int64)
    if rank() == root_rank:
        data, error = _encode(obj)
        if data is not None:
            size[0] = data.numel()
        broadcast_(size, root_rank, name + ".sz", process_set)
        if error is not None:
            raise error
        broadcast_(data, root_rank, name + ".t", process_set)
        return obj
    broadcast_(size, root_rank, name + ".sz", process_set)
    if int(size[0]) == _UNENCODABLE:
        raise TypeError(f"broadcast_object: rank {root_rank} could not pickle its object")
    received = bytearray(int(size[0]))  # a pickle is never empty
    broadcast_(torch.frombuffer(received, dtype=torch.uint8), root_rank, name + ".t", process_set)
    return _decode(received)


def allgather_object(obj: Any, name: Optional[str] = None,
                     process_set: ProcessSet = global_process_set) -> List[Any]:
    """Returns the list of every rank's `obj`, in rank order. If any rank cannot pickle its
    object, that rank raises the pickling error and every other rank raises TypeError."""
    if name is None:
        name = type(obj).__name__
    data, error = _encode(obj)
    size = _UNENCODABLE if data is None else data.numel()
    sizes = allgather(torch.tensor([size], dtype=torch.int64), name=name + ".sz",
                      process_set=process_set).tolist()
    if _UNENCODABLE in sizes:
        if error is not None:
            raise error
        failed = [process_set.ranks[i] if process_set.ranks else i
                  for i, s in enumerate(sizes) if s == _UNENCODABLE]
        raise TypeError(f"allgather_object: rank(s) {failed} could not pickle their object")
    gathered = _bytes_of(allgather(data, name=name + ".t", process_set=process_set))
    objects = []
    offset = 0
    for size in sizes:
        objects.append(_decode(memoryview(gathered)[offset:offset + size]))
        offset += size
    return objects
