"""Behaviours Horovod's own test suite (test/parallel/test_torch.py, 0.28.1) checks, with its
exact expectations: scaling arithmetic per dtype, reducescatter gradients, the duplicate-name
error on every rank, and that a failed op leaves every rank in step for the next one.

Runs at any size (`hvdrun -np N python3 -m pytest`). Each case follows Horovod's test: the same
inputs (torch.manual_seed(1234), np.random.seed(1234)), the same reference computation and the
same tolerance (exact up to 3 ranks; for float16 past 3 ranks, float16's own rounding of each
partial sum, which Horovod's tolerance is finer than).
"""
import itertools

import numpy as np
import pytest
import torch

INT_TYPES = [torch.int32, torch.int64]
SCALE_DTYPES = [torch.int32, torch.int64, torch.float32, torch.float64, torch.float16]
DIMS = [1, 2, 3]


def _scaled_reference(tensor, factor, dtype):
    """Horovod's reference for a CPU tensor scaled by `factor`: integer types scale in float64
    and truncate; float16 scales in float32; other floats in their own type."""
    math_type = torch.float64 if dtype in INT_TYPES else (
        torch.float32 if dtype is torch.float16 else dtype)
    factor = torch.tensor(factor, dtype=torch.float64).type(math_type)
    return (factor * tensor.type(math_type)).type(dtype)


def _threshold(hvd, dtype):
    size = hvd.size()
    if size <= 3 or dtype in INT_TYPES:
        return 0
    if dtype is torch.float16:
        # Horovod's 1e-4 is finer than float16 itself: a sum reduced pairwise (as Horovod's
        # float16 MPI op, NCCL and hvd do) rounds each partial sum to half an ulp, 2**-11.
        return (size - 1) * 2.0 ** -11
    return 1e-4 if size < 10 else 5e-4


def _inputs(shape):
    torch.manual_seed(1234)
    np.random.seed(1234)
    factor = np.random.uniform()
    return factor, torch.FloatTensor(*shape).random_(-100, 100)


@pytest.mark.parametrize("dtype,dim", itertools.product(SCALE_DTYPES, DIMS))
def test_allreduce_prescale(hvd, dtype, dim):
    factor, tensor = _inputs([17] * dim)
    tensor = tensor.type(dtype)
    summed = hvd.allreduce(tensor, average=False, prescale_factor=factor)
    expected = _scaled_reference(tensor, factor, dtype) * hvd.size()
    assert torch.allclose(summed, expected, _threshold(hvd, dtype)), (summed - expected).abs().max()


@pytest.mark.parametrize("dtype,dim", itertools.product(SCALE_DTYPES, DIMS))
def test_allreduce_postscale(hvd, dtype, dim):
    factor, tensor = _inputs([17] * dim)
    tensor = tensor.type(dtype)
    summed = hvd.allreduce(tensor, average=False, postscale_factor=factor)
    expected = _scaled_reference(tensor * hvd.size(), factor, dtype)
    assert torch.allclose(summed, expected, _threshold(hvd, dtype)), (summed - expected).abs().max()


@pytest.mark.parametrize("dtype,dim", itertools.product(SCALE_DTYPES, DIMS))
def test_allreduce_average_matches_horovod(hvd, dtype, dim):
    # Horovod averages through the postscale factor 1/size (float64 for integer types).
    _, tensor = _inputs([17] * dim)
    tensor = tensor.type(dtype)
    averaged = hvd.allreduce(tensor, op=hvd.Average)
    expected = _scaled_reference(tensor * hvd.size(), 1.0 / hvd.size(), dtype)
    assert torch.allclose(averaged, expected, _threshold(hvd, dtype))


def _my_rows(hvd, tensor):
    rank = hvd.rank()
    return tensor[rank * 4:(rank + 1) * 4]


@pytest.mark.parametrize("dtype,dim", itertools.product(SCALE_DTYPES, DIMS))
def test_reducescatter_prescale(hvd, dtype, dim):
    factor, tensor = _inputs([hvd.size() * 4] * dim)
    tensor = tensor.type(dtype)
    reduced = hvd.reducescatter(tensor, op=hvd.Sum, prescale_factor=factor)
    expected = _scaled_reference(_my_rows(hvd, tensor), factor, dtype) * hvd.size()
    assert torch.allclose(reduced, expected, _threshold(hvd, dtype))


@pytest.mark.parametrize("dtype,dim", itertools.product(SCALE_DTYPES, DIMS))
def test_reducescatter_postscale(hvd, dtype, dim):
    factor, tensor = _inputs([hvd.size() * 4] * dim)
    tensor = tensor.type(dtype)
    reduced = hvd.reducescatter(tensor, op=hvd.Sum, postscale_factor=factor)
    expected = _scaled_reference(_my_rows(hvd, tensor) * hvd.size(), factor, dtype)
    assert torch.allclose(reduced, expected, _threshold(hvd, dtype))


@pytest.mark.parametrize("dtype,dim", itertools.product(SCALE_DTYPES, DIMS))
def test_grouped_reducescatter_prescale_postscale(hvd, dtype, dim):
    factor, tensor = _inputs([hvd.size() * 4] * dim)
    tensors = [tensor.type(dtype), (tensor * 0.5).type(dtype)]
    pre = hvd.grouped_reducescatter(tensors, op=hvd.Sum, prescale_factor=factor)
    post = hvd.grouped_reducescatter(tensors, op=hvd.Sum, postscale_factor=factor)
    for t, got_pre, got_post in zip(tensors, pre, post):
        mine = _my_rows(hvd, t)
        expected_pre = _scaled_reference(mine, factor, dtype) * hvd.size()
        expected_post = _scaled_reference(mine * hvd.size(), factor, dtype)
        assert torch.allclose(got_pre, expected_pre, _threshold(hvd, dtype))
        assert torch.allclose(got_post, expected_post, _threshold(hvd, dtype))


@pytest.mark.parametrize("op_name,dtype,dim",
                         itertools.product(["Sum", "Average"], [torch.float32, torch.float64],
                                           DIMS))
def test_reducescatter_grad(hvd, op_name, dtype, dim):
    # Horovod: the gradient is the allgather of the output gradient, times size() for Sum.
    op = getattr(hvd, op_name)
    torch.manual_seed(1234)
    tensor = torch.FloatTensor(*([hvd.size() * 4] * dim)).random_(-100, 100).type(dtype)
    tensor.requires_grad_()
    reduced = hvd.reducescatter(tensor, op=op)
    reduced.backward(torch.ones([4] + [hvd.size() * 4] * (dim - 1), dtype=dtype))
    expected = np.ones([hvd.size() * 4] * dim) * (hvd.size() if op == hvd.Sum else 1)
    assert np.linalg.norm(expected - tensor.grad.numpy()) < 1e-8


@pytest.mark.parametrize("op_name", ["Sum", "Average"])
def test_grouped_reducescatter_grad(hvd, op_name):
    op = getattr(hvd, op_name)
    torch.manual_seed(1234)
    tensors = [torch.FloatTensor(*([hvd.size() * 4] * 2)).random_(-100, 100) for _ in range(3)]
    for t in tensors:
        t.requires_grad_()
    reduced = hvd.grouped_reducescatter(tensors, op=op)
    for r in reduced:
        r.backward(torch.ones_like(r))
    expected = np.ones([hvd.size() * 4] * 2) * (hvd.size() if op == hvd.Sum else 1)
    for t in tensors:
        assert np.linalg.norm(expected - t.grad.numpy()) < 1e-8


@pytest.mark.parametrize("prescale,postscale", [(0.5, 1.0), (1.0, 3.0), (0.25, 2.0)])
def test_reducescatter_grad_carries_the_scale_factors(hvd, prescale, postscale):
    x = torch.ones(hvd.size() * 2, 3, requires_grad=True)
    y = hvd.reducescatter(x, op=hvd.Sum, prescale_factor=prescale, postscale_factor=postscale)
    y.backward(torch.ones_like(y))
    assert torch.equal(x.grad, torch.full_like(x, hvd.size() * prescale * postscale))


def test_duplicate_name_raises_on_every_rank(hvd):
    # Horovod: two ops in flight under one name fail on every rank, and the job goes on.
    size = hvd.size()
    tensor = torch.ones(4)
    handles = []
    with pytest.raises(ValueError, match="same name"):
        for _ in range(2):
            handles.append(hvd.allreduce_async(tensor, name="duplicate_name"))
    for h in handles:
        hvd.synchronize(h)
    # Every rank is still in step: a collective after the error completes with the right sum.
    assert torch.equal(hvd.allreduce(torch.ones(3), op=hvd.Sum, name="after_duplicate"),
                       torch.full((3,), float(size)))
    hvd.barrier()


def test_failed_ops_leave_every_rank_in_step(hvd):
    # Given ops that fail on every rank (a mismatch between ranks, a duplicate name), when the
    # ranks go on, then the next collectives still pair up (no rank is one op behind).
    if hvd.size() < 2:
        pytest.skip("needs 2 ranks for a cross-rank mismatch")
    rank = hvd.rank()
    for i in range(3):
        with pytest.raises(hvd.HorovodInternalError):
            hvd.allreduce(torch.ones(2 + rank), name=f"mismatch.{i}")
        with pytest.raises(ValueError):
            for _ in range(2):
                hvd.allreduce_async(torch.ones(2), name=f"dup.{i}")
        hvd.barrier()
        got = hvd.allreduce(torch.tensor([float(rank)]), op=hvd.Sum, name=f"in_step.{i}")
        assert got.item() == sum(range(hvd.size()))


def test_duplicate_name_in_horovods_own_pattern(hvd):
    # Horovod's test_horovod_allreduce_duplicate_name_error, as written there: rank 0's first
    # op stays pending across a barrier; the other ranks' first op then completes at once, and
    # their second call must still fail (their first handle was never synchronized).
    if hvd.size() == 1:
        pytest.skip("needs 2 ranks")
    tensor = torch.FloatTensor(*([17] * 3))
    if hvd.rank() == 0:
        hvd.allreduce_async(tensor, name="horovod_duplicate_name")
        with pytest.raises(ValueError):
            for _ in range(10):
                hvd.allreduce_async(tensor, name="horovod_duplicate_name")
    hvd.barrier()
    if hvd.rank() > 0:
        hvd.allreduce_async(tensor, name="horovod_duplicate_name")
        with pytest.raises(ValueError):
            hvd.allreduce_async(tensor, name="horovod_duplicate_name")
    hvd.barrier()
