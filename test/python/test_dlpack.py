"""Runtime-allocated outputs as DLPack capsules (`__dlpack__`), the way hvd.torch turns every
allgather, alltoall and reducescatter output into a tensor: host outputs here, and the CUDA
outputs of NCCL by the same call on a GPU (test_gpu_buffers.py reads a DeviceBuffer's capsule on
the emulated GPU). Checked: each dtype and shape as torch reads it, the buffer kept alive by the
tensor and let go when it dies, an unconsumed capsule letting go too, a deleter called without
the GIL (torch frees storage on any thread), and the requests a producer must refuse.
"""
import gc
import sys
import threading

import pytest
import torch
from torch.utils.dlpack import from_dlpack

from dlpack_abi import deleter, take
from hvd import _hvd_c as _c
from hvd.torch._outputs import _TORCH_TO_HVD

_DTYPES = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
           torch.bfloat16, torch.float32, torch.float64, torch.bool]


def _gathered(hvd, tensor, name):
    """An allgather's output buffer (an OutputBuffer: host memory the runtime allocated)."""
    handle = _c.allgather((tensor.data_ptr(), _TORCH_TO_HVD[tensor.dtype], list(tensor.shape),
                           -1), name, 0)
    _c.wait(handle)
    buffer = _c.output(handle, 0)
    _c.release(handle)
    return buffer


def _rows(rank, dtype):
    return (torch.arange(12).view(3, 4) + rank).remainder(5).to(dtype)


@pytest.mark.parametrize("dtype", _DTYPES, ids=str)
def test_every_dtype_and_shape_reads_as_the_output(hvd, dtype):
    size = hvd.size()
    buffer = _gathered(hvd, _rows(hvd.rank(), dtype), f"dlpack.{dtype}")
    want = torch.cat([_rows(r, dtype) for r in range(size)])
    assert buffer.__dlpack_device__() == (1, 0)  # kDLCPU
    through_capsule = from_dlpack(buffer.__dlpack__())  # hvd.torch's call
    through_protocol = torch.from_dlpack(buffer)  # a user's
    # bool travels as uint8 (torch 1.x refuses DLPack's kDLBool); the others as themselves.
    carried = torch.uint8 if dtype == torch.bool else dtype
    for got in (through_capsule, through_protocol):
        assert got.dtype == carried and tuple(got.shape) == (3 * size, 4)
        assert got.is_contiguous() and got.stride() == (4, 1)
        assert torch.equal(got.view(dtype) if dtype == torch.bool else got, want)
    # Both views are the runtime's memory, not copies.
    assert through_capsule.data_ptr() == through_protocol.data_ptr()


def test_the_tensor_keeps_the_buffer_alive_and_lets_it_go(hvd):
    buffer = _gathered(hvd, _rows(hvd.rank(), torch.float32), "dlpack.alive")
    alone = sys.getrefcount(buffer)
    tensor = from_dlpack(buffer.__dlpack__())
    assert sys.getrefcount(buffer) == alone + 1
    want = tensor.clone()
    view = tensor[1:]
    del buffer, tensor
    gc.collect()
    # The buffer outlives its last Python name while a view of the tensor lives.
    assert torch.equal(view, want[1:])
    # And dies with the last view: a buffer seen through a second tensor is let go twice.
    buffer = _gathered(hvd, _rows(hvd.rank(), torch.float32), "dlpack.twice")
    alone = sys.getrefcount(buffer)
    first, second = from_dlpack(buffer.__dlpack__()), torch.from_dlpack(buffer)
    assert sys.getrefcount(buffer) == alone + 2
    del first
    assert sys.getrefcount(buffer) == alone + 1
    del second
    assert sys.getrefcount(buffer) == alone


def test_an_unconsumed_capsule_lets_the_buffer_go_and_a_used_one_is_refused(hvd):
    buffer = _gathered(hvd, _rows(hvd.rank(), torch.int32), "dlpack.unused")
    alone = sys.getrefcount(buffer)
    capsule = buffer.__dlpack__()
    assert sys.getrefcount(buffer) == alone + 1
    del capsule
    assert sys.getrefcount(buffer) == alone
    capsule = buffer.__dlpack__()
    tensor = from_dlpack(capsule)
    with pytest.raises(RuntimeError):  # torch renamed it "used_dltensor": it owns it now
        from_dlpack(capsule)
    del capsule
    assert sys.getrefcount(buffer) == alone + 1  # the tensor's reference only
    del tensor
    assert sys.getrefcount(buffer) == alone


def test_the_deleter_takes_the_gil_itself(hvd):
    # Given a consumed capsule whose buffer has no other reference,
    buffer = _gathered(hvd, _rows(hvd.rank(), torch.int64), "dlpack.gil")
    address, managed = take(buffer.__dlpack__())
    assert (managed.device_type, managed.device_id, managed.ndim) == (1, 0, 2)
    assert (managed.code, managed.bits, managed.lanes) == (0, 64, 1)
    assert [managed.shape[0], managed.shape[1]] == [3 * hvd.size(), 4]
    assert [managed.strides[0], managed.strides[1]] == [4, 1]
    del buffer
    # when its deleter runs on a thread that does not hold the GIL (ctypes releases it around
    # the call; torch frees storage on whichever thread drops the last reference),
    worker = threading.Thread(target=deleter(managed), args=(address,))
    worker.start()
    worker.join(timeout=30)
    # then it returns, having let the buffer go (a deleter that touched the reference count
    # without the GIL would crash the interpreter in the buffer's deallocation),
    assert not worker.is_alive()
    gc.collect()
    # and the runtime still works.
    assert hvd.allreduce(torch.ones(1), op=hvd.Sum).item() == float(hvd.size())


def test_a_request_for_another_device_or_a_copy_is_refused(hvd):
    buffer = _gathered(hvd, _rows(hvd.rank(), torch.float32), "dlpack.refused")
    with pytest.raises(BufferError, match=r"on DLPack device \(1, 0\), not \(2, 0\)"):
        buffer.__dlpack__(dl_device=(2, 0))
    with pytest.raises(BufferError, match="in place"):
        buffer.__dlpack__(copy=True)
    # What the array API lets a consumer pass is taken: its own device, no copy, a version.
    assert buffer.__dlpack__(stream=None, max_version=(1, 0), dl_device=(1, 0), copy=False)
