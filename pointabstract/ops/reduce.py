"""Max pooling over one axis (a point's neighbours, a cloud's points), differentiable."""

from __future__ import annotations

import math

import torch

from .. import _validate as V

__all__ = ["max_over", "max_over_naive"]


def max_over(x: torch.Tensor, dim: int) -> torch.Tensor:
    """``x.max(dim).values``, the gradient to the first maximal entry (as ``torch.max``).

    On CPU (float32 / float64, numba available) and ``dim`` not the last axis, a compiled
    kernel reads each row once (:mod:`pointabstract.ops.kernels.max_reduce`): torch's
    reduction over a middle axis took 6-12x longer for the demo classifier's (B, N, K, C)
    neighbour pooling. Elsewhere this is ``torch.max``. NaN propagates as in ``torch.max``.

    Args:
        x: a tensor with at least one dimension; ``x.shape[dim]`` must be at least 1.
        dim: the axis to reduce (negative counts from the end).

    Returns:
        ``x`` without axis ``dim``: the maximum along it.
    """
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
    V.check_int_in("dim", dim, -x.dim(), x.dim() - 1, note=f" (x has {x.dim()} dimensions)")
    dim = dim % x.dim()
    if x.shape[dim] == 0:
        raise ValueError(f"x has no entries along dim {dim} to take the max of, shape {tuple(x.shape)}")
    from .kernels import takes

    if dim == x.dim() - 1 or not takes(x):
        return x.max(dim).values
    return _MaxOver.apply(x, dim)


def max_over_naive(x: torch.Tensor, dim: int) -> torch.Tensor:
    """Reference (tests only): ``torch.max`` along ``dim``."""
    return x.max(dim).values


def _run(name: str, work: int, *arrays) -> None:
    from .kernels import max_reduce, run

    run(getattr(max_reduce, name), getattr(max_reduce, f"{name}_ser"), *arrays, work=work)


class _MaxOver(torch.autograd.Function):
    """Max over axis ``dim`` of ``x`` viewed as (R, K, C); backward puts the gradient at the
    index that won (saved as (R, C) int64)."""

    @staticmethod
    def forward(ctx, x, dim):
        shape = x.shape
        rows, size = math.prod(shape[:dim]), shape[dim]
        x3 = x.contiguous().view(rows, size, -1)
        out = x.new_empty(rows, x3.shape[2])
        arg = torch.empty(out.shape, dtype=torch.int64)
        _run("max_forward", x3.numel(), x3.detach().numpy(), out.numpy(), arg.numpy())
        ctx.save_for_backward(arg)
        ctx.shape, ctx.dim = shape, dim
        return out.view(*shape[:dim], *shape[dim + 1:])

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad):
        (arg,) = ctx.saved_tensors
        shape = ctx.shape
        grad2 = grad.contiguous().view(arg.shape)
        out = grad.new_empty(arg.shape[0], shape[ctx.dim], arg.shape[1])
        _run("max_backward", out.numel(), grad2.numpy(), arg.numpy(), out.numpy())
        return out.view(shape), None
