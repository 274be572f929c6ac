"""Centroid initialisations other than FPS: uniform random subsets and k-means (Lloyd)."""

from __future__ import annotations

import torch

from .. import _validate as V
from .fps import farthest_point_sample
from .gather import gather_points
from .knn import knn

__all__ = ["KMeansResult", "kmeans_sample", "random_sample"]


def random_sample(pos: torch.Tensor, m: int, *, lengths: torch.Tensor | None = None,
                  generator: torch.Generator | None = None) -> torch.Tensor:
    """``m`` distinct points per cloud, uniformly at random without replacement.

    Args:
        pos: (B, N, C) points or features (only the shape and device are used).
        m: points per cloud, 1 <= m <= N.
        lengths: (B,) int64 valid points per cloud; slots ``m >= lengths[b]`` are -1.
        generator: torch.Generator on ``pos``'s device, for reproducible draws.

    Returns:
        idx: (B, M) int64 indices into ``pos[b]``, in random order.
    """
    V.check_cloud("pos", pos, dim=None, finite=False)
    batch, n, _ = pos.shape
    m = V.check_count("m", m, n)
    lengths = V.check_lengths("lengths", lengths, batch, n, pos.device)
    gen_device = generator.device if generator is not None else pos.device
    keys = torch.rand(batch, n, generator=generator, device=gen_device).to(pos.device)
    keys = keys.masked_fill(torch.arange(n, device=pos.device) >= lengths[:, None], 2.0)
    idx = torch.topk(keys, m, dim=1, largest=False, sorted=True).indices  # m smallest keys
    return idx.masked_fill(torch.arange(m, device=pos.device) >= lengths[:, None], -1)


class KMeansResult(tuple):
    """``(centroids (B, M, C), assignment (B, N) int64)``; also available as attributes."""

    __slots__ = ()

    def __new__(cls, centroids, assignment):
        return super().__new__(cls, (centroids, assignment))

    centroids = property(lambda self: self[0])
    assignment = property(lambda self: self[1])


def kmeans_sample(x: torch.Tensor, m: int, *, iters: int = 3, lengths: torch.Tensor | None = None,
                  start: str | torch.Tensor | None = None, generator: torch.Generator | None = None,
                  backend: str = "auto") -> KMeansResult:
    """Lloyd's k-means with farthest-point initialisation, in any space (xyz or features).

    Start from ``m`` FPS picks (from ``start``; by default ``"random"`` when a generator is
    given, else index 0),
    then ``iters`` rounds of: assign every point to its nearest centroid, move every centroid
    to the mean of its points (a centroid that lost all its points stays where it was).
    Differentiable with respect to ``x`` through the means (assignments are constants).

    Args:
        x: (B, N, C) points or features.
        m: clusters per cloud, 1 <= m <= N.
        iters: Lloyd iterations T >= 0 (0 returns the FPS picks themselves).
        lengths: (B,) int64 valid points per cloud; requires ``m <= lengths[b]``.
        start: FPS start (see ``farthest_point_sample``): ``"first"``, ``"random"`` or (B,) indices.
        generator: torch.Generator for the random FPS start.
        backend: backend of the FPS and nearest-centroid searches.

    Returns:
        KMeansResult: centroids (B, M, C) and the final assignment (B, N) of every point to a
        centroid (-1 for padded points).
    """
    V.check_cloud("x", x, dim=None)
    batch, n, channels = x.shape
    m = V.check_count("m", m, n)
    iters = V.check_int("iters", iters, low=0)
    lengths = V.check_lengths("lengths", lengths, batch, n, x.device)
    if int(lengths.min()) < m:
        raise ValueError(f"m must be at most every cloud's length, got m = {m} and "
                         f"lengths down to {int(lengths.min())}")
    if start is None:
        start = "random" if generator is not None else "first"
    seeds = farthest_point_sample(x.detach(), m, lengths=lengths, start=start,
                                  generator=generator, backend=backend)
    centroids = gather_points(x, seeds)
    valid = torch.arange(n, device=x.device) < lengths[:, None]  # (B, N)
    assign = _assign(x, centroids, lengths, valid, backend)
    for _ in range(iters):
        a = assign.clamp(min=0)  # padded points (-1) add zeros to cluster 0 below
        w = valid.to(x.dtype)
        count = x.new_zeros(batch, m).scatter_add(1, a, w)  # (B, M)
        sums = x.new_zeros(batch, m, channels).scatter_add(
            1, a.unsqueeze(-1).expand(-1, -1, channels), x * w.unsqueeze(-1))  # (B, M, C)
        means = sums / count.clamp(min=1).unsqueeze(-1)
        centroids = torch.where(count.unsqueeze(-1) > 0, means, centroids)
        assign = _assign(x, centroids, lengths, valid, backend)
    return KMeansResult(centroids, assign)


def _assign(x, centroids, lengths, valid, backend):
    _, idx = knn(x.detach(), centroids.detach(), 1, query_lengths=lengths, backend=backend)
    return idx[..., 0].masked_fill(~valid, -1)
