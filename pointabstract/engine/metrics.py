"""Metrics that score a model's outputs against the truth, shared by tasks, viewer and benchmarks.

- classification: :class:`ConfusionMatrix` (overall, mean class and per-class accuracy);
- reconstruction: :func:`reconstruction_scores` (Chamfer distance in the 3D-PointCapsNet /
  pytorch3d convention and the F-score at a distance) and :func:`capsule_purity` (how well
  each capsule's decoded points keep to one part), with :func:`capsule_purity_naive`, the
  plain-loop reference the tests compare it with.

The part-segmentation IoUs live with their task (``engine/tasks/part_segmentation.py``).
"""

from __future__ import annotations

import numpy as np
import torch

from .. import _validate as V
from ..ops import chamfer_distance, knn

__all__ = ["ConfusionMatrix", "capsule_purity", "capsule_purity_naive", "reconstruction_scores"]


class ConfusionMatrix:
    """Accumulates ``counts[true, predicted]`` over batches (all reduced across processes).

    Args:
        num_classes: number of classes.
    """

    def __init__(self, num_classes: int):
        num_classes = V.check_int("num_classes", num_classes, low=1)
        self.counts = torch.zeros(num_classes, num_classes, dtype=torch.int64)

    def update(self, logits: torch.Tensor, labels: torch.Tensor) -> None:
        """logits: (B, C) scores (C = num_classes), labels: (B,) int64 in [0, C); anything else
        is a ValueError / TypeError naming the argument (never broadcast or counted elsewhere)."""
        k = self.counts.shape[0]
        batch = V.batch_size(logits, 2, labels)
        V.check_shape("logits", logits, (batch, k), "(B, C)")
        V.check_ids("labels", labels, (batch,), "(B,)", high=k)
        pred = logits.argmax(-1).cpu()
        self.counts += torch.bincount(labels.cpu() * k + pred, minlength=k * k).view(k, k)

    def all_reduce(self) -> None:
        """Sum the counts of every process (no-op outside torch.distributed)."""
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            torch.distributed.all_reduce(self.counts)

    def summary(self, class_names: list[str] | None = None) -> dict:
        """Overall accuracy, mean class accuracy, per-class accuracy and the matrix itself.

        Classes without test samples are left out of the mean class accuracy.
        """
        counts = self.counts.numpy()
        support = counts.sum(1)
        per_class = np.divide(np.diag(counts), support, out=np.full(len(counts), np.nan),
                              where=support > 0)
        names = class_names or [str(i) for i in range(len(counts))]
        return {
            "overall_accuracy": float(np.trace(counts) / max(1, counts.sum())),
            "mean_class_accuracy": float(np.nanmean(per_class)) if (support > 0).any() else float("nan"),
            "per_class_accuracy": {n: (None if np.isnan(a) else float(a)) for n, a in zip(names, per_class)},
            "confusion": counts.tolist(),
            "class_names": names,
            "samples": int(counts.sum()),
        }


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
    _check_clouds(points, pos)
    threshold = V.check_positive("threshold", threshold)
    d_out, d_in = chamfer_distance(points, pos, squared=False, point_reduction=None, batch_reduction=None)
    chamfer = (d_out ** 2).mean(1) + (d_in ** 2).mean(1)
    precision = (d_out < threshold).double().mean(1)
    recall = (d_in < threshold).double().mean(1)
    f = torch.where(precision + recall > 0, 2 * precision * recall / (precision + recall).clamp(min=1e-12),
                    torch.zeros_like(precision))
    return chamfer.double(), f


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
    _check_clouds(points, pos)
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


def _check_clouds(points, pos) -> None:
    V.check_cloud("points", points)
    V.check_cloud("pos", pos)
    V.check_same_batch("points", points, "pos", pos)


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
