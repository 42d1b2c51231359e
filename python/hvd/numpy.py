"""hvd.numpy: collectives on numpy arrays (CPU), for scripts that do not use torch.

Arrays are sent from their own memory (a contiguous copy if needed); allreduce and
broadcast return new arrays, allgather wraps the runtime's buffer without a copy. dtypes:
uint8, int8, uint16, int16, int32, int64, float16, float32, float64, bool.
"""
from typing import Optional

import numpy as np

from hvd import _hvd_c as _c
from hvd.basics import (Adasum, Average, Max, Min, Product, Sum, init, is_initialized, local_rank,
                        local_size, rank, shutdown, size, translate_error)
from hvd.exceptions import HorovodInternalError
from hvd.process_sets import (ProcessSet, global_process_set, operation_name, registered_id,
                               root_rank_arg)

__all__ = ["init", "shutdown", "is_initialized", "rank", "size", "local_rank", "local_size",
           "allreduce", "allgather", "broadcast", "Average", "Sum", "Adasum", "Min", "Max",
           "Product"]

_NUMPY_TO_HVD = {
    np.dtype(np.uint8): _c.UINT8, np.dtype(np.int8): _c.INT8, np.dtype(np.uint16): _c.UINT16,
    np.dtype(np.int16): _c.INT16, np.dtype(np.int32): _c.INT32, np.dtype(np.int64): _c.INT64,
    np.dtype(np.float16): _c.FLOAT16, np.dtype(np.float32): _c.FLOAT32,
    np.dtype(np.float64): _c.FLOAT64, np.dtype(np.bool_): _c.BOOL,
}
_HVD_TO_NUMPY = {code: dtype for dtype, code in _NUMPY_TO_HVD.items()}


def _contiguous(array) -> tuple:
    """(a C-contiguous array with the data of `array`, its dtype code). A 0-d array stays 0-d
    (np.ascontiguousarray would make it 1-d, and the result's shape with it)."""
    array = np.asarray(array)
    if not array.dtype.isnative:  # big-endian data (np.load of a '>f4' file): in native order
        array = array.astype(array.dtype.newbyteorder("="))
    if not array.flags.c_contiguous:
        array = np.ascontiguousarray(array)
    code = _NUMPY_TO_HVD.get(array.dtype)
    if code is None:
        raise ValueError(f"numpy dtype {array.dtype} is not supported")
    return array, code


def _now(call, *args):
    """A synchronous runtime call (enqueue, wait, release), its errors as Horovod raises them:
    a caller's error refused at the call as translate_error says (ValueError), anything else
    HorovodInternalError, as hvd.torch's (an op refused because the job failed was RuntimeError
    until 2026-12-01, which hvd.elastic.run does not answer with a reset)."""
    try:
        return call(*args)
    except _c.Error as error:
        refused = (_c.NOT_INITIALIZED, _c.INVALID_ARGUMENT, _c.PRECONDITION_FAILED, _c.NOT_FOUND)
        if not error.in_wait and error.status in refused:
            raise translate_error(error) from None
        raise HorovodInternalError(str(error)) from None


def allreduce(array, op: int = Average, name: Optional[str] = None,
              prescale_factor: float = 1.0, postscale_factor: float = 1.0,
              process_set: ProcessSet = global_process_set) -> np.ndarray:
    """Element-wise reduction of `array` over the ranks of `process_set`; a new array."""
    if op is None:  # as hvd.torch's op=None: Average
        op = Average
    data, code = _contiguous(array)
    output = np.empty_like(data)
    # Enqueue, wait and release in one runtime call (hvd._hvd_c.allreduce_now), the arrays'
    # memory read through the buffer protocol.
    _now(_c.allreduce_now, data, output, code, data.shape,
         operation_name("allreduce", name, process_set), op, float(prescale_factor),
         float(postscale_factor), registered_id(process_set))
    return output


def allgather(array, name: Optional[str] = None,
              process_set: ProcessSet = global_process_set) -> np.ndarray:
    """Concatenation of every rank's `array` along axis 0 (first dims may differ)."""
    # A 0-d array goes to the runtime, which fails the op on every rank, as hvd.torch's: refused
    # here on this rank alone, the others waited for it until the stall shutdown (until
    # 2026-12-01).
    data, code = _contiguous(array)
    buffer = _now(_c.allgather_now, data, code, data.shape,
                  operation_name("allgather", name, process_set), registered_id(process_set))
    dtype = _HVD_TO_NUMPY[buffer.dtype]
    if buffer.nbytes == 0:
        return np.empty(buffer.shape, dtype=dtype)
    return np.frombuffer(buffer, dtype=dtype).reshape(buffer.shape)


def broadcast(array, root_rank: int, name: Optional[str] = None,
              process_set: ProcessSet = global_process_set) -> np.ndarray:
    """`root_rank`'s `array` on every rank; a new array."""
    data, code = _contiguous(array)
    output = np.empty_like(data)
    _now(_c.broadcast_now, data, output, code, data.shape, root_rank_arg(root_rank),
         operation_name("broadcast", name, process_set), registered_id(process_set))
    return output
