"""How compact the region each latent capsule decodes is: the capsule spread.

For one shape, a capsule's spread is the RMS distance of the points it decodes from their own
mean, divided by the RMS distance of all decoded points from theirs (the shape's radius of
gyration). :func:`capsule_spread` averages it over the capsules and shapes: about 1 when every
capsule scatters its points over the whole shape (no capsule decodes a part), small when each
decodes a compact region. :func:`kmeans_spread` gives the same number for a k-means partition of
the *inputs* into as many regions as there are capsules: the value of a compact partition, to
read a model's spread against.
"""

from __future__ import annotations

import torch

from ... import _validate as V

__all__ = ["capsule_spread", "capsule_spread_naive", "kmeans_spread"]


def capsule_spread(points: torch.Tensor, capsule_index: torch.Tensor) -> float:
    """Mean capsule spread (module docstring) of a batch of decoded clouds.

    Args:
        points: (B, M, 3) decoded points. capsule_index: (M,) int64 capsule of each point, in [0, L).

    Returns:
        The mean over shapes and capsules with at least two points (float).
    """
    V.check_cloud("points", points)
    V.check_ids("capsule_index", capsule_index, (points.shape[1],), "(M,)")
    p = points.double()
    idx = capsule_index.to(p.device)
    caps = int(idx.max()) + 1
    count = torch.bincount(idx, minlength=caps).double()  # (L,)
    sums = p.new_zeros(p.shape[0], caps, 3).index_add_(1, idx, p)  # (B, L, 3)
    means = sums / count.clamp(min=1)[None, :, None]
    sq = ((p - means[:, idx]) ** 2).sum(-1)  # (B, M): squared distance to the own capsule's mean
    per_cap = p.new_zeros(p.shape[0], caps).index_add_(1, idx, sq) / count.clamp(min=1)  # (B, L)
    radius2 = ((p - p.mean(1, keepdim=True)) ** 2).sum(-1).mean(1, keepdim=True)  # (B, 1)
    spread = (per_cap / radius2.clamp(min=1e-24)).sqrt()  # (B, L)
    used = count >= 2
    return float(spread[:, used].mean())


def capsule_spread_naive(points: torch.Tensor, capsule_index: torch.Tensor) -> float:
    """Reference (tests only): one shape and one capsule at a time."""
    values = []
    for cloud in points.double():
        radius = ((cloud - cloud.mean(0)) ** 2).sum(-1).mean().sqrt()
        for c in capsule_index.unique():
            part = cloud[capsule_index == c]
            if len(part) >= 2:
                values.append(float(((part - part.mean(0)) ** 2).sum(-1).mean().sqrt() / radius))
    return sum(values) / len(values)


def kmeans_spread(pos: torch.Tensor, parts: int, *, iters: int = 10) -> float:
    """The capsule spread of a k-means partition of each input cloud into ``parts`` regions
    (Lloyd's algorithm from farthest-point seeds, ``iters`` rounds): a compact partition's value."""
    from ...ops import farthest_point_sample

    V.check_cloud("pos", pos)
    V.check_int("parts", parts, low=1, high=pos.shape[1])
    values = []
    for cloud in pos.double():
        centres = cloud[farthest_point_sample(cloud[None].float(), parts)[0]]
        for _ in range(iters):
            assign = torch.cdist(cloud, centres).argmin(1)
            centres = torch.stack([cloud[assign == j].mean(0) if (assign == j).any() else centres[j]
                                   for j in range(parts)])
        assign = torch.cdist(cloud, centres).argmin(1)
        values.append(capsule_spread(cloud[None], assign))
    return sum(values) / len(values)
