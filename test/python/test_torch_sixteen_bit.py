"""float16/bfloat16 reductions on shared memory (docs/reduction-kernels.md): every
rank's input added in float and rounded once, and an Average's 1/n applied in float before that
rounding, in allreduce and reducescatter, one tensor, posted with the negotiation, fused and past
the staging sizes. Runs at any size, as test_torch.py (the checks need 2 or 3 ranks on one host).
"""
import os

import pytest
import torch

from test_torch import _scatter_rows


def on_shared_memory(hvd, least):
    """The job's size, skipping unless `least` or more ranks share one host's shared memory."""
    n = hvd.size()
    if n < least or hvd.local_size() != n or os.environ.get("HVD_CPU_OPERATIONS", "auto") not in (
            "auto", "shm"):
        pytest.skip(f"needs {least} or more ranks on shared memory")
    return n


@pytest.mark.parametrize("count", [37, 70000])
def test_allreduce_sixteen_bit_sums_round_once(hvd, count):
    """On shared memory a float16/bfloat16 sum adds every rank's input in float and rounds once
    (docs/reduction-kernels.md), small (posted with the negotiation) and past the
    direct size: addends are not lost against a large one, and a partial sum past float16's
    range does not overflow a total that fits. Pairwise rounding (hvd's TCP rings, Horovod's MPI
    op, NCCL) gives 256 and inf here."""
    n, r = on_shared_memory(hvd, 3), hvd.rank()
    # bfloat16's spacing at 256 is 2: pairwise, 256 + 1 rounds back to 256 at every step.
    bf16 = torch.full((count,), 256.0 if r == 0 else 1.0, dtype=torch.bfloat16)
    half = torch.full((count,), (40000.0, 40000.0, -40000.0)[r] if r < 3 else 0.0,
                      dtype=torch.float16)
    for x, total in ((bf16, 256.0 + (n - 1)), (half, 40000.0)):
        got = hvd.allreduce(x, op=hvd.Sum, name=f"round_once.{x.dtype}.{count}")
        want = torch.full_like(x, total)  # the exact total rounded once to the dtype
        assert torch.equal(got, want), f"{x.dtype}: got {got[:4].tolist()}, want {total}"


@pytest.mark.parametrize("count", [37, 70000, 600000])
def test_allreduce_sixteen_bit_average_scales_before_rounding(hvd, count):
    """On shared memory a float16/bfloat16 Average scales the sum in float before its one
    rounding (Communicator::AllreduceScaled): the mean of float16 40000s is 40000 where the sum
    rounded first overflows (inf, and inf / n is inf: what Horovod gives), one tensor or a
    fused group, small (from 3 ranks also posted with the negotiation), past the direct size
    and past the single-copy size."""
    n = on_shared_memory(hvd, 2)
    half = torch.full((count,), 40000.0, dtype=torch.float16)
    for step in range(6):  # repeated, so that from 3 ranks it rides the negotiation (posted)
        got = hvd.allreduce(half, op=hvd.Average, name=f"mean_once.{count}")
        assert torch.equal(got, half), f"step {step}: got {got[:4].tolist()}, want 40000"
    other = torch.full((count // 3 + 1,), -30000.0, dtype=torch.float16)  # fused with it
    outs = hvd.grouped_allreduce([half, other], op=hvd.Average, name=f"mean_once_group.{count}")
    assert torch.equal(outs[0], half), f"fused: got {outs[0][:4].tolist()}, want 40000"
    assert torch.equal(outs[1], other), f"fused: got {outs[1][:4].tolist()}, want -30000"


@pytest.mark.parametrize("rows", [5, 40000, 300000])
def test_reducescatter_sixteen_bit_average_scales_before_rounding(hvd, rows):
    """As the allreduce's: a float16 reducescatter Average on shared memory scales each rank's
    slice in float before its one rounding, so the mean of 40000s is 40000, not inf; one
    tensor (from 3 ranks also posted with the negotiation, repeated), grouped (the fused
    pieces), and over many rounds of the staging halves."""
    n = on_shared_memory(hvd, 2)
    counts, _ = _scatter_rows(rows, n)
    half = torch.full((rows, 2), 40000.0, dtype=torch.float16)
    want = torch.full((counts[hvd.rank()], 2), 40000.0, dtype=torch.float16)
    for step in range(6):
        got = hvd.reducescatter(half, op=hvd.Average, name=f"rs_mean_once.{rows}")
        assert torch.equal(got, want), f"step {step}: got {got[:2].tolist()}, want 40000"
    other = torch.full((rows, 1), -30000.0, dtype=torch.bfloat16)
    outs = hvd.grouped_reducescatter([half, half.clone()], op=hvd.Average,
                                     name=f"rs_mean_once_group.{rows}")
    assert torch.equal(outs[0], want) and torch.equal(outs[1], want), "grouped"
    got = hvd.reducescatter(other, op=hvd.Average, name=f"rs_mean_bf16.{rows}")
    assert torch.equal(got, other[:counts[hvd.rank()]]), "bfloat16"
