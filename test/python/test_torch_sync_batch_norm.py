"""hvd.SyncBatchNorm (Horovod's horovod.torch.SyncBatchNorm) against a full-batch BatchNorm:
forward, backward, running statistics, one value per channel, 16-bit inputs, scripting.

Run like test_torch.py: alone (size 1) and under hvdrun (test/python/CMakeLists.txt).
"""
import pytest
import torch


@pytest.mark.parametrize("shape", [(4, 3), (3, 3, 5), (2, 3, 2, 2)])
def test_sync_batch_norm_matches_full_batch(hvd, shape):
    torch.manual_seed(11)
    full = torch.randn((shape[0] * hvd.size(),) + shape[1:], dtype=torch.float64)
    rows = slice(hvd.rank() * shape[0], (hvd.rank() + 1) * shape[0])
    grad_out = torch.randn_like(full)

    bn = hvd.SyncBatchNorm(3).double()
    with torch.no_grad():
        bn.weight.copy_(torch.tensor([1.0, 2.0, 0.5]))
        bn.bias.copy_(torch.tensor([0.1, -0.2, 0.3]))
    local = full[rows].clone().requires_grad_()
    out = bn(local)
    out.backward(grad_out[rows])

    reference = torch.nn.BatchNorm1d(3) if len(shape) < 4 else torch.nn.BatchNorm2d(3)
    reference = reference.double()
    with torch.no_grad():
        reference.weight.copy_(bn.weight)
        reference.bias.copy_(bn.bias)
    whole = full.clone().requires_grad_()
    ref_out = reference(whole)
    ref_out.backward(grad_out)

    torch.testing.assert_close(out, ref_out[rows])
    torch.testing.assert_close(local.grad, whole.grad[rows])
    torch.testing.assert_close(bn.running_mean, reference.running_mean)
    torch.testing.assert_close(bn.running_var, reference.running_var)
    bn.eval()
    torch.testing.assert_close(bn(full[rows]), reference.eval()(full[rows]))


# A 16-bit layer keeps its input for the backward, not a float32 copy of its normalized input
# (until 2026-12-02: twice the activation memory of the layer under mixed precision), and its
# gradients are those of the float32 layer.
def test_sync_batch_norm_saves_a_16_bit_input_as_it_is(hvd):
    from hvd.torch.sync_batch_norm import _SyncBatchNorm
    torch.manual_seed(7 + hvd.rank())
    x32 = torch.randn(4, 3, 5)
    weight, bias = torch.randn(3, requires_grad=True), torch.randn(3, requires_grad=True)
    saved = []

    def pack(t):
        saved.append((t.numel(), t.dtype))
        return t

    x16 = x32.to(torch.bfloat16).requires_grad_()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out16 = _SyncBatchNorm.apply(x16, weight, bias, None, None, 1e-5, 0.1)
    assert (x16.numel(), torch.bfloat16) in saved
    assert not [s for s in saved if s[0] == x16.numel() and s[1] != torch.bfloat16], saved
    out16.float().pow(2).sum().backward()
    x_ref = x16.detach().float().requires_grad_()
    w_ref, b_ref = weight.detach().clone().requires_grad_(), bias.detach().clone().requires_grad_()
    _SyncBatchNorm.apply(x_ref, w_ref, b_ref, None, None, 1e-5, 0.1).pow(2).sum().backward()
    assert torch.allclose(x16.grad.float(), x_ref.grad, rtol=0.05, atol=0.05)
    assert torch.allclose(weight.grad, w_ref.grad, rtol=0.05, atol=0.05)


def test_sync_batch_norm_takes_one_value_per_channel(hvd):
    # A batch of one row with no spatial dims on every rank: one value per channel at one rank
    # (torch's own batch_norm refuses it; Horovod's sync kernel does not). Each channel is then
    # normalized over the ranks' values; at one rank the output is the bias, the input gradient
    # 0, and the running variance stays finite.
    bn = hvd.SyncBatchNorm(2).double()
    with torch.no_grad():
        bn.bias.copy_(torch.tensor([0.5, -1.0]))
    x = torch.tensor([[float(hvd.rank()), 2.0 * hvd.rank()]], dtype=torch.float64,
                     requires_grad=True)
    out = bn(x)
    out.sum().backward()
    values = torch.arange(hvd.size(), dtype=torch.float64)
    full = torch.stack([values, 2 * values], dim=1)
    mean, var = full.mean(0), full.var(0, unbiased=False)
    expected = (full[hvd.rank()] - mean) / torch.sqrt(var + bn.eps) + bn.bias
    torch.testing.assert_close(out[0], expected.detach())
    assert torch.isfinite(bn.running_var).all()
    if hvd.size() == 1:
        torch.testing.assert_close(out, bn.bias.detach().view(1, 2))
        torch.testing.assert_close(x.grad, torch.zeros_like(x))


def test_sync_batch_norm_keeps_the_variance_of_a_large_mean_in_float32(hvd):
    # float32 inputs of mean 100 and std 0.1 (a raw feature such as a price): the variance must
    # come out as float64 batch norm of the whole batch gives it. Until 2026-12-01 hvd took
    # E[x^2] - mean^2 in float32 at 2+ ranks: outputs off by up to 0.17, and at std 0.01 the
    # variance 0 (outputs off by 9).
    for std in (0.1, 0.01):
        torch.manual_seed(5)
        rows_per_rank = 64
        # float32 inputs; the reference takes those very values in float64
        full = (100.0 + std * torch.randn(rows_per_rank * hvd.size(), 3)).double()
        rows = slice(hvd.rank() * rows_per_rank, (hvd.rank() + 1) * rows_per_rank)
        bn = hvd.SyncBatchNorm(3)
        out = bn(full[rows].float())
        reference = torch.nn.BatchNorm1d(3).double()
        ref_out = reference(full)
        torch.testing.assert_close(out.double(), ref_out[rows].detach(), atol=2e-3, rtol=0)
        torch.testing.assert_close(bn.running_var.double(), reference.running_var,
                                   atol=1e-3 * std * std + 1e-9, rtol=2e-3)


@pytest.mark.parametrize("tracking", [True, False])
def test_sync_batch_norm_with_momentum_none_is_a_cumulative_average(hvd, tracking):
    # torch's rule (momentum None: the running statistics average every batch seen); until
    # 2026-12-01 it raised TypeError at one rank, and with track_running_stats=False at any size.
    torch.manual_seed(3)
    bn = hvd.SyncBatchNorm(2, momentum=None, track_running_stats=tracking).double()
    reference = torch.nn.BatchNorm1d(2, momentum=None, track_running_stats=tracking).double()
    for step in range(3):
        full = torch.randn(4 * hvd.size(), 2, dtype=torch.float64) + step
        rows = slice(hvd.rank() * 4, (hvd.rank() + 1) * 4)
        torch.testing.assert_close(bn(full[rows]), reference(full)[rows].detach())
    if tracking:
        torch.testing.assert_close(bn.running_mean, reference.running_mean)
        torch.testing.assert_close(bn.running_var, reference.running_var)


def test_a_model_with_sync_batch_norm_can_be_scripted_for_inference(hvd):
    # Horovod keeps its sync path out of TorchScript (@torch.jit.unused); until 2026-12-01
    # torch.jit.script of a model holding hvd.SyncBatchNorm raised TypeError.
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 1), hvd.SyncBatchNorm(4)).eval()
    scripted = torch.jit.script(model)
    x = torch.randn(2, 3, 5, 5)
    torch.testing.assert_close(scripted(x), model(x))
