"""SyncBatchNorm: batch normalization whose statistics span every rank's batch (Horovod's
horovod.torch.sync_batch_norm), implemented with plain tensor ops so it runs on the CPU.

Training forward: each rank reduces its per-channel sum, sum of squares and element count;
one allreduce(Sum) of these gives the global mean and variance. Backward: one allreduce(Sum)
of the per-channel sums of dy and dy*x_hat gives the input gradient of the global batch. The
weight and bias gradients stay local, as in Horovod and torch (DistributedOptimizer averages
them like every other gradient).
"""
import torch
import torch.nn.functional as F
from torch.nn.modules.batchnorm import _BatchNorm

from hvd.basics import Sum, size
from hvd.torch.mpi_ops import allreduce


class SyncBatchNorm(_BatchNorm):
    """Applies synchronous batch normalization over inputs of shape (N, C, ...)."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats)

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def _run_bn(self, input):
        return F.batch_norm(input, self.running_mean, self.running_var, self.weight, self.bias,
                            self.training or not self.track_running_stats, self.momentum,
                            self.eps)

    def forward(self, input):
        self._check_input_dim(input)
        if self.training and self.track_running_stats:
            self.num_batches_tracked = self.num_batches_tracked + 1
        if not self.training and self.track_running_stats:
            return self._run_bn(input)
        if size() == 1 and input.numel() > input.shape[1]:
            return self._run_bn(input)  # torch's own kernel; it refuses one value per channel
        if self.momentum is None:
            momentum = 1.0 / float(self.num_batches_tracked)
        else:
            momentum = self.momentum
        return _SyncBatchNorm.apply(input, self.weight, self.bias, self.running_mean,
                                    self.running_var, self.eps, momentum)


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
        local_count = float(x.numel() // channels)
        stats = torch.cat([_channel_sum(x), _channel_sum(x * x),
                           torch.tensor([local_count], dtype=x.dtype, device=x.device)])
        stats = allreduce(stats, op=Sum, name=None)
        total = stats[-1]
        # One value per channel in the whole batch is allowed, as Horovod's sync kernel allows
        # it: the output is the bias. Its variance 0 has no unbiased estimate (torch's kernel
        # stores 0/0 = NaN); the running variance takes the 0 instead, so it stays finite.
        if total.item() < 1:
            raise ValueError("Expected at least 1 value per channel when training, got 0")
        mean = stats[:channels] / total
        var = (stats[channels:2 * channels] / total - mean * mean).clamp_min(0)
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
        ctx.save_for_backward(x_hat, invstd, weight, total)
        ctx.has_bias = bias is not None
        return out.to(input.dtype)

    @staticmethod
    def backward(ctx, grad_output):
        x_hat, invstd, weight, total = ctx.saved_tensors
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
