"""Runtime-allocated outputs (allgather, alltoall, reducescatter) as torch tensors, without a
copy: a DLPack capsule of the output (an OutputBuffer in host memory, a DeviceBuffer in the CUDA
memory of an op that ran on NCCL) read by torch.utils.dlpack.from_dlpack, the same call on either
device and with any torch since 1.10 (torch reads __cuda_array_interface__ only through numpy).
The capsule's deleter keeps the buffer alive while any view of the tensor lives. A DeviceBuffer
that dies gives its memory back in the order of its device's current stream then
(set_stream_getter below): work queued there on the tensor finishes first; work on another
stream must be ordered before it by the caller. Tensor.record_stream does nothing here: torch
honours it only for its caching allocator's memory (docs/gpu.md). A host
output of a CUDA input (a set that stages through the host) is moved to the input's device.
"""
from typing import Callable, List, Optional

import torch
from torch.utils.dlpack import from_dlpack as _from_dlpack

from hvd import _hvd_c as _c

_TORCH_TO_HVD = {
    torch.uint8: _c.UINT8, torch.int8: _c.INT8, torch.int16: _c.INT16, torch.int32: _c.INT32,
    torch.int64: _c.INT64, torch.float16: _c.FLOAT16, torch.bfloat16: _c.BFLOAT16,
    torch.float32: _c.FLOAT32, torch.float64: _c.FLOAT64, torch.bool: _c.BOOL,
}
_HVD_TO_TORCH = {code: dtype for dtype, code in _TORCH_TO_HVD.items()}


def _current_stream(index: int) -> int:
    """The address of `index`'s current CUDA stream (torch's raw accessor where it has one: a
    Stream object costs microseconds per call)."""
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw(index)
    return torch.cuda.current_stream(index).cuda_stream


def _output_tensor(handle: int, index: int, device: Optional[torch.device] = None) -> torch.Tensor:
    """Output `index` of a completed handle; on `device` when given (the input's CUDA device:
    the runtime returns device memory there when the op ran on NCCL, host memory when it was
    staged)."""
    tensor = _from_buffer(_c.output(handle, index))
    if device is not None and device.type == "cuda" and not tensor.is_cuda:
        return tensor.to(device)
    return tensor


def _from_buffer(buffer) -> torch.Tensor:
    """A tensor over a runtime output (an OutputBuffer or a DeviceBuffer) without a copy; the
    output is freed with the last view of it."""
    dtype = _HVD_TO_TORCH[buffer.dtype]
    if buffer.nbytes == 0:
        device = "cpu" if buffer.device < 0 else torch.device("cuda", buffer.device)
        return torch.empty(buffer.shape, dtype=dtype, device=device)  # `buffer` dies here
    tensor = _from_dlpack(buffer.__dlpack__())  # its dtype, shape and device
    return tensor.view(torch.bool) if dtype == torch.bool else tensor  # bool comes as uint8


def _outputs_on(device: torch.device) -> Callable[[int], List[torch.Tensor]]:
    return lambda handle: [_output_tensor(handle, i, device)
                           for i in range(_c.num_outputs(handle))]


# A DeviceBuffer that dies is freed after the work queued on its device's current stream then.
_c.set_stream_getter(_current_stream)
