"""hvd.serialization: round trips of data-only values and rejection of anything else."""
import collections
import pickle

import numpy as np
import pytest
import torch

from hvd import serialization


@pytest.mark.parametrize("value", [
    None, True, False, 0, -1, 2**100, -(2**70), 1.5, float("inf"), complex(1, -2), "", "héllo",
    b"\x00\xff", bytearray(b"ab"), [1, [2, [3]]], (1, (2,)), {"a": 1, 2: [None]},
    collections.OrderedDict([("b", 1), ("a", 2)]), {1, 2}, frozenset({"x"}),
    {"lr": 0.1, "betas": (0.9, 0.999), "foreach": None, "nested": {"epoch": 3}},
])
def test_round_trip(value):
    decoded = serialization.loads(serialization.dumps(value))
    assert decoded == value and type(decoded) is type(value)


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
                                   torch.float16, torch.bfloat16, torch.float32, torch.float64,
                                   torch.bool])
def test_tensor_round_trip(dtype):
    for shape in [(), (0,), (3,), (2, 3, 1)]:
        tensor = (torch.arange(int(torch.tensor(shape).prod())) % 5).to(dtype).reshape(shape)
        decoded = serialization.loads(serialization.dumps({"t": tensor.t() if tensor.dim() == 2
                                                           else tensor}))["t"]
        assert decoded.dtype == dtype and torch.equal(decoded, tensor)


def test_torch_and_numpy_metadata_round_trip():
    value = [torch.Size([2, 3]), torch.float16, np.arange(6, dtype=np.int16).reshape(2, 3),
             np.float32(2.5), torch.nn.Parameter(torch.ones(2))]
    decoded = serialization.loads(serialization.dumps(value))
    assert decoded[0] == torch.Size([2, 3]) and decoded[1] is torch.float16
    assert np.array_equal(decoded[2], value[2]) and decoded[2].dtype == np.int16
    assert decoded[3] == np.float32(2.5) and decoded[3].dtype == np.float32
    assert torch.equal(decoded[4], torch.ones(2))


class Custom:
    pass


@pytest.mark.parametrize("value", [Custom(), lambda: 1, print, collections.namedtuple("P", "x")(1),
                                   np.array([object()]), {"k": Custom()}])
def test_rejects_non_data(value):
    with pytest.raises(TypeError):
        serialization.dumps(value)


def test_never_unpickles():
    class Boom:
        def __reduce__(self):
            return (exec, ("raise SystemExit('pwned')",))
    with pytest.raises(ValueError, match="magic"):
        serialization.loads(pickle.dumps(Boom()))


@pytest.mark.parametrize("data", [
    b"", b"HVDOBJ1\x00", b"HVDOBJ1\x00\x63", b"HVDOBJ1\x00\x09\xff\xff\xff\xff\xff\xff\xff\x7f",
    b"HVDOBJ1\x00\x06\x10\x00\x00\x00\x00\x00\x00\x00ab", b"HVDOBJ1\x00\x00\x00",
])
def test_rejects_malformed(data):
    with pytest.raises(ValueError):
        serialization.loads(data)


def test_rejects_tensor_with_wrong_payload_and_object_dtype():
    good = serialization.dumps(torch.ones(4))
    with pytest.raises(ValueError):
        serialization.loads(good[:-1])
    array = serialization.dumps(np.arange(3))
    tampered = array.replace(b"<i8", b"|O8")
    with pytest.raises(ValueError):
        serialization.loads(tampered)
