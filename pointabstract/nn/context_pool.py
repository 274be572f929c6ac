"""ContextPool for point sets (Huang et al. 2022, *Adaptive Context Pooling*), Sec. 3.2.

Each point pools the features of its K nearest neighbours in xyz with learned weights and a
learned Gaussian support, so the next attention block sees context-aware features::

    y_i = sum_j w_j g_ij x_j / sum_j w_j g_ij        j over the K nearest points of i (i included)
    g_ij = exp(-|p_j - p_i|^2 / (2 sigma_i^2))       the locality prior (paper: Gaussian mask g^i)
    {w, s} = m(X)                                    the mapping: two layers, 2 outputs per point

The paper's mapping is two convolutions over the token sequence. Its point-set analogue here
(``mapping="neighbourhood"``, the default): layer 1 sees each point's neighbourhood (a linear
layer on every neighbour's features, max-pooled over the K neighbours, ReLU), layer 2 is per
point (a linear layer with one output per predicted quantity: the weight logit ``a_i`` and/or
the size logit ``b_i``). ``mapping="point"`` is the paper's "MLP-based CP" (its Table 3): both
layers per point, so a point's weight and size see only its own features.

Normalisation (as in the paper, with one documented departure for the sizes):

- weights: ``w = softmax(a)`` over the N points of each cloud (``w >= 0``, ``sum_j w_j = 1``).
  The cloud-wide softmax denominator cancels in ``y_i``, so the pooling coefficients are
  ``softmax_j(a_j + log g_ij)`` over i's K neighbours (computed that way: no underflow).
- sizes (``sizes="sigmoid"``, the default): ``s_i = sigmoid(b_i)``, the two-way softmax of
  ``(b_i, 0)``, in (0, 1) like the paper's normalised size ``s_i in [0, 1]``. A softmax over the
  N points would tie the sizes to sum to one (mean ``N s_i = 1``), making the mean window ``r``
  times the spacing, where the Gaussian vanishes at every neighbour and its gradients with it;
  so each size is normalised alone. ``sizes="softmax"`` is the paper's literal variant:
  ``s = softmax(b)`` over the N points of each cloud and ``sigma_i = r * N * s_i * h_i`` (the
  paper's ``r n s_i`` with n = N tokens at the local spacing).
- support: the paper's ``sigma_i = r n s_i`` (``r = 0.1``) measures the window in tokens: n
  tokens at unit spacing. Here the pool reaches the K nearest points (n -> K) and the unit
  spacing becomes the local point spacing ``h_i`` (the mean, over i's K neighbours, of each
  neighbour's distance to its own nearest other point; exactly 1 on a unit-spaced line), so
  ``sigma_i = r * K * s_i * h_i``. The Gaussian uses ``sigma_i^2 + eps^2`` with ``eps`` = 1e-4
  times the cloud's radius: a size that the training drives to 0 (measured: the pool after
  the last centroid block of the demo classifier does) then pools the point alone with finite
  gradients, where ``sigma_i -> 0`` alone overflows them to NaN.

Variants (the paper's Tables 1-2 ablations), chosen by arguments:

- ``weights="learned"`` (default) | ``"uniform"`` (``w_j = 1``: average pooling) |
  ``"nonlocal"`` (NL weights, the paper's eq. 3: ``w_ij`` from ``theta(x_i) . phi(x_j) / sqrt(C)``,
  two C x C projections, a softmax over the neighbours).
- ``normalize=False`` (learned or nonlocal weights only): no softmax; the raw predictions
  ``a_j`` (or ``theta . phi``) weight the neighbours and only the locality mask normalises:
  ``y_i = sum_j a_j g_ij x_j / sum_j g_ij``.
- ``locality="gaussian"`` (default, learned ``sigma_i``) | ``"none"`` (``g_ij = 1`` over the K
  neighbours: the KNN itself stays a hard bound, so the cost stays O(N K)) | ``"fixed"``
  (``g_ij = 1`` for the ``window`` nearest points, including i, and 0 beyond: a hand-picked
  window).

Cost: one self-KNN in xyz and a (B, N, K, C) gather: O(B N K C); NL weights add two C x C
projections. Output replaces the input (the paper feeds the pooled features to the next block).
:func:`~pointabstract.nn.context_pool_naive.context_pool_naive` is the loop reference.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .. import _validate as V
from ..ops import gather_points, knn, max_over
from .attention import _fused_ok, _NeighbourSum  # the compiled neighbour sums of the attention

__all__ = ["LOCALITIES", "MAPPINGS", "SIZES", "WEIGHTS", "ContextPool", "ContextPoolOptions",
           "context_pool_from_config"]

WEIGHTS = ("learned", "uniform", "nonlocal")
LOCALITIES = ("gaussian", "none", "fixed")
SIZES = ("sigmoid", "softmax")
MAPPINGS = ("neighbourhood", "point")


class ContextPool(nn.Module):
    """Adaptive context pooling over each point's K nearest neighbours in xyz.

    Standalone use: ``y = ContextPool(64, k=16)(x, pos)``; pluggable after any block as a
    post-module (:class:`~pointabstract.nn.BlockStack` ``post=``).

    Args:
        dim: channels C of the features it pools.
        k: neighbours K each point pools over (itself included), >= 2; clouds with fewer
            points pool over all of them.
        weights: ``"learned"`` | ``"uniform"`` | ``"nonlocal"`` (see the module docstring).
        normalize: softmax-normalise the weights (the paper); False only with learned or
            nonlocal weights.
        locality: ``"gaussian"`` (learned support) | ``"none"`` | ``"fixed"`` (hard window).
        window: points in the fixed window (1..k; default k // 2); only with ``"fixed"``.
        r: the paper's scale of the support, ``sigma_i = r * K * s_i * h_i``; > 0.
        mapping: ``"neighbourhood"`` (layer 1 max-pooled over the K neighbours, the default) |
            ``"point"`` (both layers per point: the paper's "MLP-based CP").
        sizes: ``"sigmoid"`` (each size alone, the default) | ``"softmax"`` (over the cloud,
            the paper's literal normalisation, ``sigma_i = r * N * s_i * h_i``); only with
            ``"gaussian"``.
        hidden: channels of the mapping's first layer (default max(8, C // 4)).
    """

    def __init__(self, dim: int, *, k: int = 16, weights: str = "learned", normalize: bool = True,
                 locality: str = "gaussian", window: int | None = None, r: float = 0.1,
                 hidden: int | None = None, sizes: str = "sigmoid", mapping: str = "neighbourhood"):
        super().__init__()
        self.dim = V.check_int("dim", dim, low=1)
        self.k = V.check_int("k", k, low=2)
        V.check_choice("weights", weights, WEIGHTS)
        V.check_choice("locality", locality, LOCALITIES)
        V.check_bool("normalize", normalize)
        V.check_choice("sizes", sizes, SIZES)
        V.check_choice("mapping", mapping, MAPPINGS)
        if sizes != "sigmoid" and locality != "gaussian":
            raise ValueError(f"sizes={sizes!r} needs locality='gaussian' (the learned support), got "
                             f"locality={locality!r}")
        if not normalize and weights == "uniform":
            raise ValueError("normalize=False needs learned or nonlocal weights (uniform weights have "
                             "nothing to normalise), got weights='uniform'")
        if locality == "fixed":
            window = self.k // 2 if window is None else V.check_int("window", window, low=1, high=self.k,
                                                                     what="k")
        elif window is not None:
            raise ValueError(f"window is only used with locality='fixed', got window={window!r} with "
                             f"locality={locality!r}")
        self.weights, self.normalize, self.locality = weights, normalize, locality
        self.window, self.r, self.sizes, self.mapping = window, V.check_positive("r", r), sizes, mapping
        outputs = (weights == "learned") + (locality == "gaussian")  # a_i and / or b_i
        hidden = max(8, dim // 4) if hidden is None else V.check_int("hidden", hidden, low=1)
        self.map1 = nn.Linear(dim, hidden) if outputs else None  # m(X), layer 1 (neighbourhood)
        self.map2 = nn.Linear(hidden, outputs) if outputs else None  # m(X), layer 2 (per point)
        if weights == "nonlocal":
            self.theta = nn.Linear(dim, dim, bias=False)
            self.phi = nn.Linear(dim, dim, bias=False)

    def extra_repr(self) -> str:
        extra = f", window={self.window}" if self.locality == "fixed" else ""
        extra += f", sizes={self.sizes!r}" if self.sizes != "sigmoid" else ""
        extra += f", mapping={self.mapping!r}" if self.mapping != "neighbourhood" else ""
        return (f"dim={self.dim}, k={self.k}, weights={self.weights!r}, normalize={self.normalize}, "
                f"locality={self.locality!r}{extra}, r={self.r}")

    def forward(self, x: torch.Tensor, pos: torch.Tensor, *, return_info: bool = False):
        """Pool every point's neighbourhood.

        Args:
            x: (B, N, C) features, C = ``dim``.
            pos: (B, N, 3) point coordinates.
            return_info: also return what the viewer shows.

        Returns:
            y: (B, N, C) pooled features. With ``return_info`` also a dict: ``idx`` (B, N, K)
            the neighbours (``idx[b, i, j]`` indexes ``x[b]``), ``coef`` (B, N, K) the pooling
            coefficients of each neighbour (they sum to 1 per point when normalised),
            ``weight`` (B, N) the per-point weight ``w`` (softmax over the cloud, or the raw
            ``a`` when not normalised; None for uniform and nonlocal weights), ``size`` (B, N)
            ``s`` in (0, 1) and ``sigma`` (B, N) (None without the Gaussian).
        """
        V.check_cloud("pos", pos)  # an empty batch, NaN / Inf coordinates
        # hidden features inside a model: a NaN there is the trainer's to report, not a user error
        V.check_features("x", x, pos, channels=self.dim, finite=False)
        k = min(self.k, x.shape[1])
        p = pos.detach()
        dist2, idx = knn(p, p, k)  # (B, N, K): the point itself first
        nbrs = gather_points(x, idx) if self.weights == "nonlocal" else None  # (B, N, K, C)
        pred = None
        if self.map1 is not None and self.mapping == "point":  # the paper's MLP-based mapping
            pred = self.map2(self.map1(x).relu())  # (B, N, 1 or 2)
        elif self.map1 is not None:
            pred = self.map2(max_over(gather_points(self.map1(x), idx), 2).relu())  # (B, N, 1 or 2)
        logit, log_g, info = self._terms(x, p, nbrs, pred, dist2, idx)
        if self.normalize:
            coef = (logit + log_g).softmax(-1)  # (B, N, K)
        else:
            g = log_g.exp()
            coef = logit * g / g.sum(-1, keepdim=True)
        y = _pooled_sum(coef, x, idx, nbrs)
        if not return_info:
            return y
        return y, {"idx": idx, "coef": coef, **info}

    def _terms(self, x, pos, nbrs, pred, dist2, idx):
        """Weight logits (B, N, K) (or raw weights), log locality mask (B, N, K), viewer info."""
        info = {"weight": None, "size": None, "sigma": None}
        if self.weights == "learned":
            a = pred[..., 0]  # (B, N)
            info["weight"] = a.softmax(-1) if self.normalize else a
            logit = gather_points(a.unsqueeze(-1), idx).squeeze(-1)  # (B, N, K): a_j
        elif self.weights == "nonlocal":
            theta = self.theta(x).unsqueeze(2)  # (B, N, 1, C)
            logit = (theta * self.phi(nbrs)).sum(-1) / math.sqrt(self.dim)  # (B, N, K)
        else:
            logit = torch.zeros_like(dist2)
        if self.locality == "gaussian":
            if self.sizes == "softmax":  # the paper's: sizes sum to 1 over the cloud, window n = N
                s, n = pred[..., -1].softmax(-1), idx.shape[1]  # (B, N)
            else:  # each size alone, window n = K
                s, n = pred[..., -1].sigmoid(), idx.shape[2]
            sigma = self.r * n * s * _spacing(dist2, idx)
            floor = _floor(pos)  # (B, 1): a vanishing size pools nothing, with finite gradients
            var = (sigma.square() + floor.square()).clamp_min(torch.finfo(x.dtype).tiny)  # (B, N)
            log_g = -dist2 / (2 * var).unsqueeze(-1)
            info.update(size=s, sigma=sigma)
        elif self.locality == "fixed":
            far = torch.arange(idx.shape[2], device=idx.device) >= self.window  # (K,)
            log_g = torch.zeros_like(dist2).masked_fill(far, float("-inf"))
        else:
            log_g = torch.zeros_like(dist2)
        return logit, log_g, info


def _pooled_sum(coef: torch.Tensor, x: torch.Tensor, idx: torch.Tensor, nbrs: torch.Tensor | None):
    """(B, N, C) ``sum_k coef[b, n, k] x[b, idx[b, n, k]]``. On CPU by the neighbour-attention
    kernels (one head; no (B, N, K, C) tensor is formed: the pool's largest cost), else from the
    gathered neighbours ``nbrs`` (gathered here when None)."""
    if _fused_ok(coef, x):
        batch, n, channels = x.shape
        values = F.pad(x, (channels, 0))  # (B, N, 2C): the kernel reads values after C key channels
        return _NeighbourSum.apply(coef.unsqueeze(-1), values, idx).view(batch, n, channels)
    return torch.einsum("bnk,bnkc->bnc", coef, gather_points(x, idx) if nbrs is None else nbrs)


FLOOR = 1e-4  # sigma_i^2 + (FLOOR * cloud radius)^2 in the Gaussian (see ContextPool)


def _floor(pos: torch.Tensor) -> torch.Tensor:
    """(B, 1): FLOOR times each cloud's radius (largest distance from its mean), at least tiny."""
    radius = (pos - pos.mean(1, keepdim=True)).norm(dim=-1).amax(1, keepdim=True)  # (B, 1)
    return (FLOOR * radius).clamp_min(torch.finfo(pos.dtype).tiny)


def _spacing(dist2: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    """Local spacing h_i (B, N): mean over i's K neighbours of their nearest-other-point distance."""
    if dist2.shape[2] < 2:
        return torch.zeros_like(dist2[..., 0])
    nearest = dist2[..., 1].clamp_min(0).sqrt()  # (B, N): each point's distance to its nearest other
    return gather_points(nearest.unsqueeze(-1), idx).squeeze(-1).mean(-1)


@dataclass
class ContextPoolOptions:
    """The ``model.context_pool*`` keys every attention model's config inherits."""

    context_pool: bool = False  # ContextPool (Huang et al. 2022) after every attention block / layer
    context_pool_k: int = 16  # ContextPool: neighbours K in xyz each point pools over
    context_pool_weights: str = "learned"  # ContextPool weights: learned | uniform | nonlocal
    context_pool_normalize: bool = True  # ContextPool: softmax-normalised weights (False: raw)
    context_pool_locality: str = "gaussian"  # ContextPool locality: gaussian (learned) | none | fixed
    context_pool_window: int | None = None  # ContextPool fixed window (points; None: k // 2)
    context_pool_r: float = 0.1  # ContextPool support scale: sigma_i = r K s_i h_i
    context_pool_sizes: str = "sigmoid"  # ContextPool sizes: sigmoid (each alone) | softmax (paper's)
    context_pool_mapping: str = "neighbourhood"  # ContextPool m(X) layer 1: neighbourhood | point (MLP)


def context_pool_from_config(cfg, dim: int) -> ContextPool | None:
    """The ContextPool a model config asks for after a block of width ``dim``, or None.

    Reads the ``context_pool*`` fields every attention model's config has (the ``model.*``
    keys ``context_pool``, ``context_pool_k``, ``context_pool_weights``,
    ``context_pool_normalize``, ``context_pool_locality``, ``context_pool_window``,
    ``context_pool_r``, ``context_pool_sizes``, ``context_pool_mapping``); ``context_pool=False``
    (the default) gives None.
    """
    if not V.check_bool("context_pool", cfg.context_pool):
        return None
    try:
        return ContextPool(dim, k=cfg.context_pool_k, weights=cfg.context_pool_weights,
                           normalize=cfg.context_pool_normalize, locality=cfg.context_pool_locality,
                           window=cfg.context_pool_window, r=cfg.context_pool_r,
                           sizes=cfg.context_pool_sizes, mapping=cfg.context_pool_mapping)
    except (TypeError, ValueError) as err:  # name the config keys the user wrote
        raise type(err)(f"context_pool options (model.context_pool_<name>): {err}") from None
