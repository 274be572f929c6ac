"""BatchNorm statistics over the global batch of a DDP run, on CPU (gloo) as on CUDA.

``torch.nn.SyncBatchNorm`` runs on GPUs only; this one all-reduces the per-channel count, sum
and sum of squares (differentiably, so gradients match) and works with any backend. With one
process, or in eval mode, a converted layer behaves exactly like the original.
"""

from __future__ import annotations

import functools

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["convert_sync_batchnorm", "global_batch_norm", "global_moments"]


_CONVERTED = "_global_batch_statistics"  # class attribute marking a converted layer's class


def _world() -> int:
    dist = torch.distributed
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


class _AllReduceSum(torch.autograd.Function):
    """Sum over processes; the gradient of every process's input is the sum of the gradients."""

    @staticmethod
    def forward(ctx, x):
        x = x.clone()
        torch.distributed.all_reduce(x)
        return x

    @staticmethod
    def backward(ctx, grad):
        grad = grad.clone()
        torch.distributed.all_reduce(grad)
        return grad


def global_batch_norm(bn: nn.modules.batchnorm._BatchNorm, x: torch.Tensor, *, channels_last: bool):
    """Batch norm of ``x`` in training mode with statistics over every process's batch.

    Args:
        bn: the layer whose weight, bias, eps, momentum and running buffers are used (updated).
        x: (..., C) when ``channels_last`` (a PointBatchNorm input), else (B, C, ...).

    Returns:
        A tensor shaped like ``x``.
    """
    moved = x if channels_last else x.movedim(1, -1)
    flat = moved.reshape(-1, moved.shape[-1])  # (S, C): S samples of the statistics here
    c = flat.shape[1]
    local = torch.cat([flat.sum(0), (flat * flat).sum(0), flat.new_tensor([float(flat.shape[0])])])
    total = _AllReduceSum.apply(local)  # (2 C + 1,), summed over processes
    n = total[-1]
    if float(n.detach()) <= 1:  # one sample in the whole batch: normalise with the running statistics
        out = F.batch_norm(flat, bn.running_mean, bn.running_var, bn.weight, bn.bias, False, 0.0, bn.eps)
    else:
        mean = total[:c] / n
        var = (total[c : 2 * c] / n - mean * mean).clamp_min(0)
        out = (flat - mean) * torch.rsqrt(var + bn.eps)
        if bn.affine:
            out = out * bn.weight + bn.bias
        if bn.track_running_stats and bn.running_mean is not None:
            with torch.no_grad():
                bn.num_batches_tracked.add_(1)
                momentum = bn.momentum if bn.momentum is not None else 1.0 / float(bn.num_batches_tracked)
                bn.running_mean.mul_(1 - momentum).add_(mean.detach(), alpha=momentum)
                unbiased = var.detach() * (n / (n - 1))
                bn.running_var.mul_(1 - momentum).add_(unbiased, alpha=momentum)
    out = out.view(moved.shape)
    return out if channels_last else out.movedim(-1, 1)


@functools.cache
def _sync_class(base: type) -> type:
    from ..nn.mlp import PointBatchNorm

    channels_last = issubclass(base, PointBatchNorm)  # (..., C) inputs rather than (B, C, ...)

    def forward(self, x, **mask):  # mask= of a PointBatchNorm: it selects rows, then calls forward
        if mask.get("mask") is not None:
            return base.forward(self, x, **mask)
        if self.training and _world() > 1:
            return global_batch_norm(self, x, channels_last=channels_last)
        return base.forward(self, x)

    return type(f"Global{base.__name__}", (base,),
                {"forward": forward, "__module__": __name__, _CONVERTED: True})


def global_moments(flat: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, int]:
    """Mean (C,), covariance (C, C) and count of the rows of ``flat`` (S, C) of every process
    (two differentiable all-reduces: the count and sum, then the products centred on the global
    mean, as a one-process run computes them)."""
    first = _AllReduceSum.apply(torch.cat([flat.sum(0), flat.new_tensor([float(flat.shape[0])])]))
    count = int(round(float(first[-1].detach())))
    mean = first[:-1] / count
    centred = flat - mean
    return mean, _AllReduceSum.apply(centred.T @ centred) / count, count


@functools.cache
def _sync_moments_class(base: type) -> type:
    def batch_moments(self, flat):
        if self.training and _world() > 1:
            return global_moments(flat)
        return base.batch_moments(self, flat)

    return type(f"Global{base.__name__}", (base,),
                {"batch_moments": batch_moments, "__module__": __name__, _CONVERTED: True})


def convert_sync_batchnorm(model: nn.Module) -> nn.Module:
    """Make every BatchNorm layer of ``model`` use global-batch statistics under DDP (in place;
    parameter and buffer names are unchanged, so checkpoints load either way). Returns ``model``.

    Besides torch's BatchNorm layers this converts modules that compute their batch statistics
    through a ``batch_moments(flat) -> (mean, cov, count)`` method (the primary capsules' branch
    BatchNorms, :class:`pointabstract.nn.PrimaryPointCapsules`): under DDP it returns the
    moments of every process's rows."""
    for module in model.modules():
        if getattr(type(module), _CONVERTED, False):
            continue  # converted already (the function is idempotent)
        if isinstance(module, nn.modules.batchnorm._BatchNorm):
            module.__class__ = _sync_class(type(module))
        elif callable(getattr(type(module), "batch_moments", None)):
            module.__class__ = _sync_moments_class(type(module))
    return model
