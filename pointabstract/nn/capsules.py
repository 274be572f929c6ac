"""Capsule building blocks of 3D point capsule networks (Zhao et al. 2019): ``squash`` and the
primary point capsules.

Primary point capsules: a shared per-point MLP 3-64-128 (BatchNorm, ReLU), then D independent
branches, each a per-point linear layer 128 -> P with its own BatchNorm and a max-pool over the
N points; the D branch outputs are stacked to (B, P, D) and squashed over D.

Written literally, the branches form a (B, D, P, N) tensor (about 1 GB in float32 at B = 8,
P = 1024, N = 2048, D = 16) that autograd keeps for the BatchNorm and the max-pool.
:class:`PrimaryPointCapsules` computes the same values without keeping it:

- BatchNorm is an affine map per channel, so its maximum over the points is taken at the
  point where the pre-norm activation ``z = W h + b`` is largest (or smallest, where the
  BatchNorm scale is negative). That point is found without gradient, a few branches at a
  time (``chunk``), so only a (B, N, chunk P) tensor ever exists.
- The batch statistics of ``z`` follow exactly from those of ``h``:
  ``mean_z = W mean_h + b`` and ``var_z = diag(W cov_h W^T)``.
- ``z`` at the chosen points is recomputed differentiably from the gathered ``h`` rows, so
  gradients equal the naive version's (max-pool gradients go to the arg-max point).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .. import _validate as V
from ..ops._dist import take_rows
from .mlp import PointBatchNorm, run_masked
from .ragged import point_mask

__all__ = ["PrimaryPointCapsules", "primary_capsules_naive", "squash"]


def squash(s: torch.Tensor, dim: int = -1, *, eps: float = 1e-8) -> torch.Tensor:
    """Capsule non-linearity ``|s|^2 / (1 + |s|^2) * s / |s|``: keeps the direction, maps the
    length into [0, 1).

    ``|s|`` is computed as ``sqrt(|s|^2 + eps)``, so the value and the gradient at ``s = 0``
    are 0 and finite (the 3D-PointCapsNet original divides by ``|s|`` and gives NaN there).

    Args:
        s: (..., D, ...) vectors along ``dim``.
        dim: the capsule dimension.
        eps: added to ``|s|^2`` under the square root (> 0).

    Returns:
        A tensor shaped like ``s`` whose vectors have length ``|s|^2 / (1 + |s|^2) < 1``
        (up to float rounding for very long vectors).
    """
    if not isinstance(s, torch.Tensor) or not s.is_floating_point():
        raise TypeError(f"s must be a floating-point tensor, got {type(s).__name__} "
                        f"{getattr(s, 'dtype', '')}")
    V.check_positive("eps", eps)
    n2 = (s * s).sum(dim, keepdim=True)
    return s * (n2 / ((1 + n2) * torch.sqrt(n2 + eps)))


class PrimaryPointCapsules(nn.Module):
    """Point cloud (B, N, 3) -> primary capsules (B, P, D), as in 3D-PointCapsNet.

    Args:
        num_caps: P primary capsules (channels of each branch).
        caps_dim: D capsule dimension (number of branches).
        hidden: channels of the shared per-point MLP (the paper: 64, 128).
        chunk: branches evaluated together when searching the max-pool points (memory
            (B, N, chunk P) floats; the result does not depend on it).
        bn_eps, momentum: of the branch BatchNorms (as ``nn.BatchNorm1d``; ``momentum=None``
            gives the cumulative average since :meth:`reset_running_stats`, used by precise BN).
        pooled_norm: also normalise every pooled channel (D x P of them) over the batch with a
            BatchNorm *after* the max-pool, before the squash (not in 3D-PointCapsNet; see
            docs/capsules.md: the maximum of a normalised channel over N points is nearly the same
            for every shape, so without it the primary capsules barely depend on the input).

    Parameters of branch d: ``weight[d]`` (P, C), ``bias[d]`` (P,), BatchNorm ``bn_weight[d]``,
    ``bn_bias[d]``, buffers ``running_mean[d]``, ``running_var[d]`` (P,).
    """

    def __init__(self, num_caps: int, caps_dim: int, *, hidden=(64, 128), chunk: int = 2,
                 bn_eps: float = 1e-5, momentum: float = 0.1, pooled_norm: bool = False):
        super().__init__()
        for name, value in [("num_caps", num_caps), ("caps_dim", caps_dim), ("chunk", chunk)]:
            V.check_int(name, value, low=1)
        layers, c_in = [], 3
        for c in hidden:
            layers += [nn.Linear(c_in, c), PointBatchNorm(c), nn.ReLU()]
            c_in = c
        self.mlp = nn.Sequential(*layers)
        self.num_caps, self.caps_dim, self.chunk = num_caps, caps_dim, chunk
        self.bn_eps, self.momentum = bn_eps, momentum
        bound = 1 / c_in ** 0.5  # nn.Linear's default initialisation
        self.weight = nn.Parameter(torch.empty(caps_dim, num_caps, c_in).uniform_(-bound, bound))
        self.bias = nn.Parameter(torch.empty(caps_dim, num_caps).uniform_(-bound, bound))
        self.bn_weight = nn.Parameter(torch.ones(caps_dim, num_caps))
        self.bn_bias = nn.Parameter(torch.zeros(caps_dim, num_caps))
        self.register_buffer("running_mean", torch.zeros(caps_dim, num_caps))
        self.register_buffer("running_var", torch.ones(caps_dim, num_caps))
        self._batches = 0  # batches averaged since reset_running_stats (for momentum=None)
        self.pooled_norm = nn.BatchNorm1d(caps_dim * num_caps) if V.check_bool("pooled_norm", pooled_norm) \
            else None

    def reset_running_stats(self) -> None:
        """Running mean 0, variance 1, and restart the cumulative average (as ``nn.BatchNorm1d``)."""
        self.running_mean.zero_()
        self.running_var.fill_(1.0)
        self._batches = 0

    def forward(self, pos: torch.Tensor, lengths: torch.Tensor | None = None) -> torch.Tensor:
        """pos: (B, N, 3) -> squashed primary capsules u: (B, P, D). ``lengths`` (B,) int64:
        the real points of each cloud (None: all); padding is never pooled nor counted in the
        BatchNorm statistics."""
        V.check_cloud("pos", pos)
        mask = point_mask(lengths, pos.shape[1])
        h = run_masked(self.mlp, pos, mask)  # (B, N, C)
        idx = self._pool_points(h, mask)  # (B, D, P) point of each branch channel's max-pool
        rows = take_rows(h, idx)  # (B, D, P, C): h at those points
        z = (rows * self.weight).sum(-1) + self.bias  # (B, D, P) pre-norm activation there
        mean, var = self._stats(h if mask is None else h[mask])
        out = (z - mean) * torch.rsqrt(var + self.bn_eps) * self.bn_weight + self.bn_bias
        if self.pooled_norm is not None:
            out = self.pooled_norm(out.flatten(1)).view(out.shape)  # (B, D, P), over the batch
        return squash(out.permute(0, 2, 1))  # (B, P, D)

    @torch.no_grad()
    def _pool_points(self, h: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """(B, D, P) index of the point where each branch channel's BatchNorm output peaks
        (among the real points: mask (B, N))."""
        sign = torch.where(self.bn_weight >= 0, 1.0, -1.0).to(h.dtype)  # (D, P)
        out = []
        for d0 in range(0, self.caps_dim, self.chunk):
            w = self.weight[d0:d0 + self.chunk] * sign[d0:d0 + self.chunk, :, None]  # (d, P, C)
            # (d P, C) @ (B, C, N): N contiguous, so the argmax reads rows, not strided columns
            z = torch.matmul(w.reshape(-1, w.shape[-1]), h.transpose(1, 2))  # (B, d P, N): one chunk
            if mask is not None:
                z = z.masked_fill(~mask.unsqueeze(1), -torch.inf)
            out.append(z.view(h.shape[0], w.shape[0], w.shape[1], -1).max(-1).indices)  # argmax, faster
        return torch.cat(out, 1)

    def batch_moments(self, flat: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, int]:
        """Mean (C,), covariance (C, C) and count S of the rows of ``flat`` (S, C): the shared
        features every branch BatchNorm's batch statistics are computed from. Under DDP with
        ``sync_bn`` (:func:`pointabstract.engine.sync_bn.convert_sync_batchnorm`) they are the
        moments of every process's rows instead."""
        mean = flat.mean(0)
        centred = flat - mean
        return mean, centred.T @ centred / flat.shape[0], flat.shape[0]

    def _stats(self, h: torch.Tensor):
        """BatchNorm mean and variance (D, P) of every branch channel (batch statistics in
        training mode, updating the running ones; running statistics in eval mode)."""
        if not self.training:
            return self.running_mean, self.running_var
        mean_h, cov, count = self.batch_moments(h.reshape(-1, h.shape[-1]))  # h: (B, N, C) or (V, C)
        mean = self.weight @ mean_h + self.bias  # (D, P)
        var = ((self.weight @ cov) * self.weight).sum(-1)  # (D, P) diag(W cov W^T)
        with torch.no_grad():
            unbiased = var * count / max(count - 1, 1)
            self._batches += 1
            weight = self.momentum if self.momentum is not None else 1.0 / self._batches
            self.running_mean.lerp_(mean.detach(), weight)
            self.running_var.lerp_(unbiased.detach(), weight)
        return mean, var


def primary_capsules_naive(module: PrimaryPointCapsules, pos: torch.Tensor) -> torch.Tensor:
    """Reference (tests only): the literal (B, D, P, N) computation with ``module``'s
    parameters, one ``F.batch_norm`` and one max-pool per branch. Updates the running
    statistics like the module does. Returns (B, P, D)."""
    h = module.mlp(pos)  # (B, N, C)
    branches = []
    for d in range(module.caps_dim):
        z = (h @ module.weight[d].T + module.bias[d]).transpose(1, 2)  # (B, P, N)
        z = F.batch_norm(z, module.running_mean[d], module.running_var[d], module.bn_weight[d],
                         module.bn_bias[d], module.training, module.momentum, module.bn_eps)
        branches.append(z.max(-1).values)  # (B, P)
    pooled = torch.stack(branches, 1)  # (B, D, P)
    if module.pooled_norm is not None:
        pooled = module.pooled_norm(pooled.flatten(1)).view(pooled.shape)
    return squash(pooled.transpose(1, 2))  # (B, P, D)
