"""Reconstruction scores: the Chamfer distance in the 3D-PointCapsNet / pytorch3d convention and
the F-score at a distance, per shape (:func:`reconstruction_scores`) and averaged over a test set,
per category too (:class:`ReconstructionMeter`).

Chamfer distance: squared Euclidean distances to the nearest neighbour, averaged over each cloud's
points, the two directions summed. F-score at ``threshold`` (plain Euclidean distance): the
harmonic mean of the share of decoded points within the threshold of an input point (precision)
and the share of input points within it of a decoded point (recall); 0 when both are 0.
"""

from __future__ import annotations

import torch

from ... import _validate as V
from ...ops import chamfer_distance
from ..distributed import all_reduce_sum

__all__ = ["ReconstructionMeter", "check_clouds", "reconstruction_scores", "reconstruction_scores_naive"]

CHAMFER_UNITS = "squared Euclidean, unit-sphere radii; mean per direction, summed"


def reconstruction_scores(points: torch.Tensor, pos: torch.Tensor, *, threshold: float):
    """Per-shape Chamfer distance (squared, mean per direction, summed) and F-score.

    Args:
        points: (B, M, 3) reconstructions. pos: (B, N, 3) inputs. threshold: F-score distance.

    Returns:
        chamfer (B,), fscore (B,) (0 where precision and recall are both 0).

    Raises:
        ValueError / TypeError naming the argument: clouds of other shapes or batch sizes, NaN
        points, a threshold that is not a positive finite number.
    """
    check_clouds(points, pos)
    threshold = V.check_positive("threshold", threshold)
    d_out, d_in = chamfer_distance(points, pos, squared=False, point_reduction=None, batch_reduction=None)
    chamfer = (d_out ** 2).mean(1) + (d_in ** 2).mean(1)
    precision = (d_out < threshold).double().mean(1)
    recall = (d_in < threshold).double().mean(1)
    f = torch.where(precision + recall > 0, 2 * precision * recall / (precision + recall).clamp(min=1e-12),
                    torch.zeros_like(precision))
    return chamfer.double(), f


def reconstruction_scores_naive(points, pos, *, threshold: float):
    """Reference (tests only): full distance matrices, one shape at a time; returns chamfer (B,),
    fscore (B,)."""
    chamfer, fscore = [], []
    for out, inp in zip(points.double(), pos.double()):
        d = torch.cdist(out, inp)  # (M, N)
        d_out, d_in = d.min(1).values, d.min(0).values
        chamfer.append(float((d_out ** 2).mean() + (d_in ** 2).mean()))
        p, r = float((d_out < threshold).double().mean()), float((d_in < threshold).double().mean())
        fscore.append(2 * p * r / (p + r) if p + r > 0 else 0.0)
    return torch.tensor(chamfer, dtype=torch.float64), torch.tensor(fscore, dtype=torch.float64)


def check_clouds(points, pos) -> None:
    """``points`` (B, M, 3) and ``pos`` (B, N, 3): finite clouds of one batch size."""
    V.check_cloud("points", points)
    V.check_cloud("pos", pos)
    V.check_same_batch("points", points, "pos", pos)


class ReconstructionMeter:
    """Sums per-shape Chamfer distances and F-scores by category (all reduced across processes).

    Args:
        category_names: the names of the category ids ``update`` receives.
        threshold: the F-score distance the scores were measured at (reported with them).
    """

    def __init__(self, category_names: list[str], *, threshold: float):
        self.names = list(category_names)
        self.threshold = threshold
        # per category: sum of chamfer, sum of fscore, shapes
        self.sums = torch.zeros(len(self.names), 3, dtype=torch.float64)

    def update(self, chamfer: torch.Tensor, fscore: torch.Tensor, category: torch.Tensor) -> None:
        """chamfer, fscore: (B,) per-shape scores; category: (B,) int64 ids into ``category_names``."""
        chamfer = chamfer.cpu()
        rows = torch.stack([chamfer, fscore.cpu(), torch.ones_like(chamfer)], 1).double()
        self.sums.index_add_(0, category, rows)

    def all_reduce(self) -> None:
        """Sum the scores and shape counts of every process (no-op outside torch.distributed)."""
        self.sums = all_reduce_sum(self.sums)

    def summary(self) -> dict:
        """``chamfer`` and ``fscore`` (means over shapes), ``fscore_threshold``,
        ``per_category_chamfer`` {name: mean or None}, ``samples`` and ``chamfer_units``."""
        total = self.sums.sum(0)
        count = max(1.0, float(total[2]))
        per_cat = {name: (float(self.sums[i, 0] / self.sums[i, 2]) if self.sums[i, 2] > 0 else None)
                   for i, name in enumerate(self.names)}
        return {"chamfer": float(total[0] / count), "fscore": float(total[1] / count),
                "fscore_threshold": self.threshold, "per_category_chamfer": per_cat,
                "samples": int(total[2]), "chamfer_units": CHAMFER_UNITS}
