"""hvd.numpy collectives against locally computed values (any number of ranks)."""
import numpy as np
import pytest

import hvd.numpy as hvd_np


@pytest.fixture(scope="module", autouse=True)
def _init(hvd):  # conftest's session fixture initializes once
    yield


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16, np.int32, np.int64, np.float16,
                                   np.float32, np.float64])
def test_allreduce_sum(dtype):
    size, rank = hvd_np.size(), hvd_np.rank()
    inputs = [(np.arange(6) % 3 + 1 + r).astype(dtype).reshape(2, 3) for r in range(size)]
    result = hvd_np.allreduce(inputs[rank], op=hvd_np.Sum)
    assert result.dtype == dtype
    assert np.array_equal(result, np.sum(np.stack(inputs), axis=0).astype(dtype))


def test_allreduce_average_and_max():
    size, rank = hvd_np.size(), hvd_np.rank()
    x = np.full(4, float(rank))
    assert np.allclose(hvd_np.allreduce(x), (size - 1) / 2)
    assert np.array_equal(hvd_np.allreduce(x, op=hvd_np.Max), np.full(4, float(size - 1)))


def test_allreduce_adasum():
    # Orthogonal arrays add; equal ones stay (docs/python.md "Adasum").
    size, rank = hvd_np.size(), hvd_np.rank()
    x = np.zeros(size, dtype=np.float32)
    x[rank] = rank + 1.0
    assert np.array_equal(hvd_np.allreduce(x, op=hvd_np.Adasum, name="np.adasum"),
                          np.arange(1, size + 1, dtype=np.float32))
    same = np.array([1.5, -2.0])
    assert np.allclose(hvd_np.allreduce(same, op=hvd_np.Adasum, name="np.adasum.same"), same)
    with pytest.raises(ValueError, match="Adasum needs floating-point"):
        hvd_np.allreduce(np.ones(2, dtype=np.int64), op=hvd_np.Adasum, name="np.adasum.int")


def test_allgather_and_broadcast():
    size, rank = hvd_np.size(), hvd_np.rank()
    gathered = hvd_np.allgather(np.full((rank + 1, 2), rank, dtype=np.int32))
    assert np.array_equal(gathered, np.concatenate(
        [np.full((r + 1, 2), r, dtype=np.int32) for r in range(size)]))
    data = np.arange(5.0) + rank
    assert np.array_equal(hvd_np.broadcast(data, size - 1), np.arange(5.0) + size - 1)
    assert np.array_equal(data, np.arange(5.0) + rank)
    non_contiguous = np.arange(12.0).reshape(3, 4).T + rank
    assert np.array_equal(hvd_np.broadcast(non_contiguous, 0), np.arange(12.0).reshape(3, 4).T)


def test_scalars_keep_their_shape():
    # A 0-d array or numpy scalar comes back 0-d, as a 0-d torch tensor does (it came back with
    # shape (1,)).
    size, rank = hvd_np.size(), hvd_np.rank()
    total = hvd_np.allreduce(np.array(float(rank)), op=hvd_np.Sum, name="np.scalar.sum")
    assert total.shape == () and total == sum(range(size))
    scalar = hvd_np.allreduce(np.float32(2), op=hvd_np.Sum, name="np.scalar.f32")
    assert scalar.shape == () and scalar.dtype == np.float32 and scalar == 2 * size
    root = hvd_np.broadcast(np.array(rank + 5), size - 1, name="np.scalar.bcast")
    assert root.shape == () and root == size + 4


def test_bad_dtype():
    with pytest.raises(ValueError):
        hvd_np.allreduce(np.array(["a"]))


def test_allgather_and_broadcast_errors():
    # A refused call raises as Horovod does (ValueError); a failed one HorovodInternalError on
    # every rank; the runtime works afterwards.
    from hvd.exceptions import HorovodInternalError
    size, rank = hvd_np.size(), hvd_np.rank()
    # a 0-d array: refused by the runtime on every rank, as hvd.torch's (Horovod's message)
    with pytest.raises(HorovodInternalError, match="rank-zero tensor"):
        hvd_np.allgather(np.float32(1.0))
    with pytest.raises(ValueError):
        hvd_np.broadcast(np.ones(2), root_rank=size, name="np.bad.root")
    if size > 1:
        with pytest.raises(HorovodInternalError):
            hvd_np.allgather(np.ones((2, rank + 1)), name="np.mismatch.allgather")
    gathered = hvd_np.allgather(np.full(1, rank, dtype=np.int64), name="np.after")
    assert gathered.tolist() == list(range(size))


def test_arguments_of_the_wrong_kind_are_refused_naming_them():
    # A float root is a TypeError (Horovod's bindings), not root int(1.7); a process set that
    # is not registered is hvd.torch's ValueError, not pybind's signature dump.
    from hvd.process_sets import ProcessSet
    with pytest.raises(TypeError, match="root_rank must be an integer, got float 0.7"):
        hvd_np.broadcast(np.ones(2), root_rank=0.7, name="np.float.root")
    assert hvd_np.broadcast(np.ones(2), root_rank=np.int64(0), name="np.int64.root").tolist() == \
        [1.0, 1.0]
    unregistered = ProcessSet([0])
    for call in (lambda: hvd_np.allreduce(np.ones(2), process_set=unregistered),
                 lambda: hvd_np.allgather(np.ones(2), process_set=unregistered),
                 lambda: hvd_np.broadcast(np.ones(2), 0, process_set=unregistered)):
        with pytest.raises(ValueError, match="is not registered; use hvd.add_process_set"):
            call()


def test_an_op_refused_because_the_job_failed_is_a_horovod_internal_error():
    # As hvd.torch's (and Horovod's): hvd.elastic.run answers HorovodInternalError with a reset,
    # and an op refused by a runtime that failed was RuntimeError here until 2026-12-01. A
    # one-rank job of its own, aborted as a failing peer would abort it.
    import os
    import subprocess
    import sys
    code = r"""
import numpy as np
import hvd.numpy as hvd_np
from hvd import _hvd_c
from hvd.exceptions import HorovodInternalError
hvd_np.init()
_hvd_c.abort("a peer failed (test)")
try:
    hvd_np.allreduce(np.ones(3, dtype=np.float32))
except HorovodInternalError as error:
    print("HorovodInternalError:", error)
"""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HVD_", "HOROVOD_"))}
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(os.path.abspath(hvd_np.__file__)))
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "HorovodInternalError: Horovod has been shut down" in run.stdout, (
        run.stdout + run.stderr)


def test_big_endian_arrays_and_op_none_are_taken():
    # np.load of a '>f4' file gives big-endian arrays (refused as "not supported" until
    # 2026-12-01); op=None is Average, as in hvd.torch (a TypeError before).
    big = np.arange(6, dtype=">f4").reshape(2, 3)
    out = hvd_np.allreduce(big, op=hvd_np.Sum, name="numpy.big.endian")
    assert np.array_equal(out, np.arange(6, dtype=np.float32).reshape(2, 3) * hvd_np.size())
    assert np.array_equal(hvd_np.allreduce(np.ones(3), op=None, name="numpy.op.none"), np.ones(3))


def test_a_scalar_in_allgather_fails_on_every_rank():
    # Rank 0 gathers a 0-d array, the others a 1-d one: every rank fails (until 2026-12-01 only
    # rank 0 raised, at the call, and the others waited until the stall shutdown).
    value = np.float32(1.0) if hvd_np.rank() == 0 else np.ones(1, dtype=np.float32)
    from hvd.exceptions import HorovodInternalError
    with pytest.raises(HorovodInternalError):
        hvd_np.allgather(np.asarray(value), name="numpy.scalar.allgather")
    # and the job goes on
    after = hvd_np.allreduce(np.ones(2), op=hvd_np.Sum, name="numpy.after.scalar")
    assert after[0] == hvd_np.size()
