"""Runtime-allocated outputs (allgather, alltoall, reducescatter) as torch tensors, without a
copy: host memory (an OutputBuffer) by torch.frombuffer; CUDA memory of an op that ran on NCCL (a
DeviceBuffer) by torch.as_tensor through __cuda_array_interface__, which keeps the buffer alive
while any view of the tensor lives. A DeviceBuffer that dies gives its memory back in the order
of its device's current stream then (set_stream_getter below): work queued there on the tensor
finishes first; work on another stream must be ordered before it, as for torch's own allocator
(Tensor.record_stream). A host output of a CUDA input (a set that stages through the host) is
moved to the input's device.
"""
from typing import Callable, List, Optional

import torch

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
    buffer = _c.output(handle, index)
    if buffer.device >= 0:
        return _from_device_buffer(buffer)
    host = _from_buffer(buffer)
    if device is not None and device.type == "cuda":
        return host.to(device)
    return host


def _from_device_buffer(buffer: "_c.DeviceBuffer") -> torch.Tensor:
    """A CUDA tensor over a runtime output in device memory, without a copy: torch.as_tensor
    keeps `buffer` alive while any view lives; it then frees the memory in the order of the
    device's current stream (set_stream_getter below)."""
    dtype, shape = _HVD_TO_TORCH[buffer.dtype], buffer.shape
    device = torch.device("cuda", buffer.device)
    if buffer.nbytes == 0:
        return torch.empty(shape, dtype=dtype, device=device)  # `buffer` is freed with this frame
    flat = torch.as_tensor(buffer, device=device).view(dtype)  # the bytes seen as the dtype
    return flat if len(shape) == 1 else flat.view(shape)


def _from_buffer(buffer: "_c.OutputBuffer") -> torch.Tensor:
    """A tensor over a runtime output without a copy (freed with the last view of it)."""
    dtype, shape = _HVD_TO_TORCH[buffer.dtype], buffer.shape
    if buffer.nbytes == 0:
        return torch.empty(shape, dtype=dtype)
    flat = torch.frombuffer(buffer, dtype=dtype)
    return flat if len(shape) == 1 else flat.view(shape)  # a view costs ~1.5 µs


def _outputs_on(device: torch.device) -> Callable[[int], List[torch.Tensor]]:
    return lambda handle: [_output_tensor(handle, i, device)
                           for i in range(_c.num_outputs(handle))]


# A DeviceBuffer that dies is freed after the work queued on its device's current stream then.
_c.set_stream_getter(_current_stream)
