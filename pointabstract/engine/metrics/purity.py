"""Capsule part purity (part-labelled data): each decoded point takes the part of its nearest
input point; a capsule's purity is the share of its points in its majority part; averaged over
the capsules that decoded any point (:func:`capsule_purity`), then over shapes (:class:`PurityMeter`).
"""

from __future__ import annotations

import torch

from ... import _validate as V
from ...ops import knn
from ..distributed import all_reduce_sum
from .reconstruction import check_clouds

__all__ = ["PurityMeter", "capsule_purity", "capsule_purity_naive"]


def capsule_purity(points, pos, part, capsule_index, *, num_parts: int):
    """Part purity of every shape's capsules.

    Args:
        points: (B, M, 3) decoded points. pos: (B, N, 3) inputs. part: (B, N) int64 part ids.
        capsule_index: (M,) int64 capsule that decoded each point. num_parts: part id bound.

    Returns:
        purity (B,): mean over capsules with points of (majority part count / points);
        counts (B, L, num_parts) int64: decoded points of each capsule in each part
        (L = the largest capsule id + 1).

    Raises:
        ValueError / TypeError naming the argument: shapes that disagree, part ids outside
        ``[0, num_parts)``, negative capsule ids, ``num_parts < 1``.
    """
    check_clouds(points, pos)
    num_parts = V.check_int("num_parts", num_parts, low=1)
    V.check_ids("part", part, tuple(pos.shape[:2]), "(B, N)", high=num_parts)
    if part.device != pos.device:
        raise ValueError(f"part must be on {pos.device} (the device of pos), got {part.device}")
    V.check_ids("capsule_index", capsule_index, (points.shape[1],), "(M,)")
    _, idx = knn(points, pos, 1)
    labels = part.gather(1, idx[..., 0])  # (B, M): part of the nearest input point
    caps = int(capsule_index.max()) + 1
    flat = capsule_index.to(labels.device).unsqueeze(0) * num_parts + labels  # (B, M)
    counts = torch.zeros(labels.shape[0], caps * num_parts, dtype=torch.int64, device=labels.device)
    counts = counts.scatter_add_(1, flat, torch.ones_like(flat)).view(-1, caps, num_parts)
    size = counts.sum(-1)  # (B, L)
    share = counts.amax(-1) / size.clamp(min=1)
    used = (size > 0).double()
    return ((share * used).sum(1) / used.sum(1)).cpu(), counts.cpu()


def capsule_purity_naive(points, pos, part, capsule_index):
    """Reference (tests only): plain loops and full distance matrices; returns purity (B,)."""
    out = []
    for b in range(points.shape[0]):
        nearest = torch.cdist(points[b].double(), pos[b].double()).argmin(1)
        shares = []
        for cap in capsule_index.unique():
            labels = part[b][nearest[capsule_index == cap]].tolist()
            if labels:
                shares.append(max(labels.count(x) for x in set(labels)) / len(labels))
        out.append(sum(shares) / len(shares))
    return torch.tensor(out, dtype=torch.float64)


class PurityMeter:
    """Sums shape purities (all reduced across processes) and this process's capsule x part table."""

    def __init__(self):
        self.sums = torch.zeros(2, dtype=torch.float64)  # sum of shape purities, shapes
        self.table = None  # (L, parts) decoded points of each capsule in each part

    def update(self, purity: torch.Tensor, counts: torch.Tensor) -> None:
        """purity: (B,) and counts: (B, L, parts), as :func:`capsule_purity` returns them."""
        self.sums += torch.tensor([purity.sum().item(), len(purity)], dtype=torch.float64)
        self.table = counts.sum(0) if self.table is None else self.table + counts.sum(0)

    def all_reduce(self) -> None:
        """Sum the purities and shape counts of every process; the table stays this process's."""
        self.sums = all_reduce_sum(self.sums)

    def summary(self) -> dict:
        """``purity`` (mean over shapes) and ``capsule_parts``: the parts any capsule decoded and
        the table's columns of those parts."""
        used = self.table.sum(0) > 0
        return {"purity": float(self.sums[0] / max(1.0, float(self.sums[1]))),
                "capsule_parts": {"parts": torch.nonzero(used).flatten().tolist(),
                                  "counts": self.table[:, used].tolist()}}
