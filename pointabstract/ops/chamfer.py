"""Chamfer distance between point clouds (the reconstruction loss of 3D-PointCapsNet)."""

from __future__ import annotations

import torch

from .. import _validate as V
from ._dist import squared_norm, take_rows
from .knn import knn

__all__ = ["chamfer_distance", "chamfer_distance_naive"]


def chamfer_distance(x: torch.Tensor, y: torch.Tensor, *, x_lengths: torch.Tensor | None = None,
                     y_lengths: torch.Tensor | None = None, squared: bool = True,
                     point_reduction: str | None = "mean", batch_reduction: str | None = "mean",
                     single_directional: bool = False, backend: str = "auto"):
    """Chamfer distance: every point's distance to its nearest neighbour in the other cloud.

    The default is pytorch3d's default and 3D-PointCapsNet's loss: squared L2 distances,
    averaged over the points of each cloud, the two directions summed, averaged over the batch.
    Nearest neighbours are found without gradient by the fastest KNN backend, then the
    distances are recomputed from the gathered points, so gradients reach both clouds and
    stay finite (zero) where two points coincide, also with ``squared=False``.

    Args:
        x: (B, N, 3) first clouds.
        y: (B, M, 3) second clouds, same B, dtype and device.
        x_lengths: (B,) int64 valid points of each x cloud (at least 1).
        y_lengths: (B,) int64 valid points of each y cloud (at least 1).
        squared: squared Euclidean distances (default) or plain Euclidean distances.
        point_reduction: ``"mean"`` or ``"sum"`` over each cloud's valid points, or ``None``
            for per-point distances (then ``batch_reduction`` must be ``None``).
        batch_reduction: ``"mean"`` or ``"sum"`` over the batch, or ``None``.
        single_directional: only the x -> y term.
        backend: KNN backend (see ``knn``).

    Returns:
        A scalar; (B,) with ``batch_reduction=None``; with ``point_reduction=None`` the
        per-point distances ``(dist_x (B, N), dist_y (B, M))`` (just ``dist_x`` when
        single-directional), 0 at padded points.
    """
    V.check_cloud("x", x)
    V.check_cloud("y", y)
    V.check_same_batch("x", x, "y", y)
    V.check_bool("squared", squared)
    V.check_bool("single_directional", single_directional)
    V.check_choice("point_reduction", point_reduction, ("mean", "sum", None))
    V.check_choice("batch_reduction", batch_reduction, ("mean", "sum", None))
    if point_reduction is None and batch_reduction is not None:
        raise ValueError(f"batch_reduction must be None when point_reduction is None, "
                         f"got {batch_reduction!r}")
    batch, n, _ = x.shape
    x_lengths = V.check_lengths("x_lengths", x_lengths, batch, n, x.device)
    y_lengths = V.check_lengths("y_lengths", y_lengths, batch, y.shape[1], y.device)

    dist_x = _one_direction(x, y, x_lengths, y_lengths, squared, backend)
    dists = (dist_x,) if single_directional else (
        dist_x, _one_direction(y, x, y_lengths, x_lengths, squared, backend))
    if point_reduction is None:
        return dists[0] if single_directional else dists
    lengths = (x_lengths,) if single_directional else (x_lengths, y_lengths)
    per_cloud = sum(d.sum(1) / (ln if point_reduction == "mean" else 1)
                    for d, ln in zip(dists, lengths))
    if batch_reduction is None:
        return per_cloud
    return per_cloud.mean() if batch_reduction == "mean" else per_cloud.sum()


def _one_direction(a, b, a_lengths, b_lengths, squared, backend):
    """Distance of every valid point of ``a`` to its nearest valid point of ``b``: (B, N_a)."""
    with torch.no_grad():
        _, idx = knn(a.detach(), b.detach(), 1, query_lengths=a_lengths, ref_lengths=b_lengths,
                     backend=backend)
    idx = idx[..., 0]
    valid = idx >= 0
    d2 = squared_norm(a - take_rows(b, idx))  # (B, N_a), differentiable
    d = d2 if squared else _safe_sqrt(d2)
    return torch.where(valid, d, torch.zeros_like(d))


def _safe_sqrt(d2: torch.Tensor) -> torch.Tensor:
    """sqrt with gradient 0 (not inf / NaN) where d2 == 0."""
    positive = d2 > 0
    return torch.where(positive, torch.where(positive, d2, torch.ones_like(d2)).sqrt(),
                       torch.zeros_like(d2))


def chamfer_distance_naive(x: torch.Tensor, y: torch.Tensor, *, squared: bool = True) -> torch.Tensor:
    """Reference (tests only): full distance matrices, default reductions, shape (B,)."""
    out = []
    for xb, yb in zip(x, y):
        d2 = ((xb[:, None, :] - yb[None, :, :]) ** 2).sum(-1)  # (N, M)
        d = d2 if squared else d2.sqrt()
        out.append(d.min(1).values.mean() + d.min(0).values.mean())
    return torch.stack(out)
