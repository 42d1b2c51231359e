"""SyncBatchNorm: batch normalization whose statistics span every rank's batch (Horovod's
horovod.torch.sync_batch_norm), implemented with plain tensor ops so it runs on the CPU.

Training forward: each rank computes its per-channel count, mean and sum of squared deviations
from that mean (two passes over its batch, so as exact as torch's own kernel); one allgather of
these gives every rank the global mean and variance by the parallel-variance formula (Chan et
al.), as torch's and Horovod's sync kernels combine per-rank Welford statistics. Until
2026-12-01 hvd summed x and x*x and took E[x^2] - mean^2 in float32, which loses the variance
when the mean is large against the spread (inputs of mean 100, std 0.01: variance 0). Backward:
one allreduce(Sum) of the per-channel sums of dy and dy*x_hat gives the input gradient of the
global batch. The weight and bias gradients stay local, as in Horovod and torch
(DistributedOptimizer averages them like every other gradient).
"""
import torch
import torch.nn.functional as F
from torch.nn.modules.batchnorm import _BatchNorm

from hvd.basics import Sum, size
from hvd.torch.mpi_ops import allgather, allreduce


class SyncBatchNorm(_BatchNorm):
    """Applies synchronous batch normalization over inputs of shape (N, C, ...)."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats)

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError("expected at least 2D input (got {}D input)".format(input.dim()))

    def forward(self, input):
        # Scriptable, as torch's _BatchNorm.forward (and Horovod's, whose sync path is
        # @torch.jit.unused too): a model holding it can be torch.jit.script'ed for inference.
        self._check_input_dim(input)
        # torch's rule for the running statistics' factor: momentum, or with momentum None the
        # cumulative average 1 / batches seen (until 2026-12-01 None crashed at one rank and
        # with track_running_stats=False).
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            if self.num_batches_tracked is not None:
                self.num_batches_tracked.add_(1)
                if self.momentum is None:
                    factor = 1.0 / float(self.num_batches_tracked)
        if not self.training and self.track_running_stats:
            return F.batch_norm(input, self.running_mean, self.running_var, self.weight,
                                self.bias, False, factor, self.eps)
        return self._maybe_run_sync_bn(input, factor)

    @torch.jit.unused
    def _maybe_run_sync_bn(self, input, factor: float):
        if size() == 1 and input.numel() > input.shape[1]:
            # torch's own kernel (it refuses one value per channel)
            return F.batch_norm(input, self.running_mean, self.running_var, self.weight,
                                self.bias, True, factor, self.eps)
        return _SyncBatchNorm.apply(input, self.weight, self.bias, self.running_mean,
                                    self.running_var, self.eps, factor)


def _channel_sum(x: torch.Tensor) -> torch.Tensor:
    dims = [0] + list(range(2, x.dim()))
    return x.sum(dim=dims)


def _per_channel(v: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    return v.view([1, -1] + [1] * (like.dim() - 2))


class _SyncBatchNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, weight, bias, running_mean, running_var, eps, momentum):
        x = input.contiguous().to(torch.float64 if input.dtype == torch.float64 else torch.float32)
        channels = x.shape[1]
        local_count = x.numel() // channels
        # This rank's count, mean and sum of squared deviations, per channel (zeros for an
        # empty batch), gathered from every rank: [count, mean (C), m2 (C)] each.
        if local_count > 0:
            local_mean = _channel_sum(x) / local_count
            local_m2 = _channel_sum((x - _per_channel(local_mean, x)) ** 2)
        else:
            local_mean = x.new_zeros(channels)
            local_m2 = x.new_zeros(channels)
        mine = torch.cat([x.new_tensor([float(local_count)]), local_mean, local_m2]).view(1, -1)
        every = allgather(mine, name=None)
        counts = every[:, :1]
        total = counts.sum()
        # One value per channel in the whole batch is allowed, as Horovod's sync kernel allows
        # it: the output is the bias. Its variance 0 has no unbiased estimate (torch's kernel
        # stores 0/0 = NaN); the running variance takes the 0 instead, so it stays finite.
        if total.item() < 1:
            raise ValueError("Expected at least 1 value per channel when training, got 0")
        means = every[:, 1:1 + channels]
        mean = (counts * means).sum(dim=0) / total
        m2 = every[:, 1 + channels:].sum(dim=0) + (counts * (means - mean) ** 2).sum(dim=0)
        var = (m2 / total).clamp_min(0)
        invstd = torch.rsqrt(var + eps)

        if running_mean is not None:
            with torch.no_grad():
                unbiased = var * total / (total - 1) if total.item() > 1 else var
                running_mean.mul_(1 - momentum).add_(mean.to(running_mean.dtype) * momentum)
                running_var.mul_(1 - momentum).add_(unbiased.to(running_var.dtype) * momentum)

        x_hat = (x - _per_channel(mean, x)) * _per_channel(invstd, x)
        out = x_hat
        if weight is not None:
            out = out * _per_channel(weight.to(x.dtype), x) + _per_channel(bias.to(x.dtype), x)
        # The input as given (a 16-bit one stays 16-bit) and the per-channel mean, not the float32
        # x_hat: backward recomputes it, as Horovod's kernel (torch's batch_norm_backward_elemt)
        # does. Until 2026-12-02 a float16/bfloat16 layer kept a float32 copy of its activations.
        ctx.save_for_backward(input, mean, invstd, weight, total)
        ctx.has_bias = bias is not None
        return out.to(input.dtype)

    @staticmethod
    def backward(ctx, grad_output):
        input, mean, invstd, weight, total = ctx.saved_tensors
        x = input.contiguous().to(mean.dtype)
        x_hat = (x - _per_channel(mean, x)) * _per_channel(invstd, x)
        dy = grad_output.contiguous().to(x_hat.dtype)
        channels = x_hat.shape[1]
        sum_dy = _channel_sum(dy)
        sum_dy_xhat = _channel_sum(dy * x_hat)
        grad_weight = sum_dy_xhat.to(weight.dtype) if weight is not None else None
        grad_bias = sum_dy.to(weight.dtype) if ctx.has_bias else None
        reduced = allreduce(torch.cat([sum_dy, sum_dy_xhat]), op=Sum)
        mean_dy = reduced[:channels] / total
        mean_dy_xhat = reduced[channels:] / total
        scale = invstd if weight is None else invstd * weight.to(x_hat.dtype)
        grad_input = _per_channel(scale, dy) * (dy - _per_channel(mean_dy, dy)
                                               - x_hat * _per_channel(mean_dy_xhat, dy))
        return grad_input.to(grad_output.dtype), grad_weight, grad_bias, None, None, None, None
