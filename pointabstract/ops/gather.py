"""Differentiable gathers and upsampling by neighbour lookup."""

from __future__ import annotations

import torch

from .. import _validate as V
from ._dist import take_rows
from .knn import knn

__all__ = ["gather_points", "knn_interpolate", "nearest_upsample"]


def gather_points(x: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    """Pick rows of ``x`` per cloud: ``out[b, ...] = x[b, idx[b, ...]]``.

    Differentiable with respect to ``x`` (the backward pass scatters-adds into it).

    Args:
        x: (B, N, C) points or features.
        idx: (B, ...) int64 indices into the N dimension, e.g. (B, M) from FPS or (B, M, K)
            from ``knn``; the padding value -1 gathers a row of zeros.

    Returns:
        (B, ..., C) gathered rows, same dtype and device as ``x``.
    """
    V.check_cloud("x", x, dim=None, finite=False)  # features may carry NaN; geometry may not
    V.check_index("idx", idx, x.shape[0], x.shape[1], x.device)
    out = take_rows(x, idx)
    # on a GPU the mask costs less than asking the host whether there is padding (a sync)
    if idx.device.type != "cpu" or bool((idx < 0).any()):
        out = out.masked_fill((idx < 0).unsqueeze(-1), 0.0)
    return out


def knn_interpolate(x: torch.Tensor, pos_x: torch.Tensor, pos_y: torch.Tensor, *, k: int = 3,
                    x_lengths: torch.Tensor | None = None, backend: str = "auto") -> torch.Tensor:
    """Inverse-distance interpolation of features from ``pos_x`` onto ``pos_y``.

    PointNet++ feature propagation / PyG ``knn_interpolate``: each target point averages the
    features of its ``k`` nearest sources with weights ``1 / max(d^2, 1e-16)`` (squared
    distances), normalised to sum to one. A target that coincides with a source takes that
    source's features. Differentiable with respect to ``x``.

    Args:
        x: (B, M, C) features at the sources.
        pos_x: (B, M, 3) source positions.
        pos_y: (B, N, 3) target positions.
        k: sources per target (PointNet++ uses 3), at most M.
        x_lengths: (B,) int64 valid sources per cloud.
        backend: KNN backend (see ``knn``).

    Returns:
        (B, N, C) interpolated features.
    """
    V.check_cloud("x", x, dim=None, finite=False)
    V.check_cloud("pos_x", pos_x)
    V.check_cloud("pos_y", pos_y)
    V.check_same_batch("pos_x", pos_x, "pos_y", pos_y)
    _check_features_match(x, pos_x)
    d2, idx = knn(pos_y.detach(), pos_x.detach(), k, ref_lengths=x_lengths, backend=backend)
    w = torch.where(idx >= 0, 1.0 / d2.clamp(min=1e-16), torch.zeros_like(d2))  # (B, N, K)
    w = w / w.sum(-1, keepdim=True)
    return (gather_points(x, idx) * w.unsqueeze(-1).to(x.dtype)).sum(2)


def nearest_upsample(x: torch.Tensor, pos_x: torch.Tensor, pos_y: torch.Tensor, *,
                     x_lengths: torch.Tensor | None = None, backend: str = "auto") -> torch.Tensor:
    """Give every target point the features of its nearest source (ties: lowest index).

    Args:
        x: (B, M, C) features at the sources.
        pos_x: (B, M, 3) source positions.
        pos_y: (B, N, 3) target positions.
        x_lengths: (B,) int64 valid sources per cloud.
        backend: KNN backend (see ``knn``).

    Returns:
        (B, N, C) features; differentiable with respect to ``x``.
    """
    V.check_cloud("x", x, dim=None, finite=False)
    V.check_cloud("pos_x", pos_x)
    V.check_cloud("pos_y", pos_y)
    V.check_same_batch("pos_x", pos_x, "pos_y", pos_y)
    _check_features_match(x, pos_x)
    _, idx = knn(pos_y.detach(), pos_x.detach(), 1, ref_lengths=x_lengths, backend=backend)
    return gather_points(x, idx[..., 0])


def _check_features_match(x: torch.Tensor, pos_x: torch.Tensor) -> None:
    if x.shape[:2] != pos_x.shape[:2] or x.device != pos_x.device:
        raise ValueError(f"x must have shape (B, M, C) matching pos_x (B, M, 3) on the same "
                         f"device, got {tuple(x.shape)} on {x.device} and "
                         f"{tuple(pos_x.shape)} on {pos_x.device}")
