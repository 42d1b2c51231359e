"""hvd's Python binding with CUDA memory, on the emulated GPU (test/gpu_emulator: CUDA and NCCL
answered on the CPU, preloaded into the ranks), where Debian's torch has no CUDA: the raw
module's ops on device memory given as (address, dtype, shape, device), their runtime-allocated
outputs (a DeviceBuffer on the input's device when the op ran on NCCL, an OutputBuffer in host
memory when the set stages), a DeviceBuffer's __cuda_array_interface__ and DLPack capsule
(hvd.torch's way to a tensor), and its memory given back in the order of the stream the stream
getter names when the last reference dies, also when that is the capsule's. What torch makes of
such a capsule runs only on a GPU (test_torch_gpu.py); of a host one, in test_dlpack.py.

Run under hvdrun with LD_PRELOAD=<libhvd_gpu_emulator.so> and HVD_GPU_EMU_DEVICES; skipped
elsewhere.
"""
import ctypes
import gc
import os
import struct

import pytest

from dlpack_abi import deleter, take
from hvd import _hvd_c as _c

_cuda = ctypes.CDLL(None)
if not hasattr(_cuda, "hvd_gpu_emulator_exit_in_next_collective"):
    pytest.skip("needs the emulated GPU (LD_PRELOAD=libhvd_gpu_emulator.so)",
                allow_module_level=True)

_H2D, _D2H = 1, 2


class _Attributes(ctypes.Structure):  # cudaPointerAttributes (CUDA 12/13: with its reserve)
    _fields_ = [("type", ctypes.c_int), ("device", ctypes.c_int),
                ("devicePointer", ctypes.c_void_p), ("hostPointer", ctypes.c_void_p),
                ("reserved", ctypes.c_long * 8)]


def _check(err, what):
    assert err == 0, f"{what}: CUDA error {err}"


def _upload(values, device):
    _check(_cuda.cudaSetDevice(device), "cudaSetDevice")
    data = struct.pack(f"{len(values)}f", *values)
    ptr = ctypes.c_void_p()
    _check(_cuda.cudaMalloc(ctypes.byref(ptr), ctypes.c_size_t(len(data))), "cudaMalloc")
    _check(_cuda.cudaMemcpy(ptr, data, ctypes.c_size_t(len(data)), _H2D), "cudaMemcpy")
    return ptr.value


def _download(address, count):
    out = ctypes.create_string_buffer(4 * count)
    _check(_cuda.cudaMemcpy(out, ctypes.c_void_p(address), ctypes.c_size_t(4 * count), _D2H),
           "cudaMemcpy back")
    return list(struct.unpack(f"{count}f", out.raw))


def _memory_type(address):
    attr = _Attributes()
    _check(_cuda.cudaPointerGetAttributes(ctypes.byref(attr), ctypes.c_void_p(address)),
           "cudaPointerGetAttributes")
    return attr.type  # 0 unregistered (not, or no longer, CUDA memory), 2 device


@pytest.fixture(scope="module")
def ranks(hvd):
    rank, size = hvd.rank(), hvd.size()
    device = hvd.local_rank() % int(os.environ.get("HVD_GPU_EMU_DEVICES", "1"))
    # Each rank on a GPU of its own: the set runs on (emulated) NCCL and its outputs are device
    # memory; ranks sharing one stage through the host.
    own = hvd.local_size() <= int(os.environ.get("HVD_GPU_EMU_DEVICES", "1"))
    return rank, size, device, own


def test_an_allgather_output_is_a_device_buffer_on_nccl_and_host_memory_when_staged(ranks):
    rank, size, device, own = ranks
    data = _upload([rank * 10.0 + i for i in range(5)], device)
    handle = _c.allgather((data, _c.FLOAT32, [5], device), "pybuf.gather", 0)
    _c.wait(handle)
    buffer = _c.output(handle, 0)
    _c.release(handle)
    want = [r * 10.0 + i for r in range(size) for i in range(5)]
    assert buffer.dtype == _c.FLOAT32 and list(buffer.shape) == [5 * size]
    assert buffer.nbytes == 20 * size
    if not own:
        assert type(buffer).__name__ == "OutputBuffer" and buffer.device == -1
        assert list(struct.unpack(f"{5 * size}f", bytes(memoryview(buffer)))) == want
        return
    assert type(buffer).__name__ == "DeviceBuffer" and buffer.device == device
    iface = buffer.__cuda_array_interface__
    address, read_only = iface["data"]
    assert iface["shape"] == (20 * size,) and iface["typestr"] == "|u1"
    assert iface["version"] == 3 and iface["strides"] is None and iface["stream"] is None
    assert not read_only
    assert _memory_type(address) == 2
    assert _download(address, 5 * size) == want
    _check(_cuda.cudaFree(ctypes.c_void_p(data)), "cudaFree")


def test_a_dying_device_buffer_is_freed_in_the_order_of_the_getters_stream(ranks):
    rank, size, device, own = ranks
    if not own:
        pytest.skip("outputs are host memory when the set stages")
    stream = ctypes.c_void_p()
    _check(_cuda.cudaStreamCreateWithFlags(ctypes.byref(stream), 1), "cudaStreamCreate")
    asked = []

    def getter(d):
        asked.append(d)
        return stream.value

    data = _upload([float(rank)] * 3, device)
    handle = _c.allgather((data, _c.FLOAT32, [3], device), "pybuf.free", 0)
    _c.wait(handle)
    buffer = _c.output(handle, 0)
    _c.release(handle)
    address = buffer.__cuda_array_interface__["data"][0]
    _c.set_stream_getter(getter)
    try:
        del buffer
        gc.collect()
        # Asked for the buffer's device; freed once the work queued on that stream is done.
        assert asked == [device]
        _check(_cuda.cudaStreamSynchronize(stream), "cudaStreamSynchronize")
        assert _memory_type(address) == 0
    finally:
        import hvd.torch._outputs as outputs  # hvd.torch's getter back
        _c.set_stream_getter(outputs._current_stream)
    _check(_cuda.cudaFree(ctypes.c_void_p(data)), "cudaFree")


def test_an_allreduce_of_device_memory_in_place(ranks):
    rank, size, device, _ = ranks
    data = _upload([rank + 1.0, 2.0 * rank], device)
    handle = _c.allreduce((data, _c.FLOAT32, [2], device), (data, _c.FLOAT32, [2], device),
                          "pybuf.sum", _c.OP_SUM, 1.0, 1.0, 0)
    _c.wait(handle)
    _c.release(handle)
    assert _download(data, 2) == [size * (size + 1) / 2.0, float(size * (size - 1))]
    _check(_cuda.cudaFree(ctypes.c_void_p(data)), "cudaFree")


def test_a_device_buffer_as_a_dlpack_capsule_lives_until_its_deleter_runs(ranks):
    # Given an allgather output in device memory, exported as a capsule (what hvd.torch hands
    # torch.utils.dlpack.from_dlpack) and consumed,
    rank, size, device, own = ranks
    if not own:
        pytest.skip("outputs are host memory when the set stages")
    data = _upload([rank * 10.0 + i for i in range(5)], device)
    handle = _c.allgather((data, _c.FLOAT32, [5], device), "pybuf.dlpack", 0)
    _c.wait(handle)
    buffer = _c.output(handle, 0)
    _c.release(handle)
    address = buffer.__cuda_array_interface__["data"][0]
    assert buffer.__dlpack_device__() == (2, device)  # kDLCUDA
    with pytest.raises(BufferError, match=r"not \(1, 0\)"):
        buffer.__dlpack__(dl_device=(1, 0))
    # (torch passes its current stream and a version: the memory is complete, both are taken)
    capsule_address, managed = take(buffer.__dlpack__(stream=1, max_version=(1, 0)))
    # then it describes the output in its own dtype and shape on its device,
    assert managed.data == address
    assert (managed.device_type, managed.device_id, managed.ndim) == (2, device, 1)
    assert (managed.code, managed.bits, managed.lanes) == (2, 32, 1)
    assert managed.shape[0] == 5 * size and managed.strides[0] == 1
    # keeps the memory after the buffer's last Python reference is gone,
    stream = ctypes.c_void_p()
    _check(_cuda.cudaStreamCreateWithFlags(ctypes.byref(stream), 1), "cudaStreamCreate")
    _c.set_stream_getter(lambda d: stream.value)
    try:
        del buffer
        gc.collect()
        assert _memory_type(address) == 2
        assert _download(address, 5 * size) == [r * 10.0 + i for r in range(size)
                                                 for i in range(5)]
        # and frees it in the getter's stream order when the consumer's tensor dies.
        deleter(managed)(capsule_address)
        _check(_cuda.cudaStreamSynchronize(stream), "cudaStreamSynchronize")
        assert _memory_type(address) == 0
    finally:
        import hvd.torch._outputs as outputs  # hvd.torch's getter back
        _c.set_stream_getter(outputs._current_stream)
    _check(_cuda.cudaFree(ctypes.c_void_p(data)), "cudaFree")
