"""Collective operations on torch tensors (Horovod's horovod.torch.mpi_ops).

Tensors are handed to libhvd as descriptors of their memory (host, or a CUDA device with the
producer's current stream, which the runtime waits on through an event). Each ``*_async`` call
returns an integer handle; hvd.torch._handles keeps the tensors the runtime reads or writes
alive until ``synchronize`` (or ``poll`` + ``synchronize``) completes the handle. Outputs
whose size depends on other ranks (allgather, alltoall, reducescatter) are runtime buffers
wrapped without a copy and freed with the last tensor that views them (hvd.torch._outputs):
device memory for CUDA inputs whose process set runs on NCCL, else host memory (moved to the
input's device for CUDA inputs whose set stages through the host).

Names are prefixed as Horovod does ("allreduce.<name>"); unnamed operations are named
"<op>.noname.<set id>.<n>" with n counted per process set, which requires the members of a
set to issue their unnamed operations on it in the same order (as in Horovod).
"""
import functools
import warnings
from typing import Callable, List, Optional, Tuple

import torch

from hvd import _hvd_c as _c
from hvd.basics import Adasum, Average, Max, Min, Product, Sum, cuda_built, rank
# Horovod's torch/mpi_ops.py defines these, and scripts import them from there
# (`from horovod.torch.mpi_ops import size, local_rank`): until 2026-12-01 only is_homogeneous
# and rank were here, and such an import failed.
from hvd.basics import (ccl_built, cross_rank, cross_size, ddl_built, gloo_built,  # noqa: F401
                        gloo_enabled, init, is_homogeneous, is_initialized, local_rank,
                        local_size, mpi_built, mpi_enabled, mpi_threads_supported, nccl_built,
                        rocm_built, shutdown, size, start_timeline, stop_timeline)
from hvd.process_sets import add_process_set, remove_process_set  # noqa: F401
from hvd.exceptions import HorovodInternalError  # noqa: F401  (Horovod's mpi_ops has it)
from hvd.process_sets import (ProcessSet, global_process_set, operation_name, registered_id,
                              root_rank_arg)
from hvd.torch._handles import (Handle, _enqueue, _forget, _op_error, _run_blocking,  # noqa: F401
                                _start, poll, synchronize)
from hvd.torch._outputs import (_TORCH_TO_HVD, _current_stream, _from_buffer, _output_tensor,
                                _outputs_on)
from hvd.torch.compression import Compression

_REDUCE_OPS = (Average, Sum, Adasum, Min, Max, Product)

Descriptor = Tuple[int, int, Tuple[int, ...], int]


def _require_tensors(tensors, op: str) -> list:
    """The tensors of a grouped op as a list (a generator or other iterable taken once: until
    2026-12-01 one was enqueued and then indexed, a TypeError after the op had started). A
    grouped op of no tensors is the caller's mistake, said as such (it was "not enough values to
    unpack" or the C API's "tensor list must be non-NULL")."""
    if isinstance(tensors, torch.Tensor) or not hasattr(tensors, "__iter__"):
        raise TypeError(f"{op} expects a list of torch.Tensor, got {type(tensors).__name__}")
    tensors = list(tensors)
    if not tensors:
        raise ValueError(f"{op} needs at least one tensor; got an empty list")
    # One fused buffer on one device: a CPU tensor beside a CUDA one (or two GPUs) is refused
    # here with Horovod's error type (its extension raises RuntimeError), before anything runs.
    first = tensors[0].device if isinstance(tensors[0], torch.Tensor) else None
    for i, t in enumerate(tensors):
        if first is not None and isinstance(t, torch.Tensor) and t.device != first:
            raise RuntimeError(f"{op}: tensor {i} is on {t.device} but tensor 0 on {first}; "
                               "the tensors of one grouped op must be on one device")
    return tensors


def _require_tensor(tensor, op: str) -> None:
    """A non-tensor is the caller's mistake, said as such (it was an AttributeError about
    `requires_grad` or `shape` from deep inside)."""
    if not isinstance(tensor, torch.Tensor):
        hint = " (hvd.numpy takes NumPy arrays)" if type(tensor).__module__ == "numpy" else ""
        raise TypeError(f"{op} expects a torch.Tensor, got {type(tensor).__name__}{hint}")


# The build does not change while the process runs: ask libhvd once (the per-tensor checks).
_cuda_built = functools.cache(cuda_built)


def _prepare(tensor: torch.Tensor) -> Tuple[torch.Tensor, Descriptor]:
    """A contiguous view (or copy) of `tensor`'s data and its descriptor. For a CUDA tensor
    the device's current stream is handed to the next runtime call, which orders its reads
    after the work queued there."""
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"expected a torch.Tensor, got {type(tensor).__name__}")
    if tensor.device.type == "cuda":
        if not _cuda_built():
            raise NotImplementedError("this hvd was built without CUDA and NCCL (hvdrun -cb); "
                                      "move the tensor to the CPU (tensor.cpu())")
    elif tensor.device.type != "cpu":
        raise NotImplementedError(f"{tensor.device.type} tensors are not supported")
    if tensor.is_sparse:
        raise ValueError("sparse tensors are not supported here; use sparse_allreduce_async or "
                         "DistributedOptimizer(sparse_as_dense=True)")
    code = _TORCH_TO_HVD.get(tensor.dtype)
    if code is None:
        raise ValueError(f"Tensor type {tensor.dtype} is not supported.")
    data = tensor.detach()
    if not data.is_contiguous():
        data = data.contiguous()
    device = data.device.index if data.is_cuda else _c.DEVICE_CPU
    if data.is_cuda:  # after _prepare's own checks (it is for the next enqueue; module.cc)
        _c.set_cuda_stream(_current_stream(device))
    return data, (data.data_ptr(), code, tuple(data.shape), device)


def _target(prefix: str, name: Optional[str], process_set: ProcessSet) -> Tuple[str, int]:
    """(runtime name, process set id) of an operation; see process_sets.operation_name."""
    set_id = registered_id(process_set)
    return operation_name(prefix, name, process_set), set_id


def _plain_code(tensor) -> Optional[int]:
    """The dtype code of a dense, contiguous CPU tensor, or CUDA tensor in a build with the GPU
    path (the synchronous fast path); None for anything else, which takes the general path (and
    its checks and error messages)."""
    if (isinstance(tensor, torch.Tensor) and tensor.layout is torch.strided and
            (tensor.is_cpu or (tensor.is_cuda and _cuda_built())) and tensor.is_contiguous()):
        return _TORCH_TO_HVD.get(tensor.dtype)
    return None


def _host_code(tensor) -> Optional[int]:
    """_plain_code for a CPU tensor only: the synchronous calls of the other collectives
    (their outputs are host memory, which a CUDA caller needs moved: the general path)."""
    return _plain_code(tensor) if isinstance(tensor, torch.Tensor) and tensor.is_cpu else None


def _no_graph(tensor: torch.Tensor) -> bool:
    """No autograd graph would be recorded for an op on `tensor`."""
    return not (tensor.requires_grad and torch.is_grad_enabled())


def _allreduce_now(tensor: torch.Tensor, output: torch.Tensor, code: int, name, op,
                   prescale_factor, postscale_factor, process_set: ProcessSet) -> None:
    """allreduce of `tensor` into `output` (contiguous, same dtype and shape; may be `tensor`)
    and wait, in one runtime call: no handle, no descriptor tuples."""
    op_name, set_id = _target("allreduce", name, process_set)
    device, stream = _c.DEVICE_CPU, 0
    if tensor.is_cuda:
        device = tensor.device.index
        stream = _current_stream(device)
    try:
        _c.allreduce_now(tensor.data_ptr(), output.data_ptr(), code, tensor.shape, op_name, op,
                         float(prescale_factor), float(postscale_factor), set_id, device, stream,
                         (tensor, output))
    except _c.Error as error:
        raise _op_error(error) from None


def handle_average_backwards_compatibility(op: Optional[int], average: Optional[bool]) -> int:
    """Horovod's helper (mpi_ops.handle_average_backwards_compatibility): the reduce op that
    `op` and the deprecated `average` mean together."""
    return _resolve_op(average, op)


def _resolve_op(average: Optional[bool], op: Optional[int]) -> int:
    if op is not None and average is not None:
        raise ValueError("The op parameter supersedes average. Please provide only one of them.")
    if average is not None:
        warnings.warn("Parameter `average` has been replaced with `op` and will be removed",
                      DeprecationWarning)
        op = Average if average else Sum
    if op is None:
        op = Average
    if op not in _REDUCE_OPS:
        raise ValueError(f"unknown reduce op {op!r}")
    return op


def _copy_back(target: torch.Tensor, result: torch.Tensor) -> torch.Tensor:
    """Writes `result` into the user's non-contiguous in-place tensor."""
    if target.data_ptr() != result.data_ptr() or not target.is_contiguous():
        with torch.no_grad():
            target.copy_(result)
    return target


# ---- allreduce ----------------------------------------------------------------------------

def _allreduce_async(tensor: torch.Tensor, output: Optional[torch.Tensor], name, op,
                     prescale_factor, postscale_factor, process_set) -> Handle:
    code = _host_code(tensor)
    if code is not None and (output is None or output.is_contiguous()):
        # A contiguous CPU tensor (DistributedOptimizer's gradients): its memory as it is, the
        # runtime's descriptors built in C (allreduce_start), no copy back. CUDA tensors keep
        # the general path (verified on a GPU; this one has not been yet).
        result = tensor if output is None else output
        op_name, set_id = _target("allreduce", name, process_set)
        return _start((tensor, result), lambda _: result,
                      _c.allreduce_start, tensor.data_ptr(), result.data_ptr(), code,
                      tensor.shape, op_name, op, float(prescale_factor),
                      float(postscale_factor), set_id)
    data, desc = _prepare(tensor)
    if output is None:  # in place: reduce into `data`, then copy back if it was a copy
        result, out_desc = data, desc
        finish = lambda _: _copy_back(tensor, result)
    else:
        result = output
        out_desc = (output.data_ptr(), desc[1], desc[2], desc[3])
        finish = lambda _: result
    op_name, set_id = _target("allreduce", name, process_set)
    return _start((tensor, data, result), finish,
                  _c.allreduce, desc, out_desc, op_name, op, float(prescale_factor),
                  float(postscale_factor), set_id)


def allreduce_async(tensor, average=None, name=None, op=None, prescale_factor=1.0,
                    postscale_factor=1.0, process_set=global_process_set) -> Handle:
    """Starts an allreduce of `tensor` into a new tensor; returns a handle for synchronize()."""
    _require_tensor(tensor, "allreduce_async")
    op = _resolve_op(average, op)
    output = torch.empty(tensor.shape, dtype=tensor.dtype, device=tensor.device)
    return _allreduce_async(tensor, output, name, op, prescale_factor, postscale_factor,
                            process_set)


def allreduce_async_(tensor, average=None, name=None, op=None, prescale_factor=1.0,
                     postscale_factor=1.0, process_set=global_process_set) -> Handle:
    """Starts an in-place allreduce of `tensor`; returns a handle for synchronize()."""
    _require_tensor(tensor, "allreduce_async_")
    op = _resolve_op(average, op)
    return _allreduce_async(tensor, None, name, op, prescale_factor, postscale_factor,
                            process_set)


class HorovodAllreduce(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, average, name, op, prescale_factor, postscale_factor, process_set):
        ctx.average, ctx.op, ctx.process_set = average, op, process_set
        ctx.prescale_factor, ctx.postscale_factor = prescale_factor, postscale_factor
        return synchronize(allreduce_async(tensor, average, name, op, prescale_factor,
                                           postscale_factor, process_set))

    @staticmethod
    def backward(ctx, grad_output):
        grad = allreduce(grad_output, average=ctx.average, op=ctx.op,
                         prescale_factor=ctx.prescale_factor,
                         postscale_factor=ctx.postscale_factor, process_set=ctx.process_set)
        return grad, None, None, None, None, None, None


def allreduce(tensor, average=None, name=None, compression=Compression.none, op=None,
              prescale_factor=1.0, postscale_factor=1.0, process_set=global_process_set):
    """Reduces `tensor` over all ranks of `process_set` (Average by default) into a new
    tensor. Differentiable: the gradient is the allreduce of the gradient with the same op."""
    if compression is Compression.none:
        code = _plain_code(tensor)  # None for a non-tensor too: checked below, off this path
        if code is not None and _no_graph(tensor):  # no graph: skip autograd, one runtime call
            op = _resolve_op(average, op)
            output = torch.empty_like(tensor)
            _allreduce_now(tensor, output, code, name, op, prescale_factor, postscale_factor,
                           process_set)
            return output
    _require_tensor(tensor, "allreduce")
    compressed, ctx = compression.compress(tensor)
    reduced = HorovodAllreduce.apply(compressed, average, name, op, prescale_factor,
                                     postscale_factor, process_set)
    return compression.decompress(reduced, ctx)


def allreduce_(tensor, average=None, name=None, op=None, prescale_factor=1.0,
               postscale_factor=1.0, process_set=global_process_set):
    """In-place allreduce; returns `tensor`."""
    code = _plain_code(tensor)
    if code is not None:
        _allreduce_now(tensor, tensor, code, name, _resolve_op(average, op), prescale_factor,
                       postscale_factor, process_set)
        return tensor
    return synchronize(allreduce_async_(tensor, average, name, op, prescale_factor,
                                        postscale_factor, process_set))


def _grouped_allreduce_async(tensors, outputs, name, op, prescale_factor, postscale_factor,
                             process_set) -> Handle:
    prepared = [_prepare(t) for t in tensors]
    descs = [desc for _, desc in prepared]
    if outputs is None:
        results = [data for data, _ in prepared]
        out_descs = descs
        finish = lambda _: [_copy_back(t, r) for t, r in zip(tensors, results)]
    else:
        results = outputs
        out_descs = [(o.data_ptr(), d[1], d[2], d[3]) for o, d in zip(outputs, descs)]
        finish = lambda _: list(results)
    op_name, set_id = _target("grouped_allreduce", name, process_set)
    return _start((list(tensors), prepared, results), finish,
                  _c.grouped_allreduce, descs, out_descs, op_name, op, float(prescale_factor),
                  float(postscale_factor), set_id)


def grouped_allreduce_async(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                            postscale_factor=1.0, process_set=global_process_set) -> Handle:
    """Allreduces a list of tensors as one fused group; synchronize() returns a list."""
    tensors = _require_tensors(tensors, "grouped_allreduce")
    op = _resolve_op(average, op)
    outputs = [torch.empty(t.shape, dtype=t.dtype, device=t.device) for t in tensors]
    return _grouped_allreduce_async(tensors, outputs, name, op, prescale_factor,
                                    postscale_factor, process_set)


def grouped_allreduce_async_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                             postscale_factor=1.0, process_set=global_process_set) -> Handle:
    tensors = _require_tensors(tensors, "grouped_allreduce")
    op = _resolve_op(average, op)
    return _grouped_allreduce_async(tensors, None, name, op, prescale_factor, postscale_factor,
                                    process_set)


class HorovodGroupedAllreduce(torch.autograd.Function):
    @staticmethod
    def forward(ctx, average, name, op, prescale_factor, postscale_factor, process_set,
                *tensors):
        ctx.average, ctx.op, ctx.process_set = average, op, process_set
        ctx.prescale_factor, ctx.postscale_factor = prescale_factor, postscale_factor
        return tuple(synchronize(grouped_allreduce_async(
            list(tensors), average, name, op, prescale_factor, postscale_factor, process_set)))

    @staticmethod
    def backward(ctx, *grad_output):
        grads = grouped_allreduce(list(grad_output), average=ctx.average, op=ctx.op,
                                  prescale_factor=ctx.prescale_factor,
                                  postscale_factor=ctx.postscale_factor,
                                  process_set=ctx.process_set)
        return (None,) * 6 + tuple(grads)


def grouped_allreduce(tensors, average=None, name=None, compression=Compression.none, op=None,
                      prescale_factor=1.0, postscale_factor=1.0, process_set=global_process_set):
    """Differentiable grouped allreduce; returns a list of new tensors."""
    tensors = _require_tensors(tensors, "grouped_allreduce")
    compressed, ctxs = zip(*[compression.compress(t) for t in tensors])
    reduced = HorovodGroupedAllreduce.apply(average, name, op, prescale_factor,
                                            postscale_factor, process_set, *compressed)
    return [compression.decompress(t, c) for t, c in zip(reduced, ctxs)]


def grouped_allreduce_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                       postscale_factor=1.0, process_set=global_process_set):
    return synchronize(grouped_allreduce_async_(tensors, average, name, op, prescale_factor,
                                                postscale_factor, process_set))


def sparse_allreduce_async(tensor, name, op, process_set=global_process_set) -> Callable:
    """Allreduces a sparse COO tensor as two allgathers (indices, values); returns a callable
    that waits and builds the result."""
    indices_handle = allgather_async(tensor._indices().transpose(0, 1).contiguous(),
                                     name=f"{name}.indices", process_set=process_set)
    values_handle = allgather_async(tensor._values(), name=f"{name}.values",
                                    process_set=process_set)

    def handle():
        values = synchronize(values_handle)
        indices = synchronize(indices_handle)
        if op == Average:
            values = values / process_set.size()
        if indices.dim() == 0 or values.dim() == 0:
            return tensor.new().resize_as_(tensor)
        return torch.sparse_coo_tensor(indices.transpose(0, 1), values, tensor.size())

    return handle


# ---- allgather ----------------------------------------------------------------------------

def allgather_async(tensor, name=None, process_set=global_process_set) -> Handle:
    """Starts concatenating `tensor` from every rank along dim 0 (first dims may differ)."""
    _require_tensor(tensor, "allgather_async")
    data, desc = _prepare(tensor)
    return _start((data,), lambda h: _output_tensor(h, 0, tensor.device),
                  _c.allgather, desc, *_target("allgather", name, process_set))


class HorovodAllgather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, name, process_set):
        ctx.dim = tensor.shape[0]
        ctx.process_set = process_set
        return synchronize(allgather_async(tensor, name, process_set))

    @staticmethod
    def backward(ctx, grad_output):
        grad_reduced = allreduce(grad_output, op=Average, process_set=ctx.process_set)
        dims = allgather(torch.tensor([ctx.dim], dtype=torch.int64),
                         process_set=ctx.process_set)
        offset = int(dims[:ctx.process_set.rank()].sum())
        return grad_reduced.narrow(0, offset, ctx.dim), None, None


def allgather(tensor, name=None, process_set=global_process_set):
    """Concatenation of `tensor` from every rank along dim 0. Differentiable: the gradient is
    the averaged gradient's slice that belongs to this rank."""
    code = _host_code(tensor)
    if code is not None and _no_graph(tensor):  # one runtime call, no autograd node
        return _from_buffer(_enqueue(_c.allgather_now, tensor.data_ptr(), code, tensor.shape,
                                     *_target("allgather", name, process_set), tensor))
    _require_tensor(tensor, "allgather")
    return HorovodAllgather.apply(tensor, name, process_set)


def grouped_allgather_async(tensors, name=None, process_set=global_process_set) -> Handle:
    tensors = _require_tensors(tensors, "grouped_allgather")
    prepared = [_prepare(t) for t in tensors]
    return _start((prepared,), _outputs_on(tensors[0].device),
                  _c.grouped_allgather, [d for _, d in prepared],
                  *_target("grouped_allgather", name, process_set))


class HorovodGroupedAllgather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, name, process_set, *tensors):
        ctx.dims = [t.shape[0] for t in tensors]
        ctx.process_set = process_set
        return tuple(synchronize(grouped_allgather_async(list(tensors), name, process_set)))

    @staticmethod
    def backward(ctx, *grad_output):
        grads = grouped_allreduce(list(grad_output), op=Average, process_set=ctx.process_set)
        dims = allgather(torch.tensor([ctx.dims], dtype=torch.int64),
                         process_set=ctx.process_set)
        offsets = dims[:ctx.process_set.rank()].sum(dim=0)
        return (None, None) + tuple(g.narrow(0, int(o), d)
                                    for g, o, d in zip(grads, offsets, ctx.dims))


def grouped_allgather(tensors, name=None, process_set=global_process_set):
    tensors = _require_tensors(tensors, "grouped_allgather")
    return list(HorovodGroupedAllgather.apply(name, process_set, *tensors))


# ---- broadcast ----------------------------------------------------------------------------

def _broadcast_async(tensor, output, root_rank, name, process_set) -> Handle:
    data, desc = _prepare(tensor)
    if output is None:
        result, out_desc = data, desc
        finish = lambda _: _copy_back(tensor, result)
    else:
        result = output
        out_desc = (output.data_ptr(), desc[1], desc[2], desc[3])
        finish = lambda _: result
    return _start((tensor, data, result), finish,
                  _c.broadcast, desc, out_desc, root_rank_arg(root_rank),
                  *_target("broadcast", name, process_set))


def broadcast_async(tensor, root_rank, name=None, process_set=global_process_set) -> Handle:
    """Starts broadcasting `tensor` from global rank `root_rank` into a new tensor."""
    _require_tensor(tensor, "broadcast_async")
    output = torch.empty(tensor.shape, dtype=tensor.dtype, device=tensor.device)
    return _broadcast_async(tensor, output, root_rank, name, process_set)


def broadcast_async_(tensor, root_rank, name=None, process_set=global_process_set) -> Handle:
    """Starts an in-place broadcast of `tensor` from global rank `root_rank`."""
    _require_tensor(tensor, "broadcast_async_")
    return _broadcast_async(tensor, None, root_rank, name, process_set)


class HorovodBroadcast(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, root_rank, name, process_set):
        ctx.root_rank, ctx.process_set = root_rank, process_set
        return synchronize(broadcast_async(tensor, root_rank, name, process_set))

    @staticmethod
    def backward(ctx, grad_output):
        grad_reduced = allreduce(grad_output, op=Average, process_set=ctx.process_set)
        if rank() != ctx.root_rank:
            grad_reduced = grad_reduced * 0
        return grad_reduced, None, None, None


def _broadcast_now(tensor, output, code, root_rank, name, process_set) -> None:
    op_name, set_id = _target("broadcast", name, process_set)
    _enqueue(_c.broadcast_now, tensor.data_ptr(), output.data_ptr(), code, tensor.shape,
             root_rank_arg(root_rank), op_name, set_id, (tensor, output))


def broadcast(tensor, root_rank, name=None, process_set=global_process_set):
    """`tensor` of global rank `root_rank`, on every rank. Differentiable: the root gets the
    averaged gradient, the other ranks zero."""
    code = _host_code(tensor)
    if code is not None and _no_graph(tensor):
        output = torch.empty_like(tensor, memory_format=torch.contiguous_format)
        _broadcast_now(tensor, output, code, root_rank, name, process_set)
        return output
    _require_tensor(tensor, "broadcast")
    return HorovodBroadcast.apply(tensor, root_rank, name, process_set)


def broadcast_(tensor, root_rank, name=None, process_set=global_process_set):
    """In-place broadcast; returns `tensor`."""
    code = _host_code(tensor)
    if code is not None:
        _broadcast_now(tensor, tensor, code, root_rank, name, process_set)
        return tensor
    _require_tensor(tensor, "broadcast_")
    return synchronize(broadcast_async_(tensor, root_rank, name, process_set))


# ---- alltoall -----------------------------------------------------------------------------

def _splits_list(splits) -> Optional[List[int]]:
    if splits is None:
        return None
    if isinstance(splits, torch.Tensor):
        if splits.dtype not in (torch.int32, torch.int64) or splits.dim() > 1:
            raise ValueError("alltoall splits must be a 1-D int32 tensor or a list of ints")
        return [int(s) for s in splits.tolist()]
    return [int(s) for s in splits]


def _received_device(tensor: torch.Tensor, splits) -> torch.device:
    """Where received_splits go: a splits tensor's device (Horovod makes them with
    splits.new(): CUDA splits of a CPU tensor give CUDA ones, CPU splits of a CUDA tensor CPU
    ones); for splits given as a list or None, the tensor's device."""
    return splits.device if isinstance(splits, torch.Tensor) else tensor.device


def alltoall_async(tensor, splits=None, name=None, process_set=global_process_set) -> Handle:
    """Starts an alltoall: rows of dim 0 go to the set's ranks according to `splits` (equal
    parts if None). synchronize() returns (output, received_splits)."""
    _require_tensor(tensor, "alltoall_async")
    data, desc = _prepare(tensor)
    split_list = _splits_list(splits)
    received_on = _received_device(tensor, splits)
    # The set's size now: a set removed after the op completed but before synchronize() has
    # none (until 2026-12-01 synchronize() then raised TypeError and the output was lost).
    set_size = process_set.size()

    def finish(h: Handle):
        received = _c.received_splits(h, set_size)
        return (_output_tensor(h, 0, tensor.device),
                torch.tensor(received, dtype=torch.int32, device=received_on))

    return _start((data,), finish,
                  _c.alltoall, desc, split_list, *_target("alltoall", name, process_set))


class HorovodAlltoall(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, splits, name, process_set):
        output, received_splits = synchronize(alltoall_async(tensor, splits, name, process_set))
        ctx.process_set = process_set
        ctx.received_splits = received_splits
        ctx.rows = tensor.shape[0] if tensor.dim() > 0 else None
        if splits is None:
            return output
        ctx.mark_non_differentiable(received_splits)
        return output, received_splits

    @staticmethod
    def backward(ctx, grad_output, *unused):
        grad, _ = synchronize(alltoall_async(grad_output, ctx.received_splits,
                                             process_set=ctx.process_set))
        if ctx.rows is not None and grad.shape[0] < ctx.rows:  # rows past the splits: not sent
            grad = torch.cat([grad, grad.new_zeros((ctx.rows - grad.shape[0],) + grad.shape[1:])])
        return grad, None, None, None


def alltoall(tensor, splits=None, name=None, process_set=global_process_set):
    """Scatters rows of `tensor` to the set's ranks and gathers what they send. Returns the
    output, or (output, received_splits) when `splits` is given. Differentiable."""
    code = _host_code(tensor)
    if code is not None and _no_graph(tensor):
        op_name, set_id = _target("alltoall", name, process_set)
        buffer, received = _enqueue(_c.alltoall_now, tensor.data_ptr(), code, tensor.shape,
                                    _splits_list(splits), op_name, set_id, process_set.size(),
                                    tensor)
        output = _from_buffer(buffer)
        if splits is None:
            return output
        return output, torch.tensor(received, dtype=torch.int32,
                                    device=_received_device(tensor, splits))
    _require_tensor(tensor, "alltoall")
    return HorovodAlltoall.apply(tensor, splits, name, process_set)


# ---- reducescatter ------------------------------------------------------------------------

def _check_reducescatter_op(op: int) -> int:
    if op not in (Average, Sum):
        raise NotImplementedError("reducescatter supports only Sum and Average")
    return op


def reducescatter_async(tensor, name=None, op=Average, process_set=global_process_set,
                        prescale_factor=1.0, postscale_factor=1.0) -> Handle:
    """Starts a reduction whose result is split along dim 0 across the set's ranks (the first
    dim0 % size ranks get one more row)."""
    _require_tensor(tensor, "reducescatter_async")
    op = _check_reducescatter_op(op)
    data, desc = _prepare(tensor)
    op_name, set_id = _target("reducescatter", name, process_set)
    return _start((data,), lambda h: _output_tensor(h, 0, tensor.device),
                  _c.reducescatter, desc, op_name, op, float(prescale_factor),
                  float(postscale_factor), set_id)


def _reducescatter_grad_scale(op, process_set, prescale_factor, postscale_factor) -> float:
    """Horovod's convention: the gradient is allgather(grad) times size() for Sum and times 1
    for Average (as the gradient of an allreduce is the allreduce of the gradient), times both
    scale factors."""
    scale = float(prescale_factor) * float(postscale_factor)
    return scale * process_set.size() if op == Sum else scale


class HorovodReducescatter(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, name, op, process_set, prescale_factor, postscale_factor):
        ctx.process_set = process_set
        ctx.scale = _reducescatter_grad_scale(op, process_set, prescale_factor, postscale_factor)
        return synchronize(reducescatter_async(tensor, name, op, process_set, prescale_factor,
                                               postscale_factor))

    @staticmethod
    def backward(ctx, grad_output):
        grad = allgather(grad_output, process_set=ctx.process_set) * ctx.scale
        return grad, None, None, None, None, None


def reducescatter(tensor, name=None, compression=Compression.none, op=Average,
                  process_set=global_process_set, prescale_factor=1.0, postscale_factor=1.0):
    """Reduce-scatter of `tensor` (Sum or Average). Differentiable: the gradient is the
    allgather of the gradient, times size() for Sum (Horovod's convention) and the scale
    factors."""
    code = _host_code(tensor)
    if compression is Compression.none and code is not None and _no_graph(tensor):
        op = _check_reducescatter_op(op)
        op_name, set_id = _target("reducescatter", name, process_set)
        return _from_buffer(_enqueue(_c.reducescatter_now, tensor.data_ptr(), code, tensor.shape,
                                     op_name, op, float(prescale_factor), float(postscale_factor),
                                     set_id, tensor))
    _require_tensor(tensor, "reducescatter")
    compressed, ctx = compression.compress(tensor)
    reduced = HorovodReducescatter.apply(compressed, name, op, process_set, prescale_factor,
                                         postscale_factor)
    return compression.decompress(reduced, ctx)


def grouped_reducescatter_async(tensors, name=None, op=Average, process_set=global_process_set,
                                prescale_factor=1.0, postscale_factor=1.0) -> Handle:
    tensors = _require_tensors(tensors, "grouped_reducescatter")
    op = _check_reducescatter_op(op)
    prepared = [_prepare(t) for t in tensors]
    op_name, set_id = _target("grouped_reducescatter", name, process_set)
    return _start((prepared,), _outputs_on(tensors[0].device),
                  _c.grouped_reducescatter, [d for _, d in prepared], op_name, op,
                  float(prescale_factor), float(postscale_factor), set_id)


class HorovodGroupedReducescatter(torch.autograd.Function):
    @staticmethod
    def forward(ctx, name, op, process_set, prescale_factor, postscale_factor, *tensors):
        ctx.process_set = process_set
        ctx.scale = _reducescatter_grad_scale(op, process_set, prescale_factor, postscale_factor)
        return tuple(synchronize(grouped_reducescatter_async(
            list(tensors), name, op, process_set, prescale_factor, postscale_factor)))

    @staticmethod
    def backward(ctx, *grad_output):
        grads = grouped_allgather(list(grad_output), process_set=ctx.process_set)
        return (None,) * 5 + tuple(g * ctx.scale for g in grads)


def grouped_reducescatter(tensors, name=None, compression=Compression.none, op=Average,
                          process_set=global_process_set, prescale_factor=1.0,
                          postscale_factor=1.0):
    tensors = _require_tensors(tensors, "grouped_reducescatter")
    compressed, ctxs = zip(*[compression.compress(t) for t in tensors])
    reduced = HorovodGroupedReducescatter.apply(name, op, process_set, prescale_factor,
                                                postscale_factor, *compressed)
    return [compression.decompress(t, c) for t, c in zip(reduced, ctxs)]


# ---- synchronization ----------------------------------------------------------------------

def join(device: int = -1) -> int:
    """Declares that this rank has no more data: until every rank joined, it contributes
    zeros to the others' allreduces. Blocks until all joined; returns the last rank to join."""
    return _run_blocking(_c.join_result, _c.join, int(device))


def barrier(process_set: ProcessSet = global_process_set) -> None:
    """Blocks until every rank of `process_set` reached the barrier."""
    _run_blocking(lambda _: None, _c.barrier, registered_id(process_set))
