"""A data-only serializer for broadcast_object / allgather_object.

Horovod pickles objects (cloudpickle) and unpickles what arrives from the network, so any
rank, or anyone able to inject bytes, can run code on every other rank. hvd never unpickles
network data. This format encodes values only: None, bool, int, float, complex, str, bytes,
bytearray, list, tuple, dict, OrderedDict, set, frozenset, torch.Tensor (dense, CPU copy),
torch.Size, torch.dtype, numpy.ndarray and numpy scalars. Anything else (classes, functions,
namedtuples, dataclasses) is rejected with a TypeError naming the type, before sending.
Decoding only builds those types, validates every length against the input and rejects
malformed input with ValueError.

Layout: a magic prefix, then one tagged value; containers hold a count and their items;
variable-size fields are prefixed with a little-endian u64 length.
"""
import collections
import struct
import sys
from typing import Any, List, Tuple

_MAGIC = b"HVDOBJ1\x00"
_MAX_DEPTH = 512

_NONE, _TRUE, _FALSE, _INT, _FLOAT, _COMPLEX, _STR, _BYTES, _BYTEARRAY = range(9)
_LIST, _TUPLE, _DICT, _ORDERED_DICT, _SET, _FROZENSET = range(9, 15)
_TENSOR, _TORCH_SIZE, _TORCH_DTYPE, _NDARRAY, _NUMPY_SCALAR = range(15, 20)

_CONTAINERS = {list: _LIST, tuple: _TUPLE, set: _SET, frozenset: _FROZENSET}
_U64 = struct.Struct("<Q")
_F64 = struct.Struct("<d")


def dumps(obj: Any) -> bytes:
    """Encodes `obj`; raises TypeError for a value of an unsupported type."""
    out: List[bytes] = [_MAGIC]
    _encode(obj, out, 0)
    return b"".join(out)


def loads(data: bytes) -> Any:
    """Decodes bytes produced by dumps(); raises ValueError for anything malformed."""
    data = bytes(data)
    if not data.startswith(_MAGIC):
        raise ValueError("not an hvd object encoding (bad magic)")
    reader = _Reader(data, len(_MAGIC))
    value = reader.value(0)
    if reader.pos != len(data):
        raise ValueError(f"{len(data) - reader.pos} trailing bytes after the encoded object")
    return value


def _blob(out: List[bytes], payload: bytes) -> None:
    out.append(_U64.pack(len(payload)))
    out.append(payload)


def _encode(obj: Any, out: List[bytes], depth: int) -> None:
    if depth > _MAX_DEPTH:
        raise TypeError(f"object nesting deeper than {_MAX_DEPTH}")
    kind = type(obj)
    if obj is None:
        out.append(bytes([_NONE]))
    elif kind is bool:
        out.append(bytes([_TRUE if obj else _FALSE]))
    elif kind is int:
        out.append(bytes([_INT]))
        _blob(out, obj.to_bytes((obj.bit_length() + 8) // 8, "little", signed=True))
    elif kind is float:
        out.append(bytes([_FLOAT]) + _F64.pack(obj))
    elif kind is complex:
        out.append(bytes([_COMPLEX]) + _F64.pack(obj.real) + _F64.pack(obj.imag))
    elif kind is str:
        out.append(bytes([_STR]))
        _blob(out, obj.encode("utf-8", "surrogatepass"))
    elif kind is bytes or kind is bytearray:
        out.append(bytes([_BYTES if kind is bytes else _BYTEARRAY]))
        _blob(out, bytes(obj))
    elif kind in _CONTAINERS:
        out.append(bytes([_CONTAINERS[kind]]) + _U64.pack(len(obj)))
        for item in obj:
            _encode(item, out, depth + 1)
    elif kind is dict or kind is collections.OrderedDict:
        out.append(bytes([_DICT if kind is dict else _ORDERED_DICT]) + _U64.pack(len(obj)))
        for key, item in obj.items():
            _encode(key, out, depth + 1)
            _encode(item, out, depth + 1)
    elif not _encode_array(obj, out, depth):
        raise TypeError(
            f"broadcast_object/allgather_object cannot send a "
            f"{kind.__module__}.{kind.__qualname__}: "
            "hvd sends data only (None, bool, int, float, complex, str, bytes, list, tuple, dict, "
            "set, torch tensors and numpy arrays), never pickles; convert it, e.g. to a dict")


def _encode_array(obj: Any, out: List[bytes], depth: int) -> bool:
    torch = sys.modules.get("torch")
    if torch is not None:
        if isinstance(obj, torch.Tensor) and type(obj) in (torch.Tensor, torch.nn.Parameter):
            if obj.is_sparse:
                raise TypeError("broadcast_object cannot send sparse tensors")
            flat = obj.detach().cpu().contiguous().reshape(-1)
            out.append(bytes([_TENSOR]))
            _encode(str(obj.dtype).replace("torch.", ""), out, depth + 1)
            _encode(tuple(obj.shape), out, depth + 1)
            _blob(out, flat.view(torch.uint8).numpy().tobytes())
            return True
        if type(obj) is torch.Size:
            out.append(bytes([_TORCH_SIZE]))
            _encode(tuple(obj), out, depth + 1)
            return True
        if type(obj) is torch.dtype:
            out.append(bytes([_TORCH_DTYPE]))
            _encode(str(obj).replace("torch.", ""), out, depth + 1)
            return True
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(obj, (numpy.ndarray, numpy.generic)):
        array = numpy.asarray(obj)
        if array.dtype.hasobject or array.dtype.fields is not None:
            raise TypeError(f"broadcast_object cannot send numpy arrays of dtype {array.dtype}")
        out.append(bytes([_NDARRAY if isinstance(obj, numpy.ndarray) else _NUMPY_SCALAR]))
        _encode(array.dtype.str, out, depth + 1)
        _encode(tuple(array.shape), out, depth + 1)
        _blob(out, numpy.ascontiguousarray(array).tobytes())
        return True
    return False


class _Reader:
    def __init__(self, data: bytes, pos: int) -> None:
        self.data = data
        self.pos = pos

    def take(self, count: int) -> bytes:
        if count < 0 or self.pos + count > len(self.data):
            raise ValueError(f"truncated object encoding at byte {self.pos}")
        chunk = self.data[self.pos:self.pos + count]
        self.pos += count
        return chunk

    def u64(self) -> int:
        return _U64.unpack(self.take(8))[0]

    def blob(self) -> bytes:
        return self.take(self.u64())

    def count(self) -> int:
        count = self.u64()
        if count > len(self.data) - self.pos:  # every item takes at least one byte
            raise ValueError(f"container length {count} exceeds the input at byte {self.pos}")
        return count

    def typed(self, expected: type, depth: int) -> Any:
        value = self.value(depth + 1)
        if type(value) is not expected:
            raise ValueError(f"expected {expected.__name__} at byte {self.pos}")
        return value

    def value(self, depth: int) -> Any:
        if depth > _MAX_DEPTH:
            raise ValueError(f"object nesting deeper than {_MAX_DEPTH}")
        tag = self.take(1)[0]
        if tag == _NONE:
            return None
        if tag in (_TRUE, _FALSE):
            return tag == _TRUE
        if tag == _INT:
            return int.from_bytes(self.blob(), "little", signed=True)
        if tag == _FLOAT:
            return _F64.unpack(self.take(8))[0]
        if tag == _COMPLEX:
            return complex(_F64.unpack(self.take(8))[0], _F64.unpack(self.take(8))[0])
        if tag == _STR:
            return self.blob().decode("utf-8", "surrogatepass")
        if tag == _BYTES:
            return self.blob()
        if tag == _BYTEARRAY:
            return bytearray(self.blob())
        if tag in (_LIST, _TUPLE, _SET, _FROZENSET):
            items = [self.value(depth + 1) for _ in range(self.count())]
            return {_LIST: list, _TUPLE: tuple, _SET: set, _FROZENSET: frozenset}[tag](items)
        if tag in (_DICT, _ORDERED_DICT):
            result = {} if tag == _DICT else collections.OrderedDict()
            for _ in range(self.count()):
                key = self.value(depth + 1)
                result[key] = self.value(depth + 1)
            return result
        if tag == _TENSOR:
            return self._tensor(depth)
        if tag == _TORCH_SIZE:
            import torch
            return torch.Size(self._shape(depth))
        if tag == _TORCH_DTYPE:
            return self._torch_dtype(depth)
        if tag in (_NDARRAY, _NUMPY_SCALAR):
            return self._ndarray(depth, scalar=tag == _NUMPY_SCALAR)
        raise ValueError(f"unknown tag {tag} at byte {self.pos - 1}")

    def _shape(self, depth: int) -> Tuple[int, ...]:
        shape = self.typed(tuple, depth)
        if not all(type(d) is int and d >= 0 for d in shape):
            raise ValueError(f"bad shape {shape!r}")
        return shape

    def _torch_dtype(self, depth: int):
        import torch
        name = self.typed(str, depth)
        dtype = getattr(torch, name, None)
        if not isinstance(dtype, torch.dtype):
            raise ValueError(f"unknown torch dtype {name!r}")
        return dtype

    def _tensor(self, depth: int):
        import torch
        dtype = self._torch_dtype(depth)
        shape = self._shape(depth)
        payload = self.blob()
        numel = 1
        for extent in shape:
            numel *= extent
        if len(payload) != numel * torch.empty((), dtype=dtype).element_size():
            raise ValueError(f"tensor payload of {len(payload)} bytes does not match {shape}")
        if numel == 0:
            return torch.empty(shape, dtype=dtype)
        return torch.frombuffer(bytearray(payload), dtype=torch.uint8).view(dtype).reshape(shape)

    def _ndarray(self, depth: int, scalar: bool):
        import numpy
        try:
            dtype = numpy.dtype(self.typed(str, depth))
        except TypeError as error:
            raise ValueError(f"bad numpy dtype: {error}") from None
        if dtype.hasobject or dtype.fields is not None:
            raise ValueError(f"numpy dtype {dtype} is not data-only")
        shape = self._shape(depth)
        payload = self.blob()
        array = numpy.frombuffer(payload, dtype=dtype).copy().reshape(shape)
        return array[()] if scalar else array
