"""Part-segmentation scores, the ShapeNetPart protocol of PointNet / PointNet++ / every
ShapeNetPart paper: the logits of each shape are restricted to the parts of its category before
the argmax (:func:`restrict_to_category`); a shape's IoU is the mean over its category's parts of
``|pred = p and true = p| / |pred = p or true = p|``, a part absent from both prediction and truth
counting as 1 (:func:`shape_ious`); **instance mIoU** averages the shapes, **class mIoU** the
per-category means, categories without test shapes left out (:class:`PartIoU`).
"""

from __future__ import annotations

import torch

from ... import _validate as V
from ...data import NUM_PARTS, SHAPENET_PART
from ..distributed import all_reduce_sum

__all__ = ["PART_MASK", "PartIoU", "check_part_labels", "restrict_to_category", "shape_ious",
           "shape_ious_naive"]

# (16, 50) True where a part belongs to a category
PART_MASK = torch.zeros(len(SHAPENET_PART), NUM_PARTS, dtype=torch.bool)
for _i, _c in enumerate(SHAPENET_PART):
    PART_MASK[_i, list(_c.parts)] = True


def check_part_labels(part: torch.Tensor, category: torch.Tensor) -> None:
    """Raise ValueError when a label (other than padding -1) is not a part of its shape's category.

    part: (B, N) int64 global part ids; category: (B,) int64 category ids.
    """
    count = len(SHAPENET_PART)
    if not isinstance(part, torch.Tensor):
        raise TypeError(f"part must be a torch.Tensor of dtype int64, got {type(part).__name__}")
    if part.dtype != torch.int64:
        raise TypeError(f"part must have dtype int64, got {part.dtype}")
    if part.dim() != 2:
        raise ValueError(f"part must have shape (B, N), got {tuple(part.shape)}")
    if not isinstance(category, torch.Tensor):
        raise TypeError(f"category must be a torch.Tensor of dtype int64, got {type(category).__name__}")
    if category.dtype != torch.int64 or bool(((category < 0) | (category >= count)).any()):
        raise ValueError(f"category must hold int64 ids in [0, {count}), got {category.tolist()}")
    V.check_shape("category", category, (part.shape[0],), "(B,)", floating=False)
    inside = (part >= 0) & (part < NUM_PARTS)
    owned = PART_MASK.to(part.device)[category.unsqueeze(1), part.clamp(0, NUM_PARTS - 1)]  # (B, N)
    ok = (part == -1) | (inside & owned)
    if not bool(ok.all()):
        b, n = (~ok).nonzero()[0].tolist()
        c = SHAPENET_PART[int(category[b])]
        raise ValueError(f"part label {int(part[b, n])} of shape {b} point {n} is not one of "
                         f"{c.name}'s parts {list(c.parts)}")


def restrict_to_category(logits: torch.Tensor, category: torch.Tensor) -> torch.Tensor:
    """logits: (B, N, 50), category: (B,) -> (B, N, 50) with other categories' parts at -inf."""
    batch = V.batch_size(logits, 3, category)
    n = logits.shape[1] if isinstance(logits, torch.Tensor) and logits.dim() == 3 else 0
    V.check_shape("logits", logits, (batch, n, NUM_PARTS), f"(B, N, {NUM_PARTS})")
    V.check_ids("category", category, (batch,), "(B,)", high=len(SHAPENET_PART))
    allowed = PART_MASK.to(logits.device)[category].unsqueeze(1)  # (B, 1, 50)
    return logits.masked_fill(~allowed, float("-inf"))


def shape_ious(pred: torch.Tensor, part: torch.Tensor, category: torch.Tensor) -> torch.Tensor:
    """Per-shape IoU averaged over the category's parts (absent from both = 1).

    Args:
        pred: (B, N) int64 predicted global part ids.
        part: (B, N) int64 true global part ids, -1 at padded points (ignored).
        category: (B,) int64 category ids.

    Returns:
        (B,) float64 IoU of each shape.

    Raises:
        ValueError / TypeError naming the argument: shapes that disagree, ids out of range
        (a predicted id outside ``[0, 50)`` too, also at padded points), other dtypes.
    """
    check_part_labels(part, category)
    V.check_ids("pred", pred, tuple(part.shape), "(B, N)", high=NUM_PARTS)
    batch = part.shape[0]
    valid = part >= 0
    base = torch.arange(batch, device=part.device).unsqueeze(1) * NUM_PARTS

    def count(ids, keep):
        return torch.bincount((base + ids)[keep], minlength=batch * NUM_PARTS).view(batch, NUM_PARTS)

    inter = count(part, valid & (pred == part)).double()
    union = count(part, valid).double() + count(pred, valid).double() - inter
    iou = torch.where(union > 0, inter / union.clamp(min=1), torch.ones_like(union))  # (B, 50)
    mask = PART_MASK.to(part.device)[category].double()
    return (iou * mask).sum(1) / mask.sum(1)


def shape_ious_naive(pred, part, category) -> list[float]:
    """Reference (tests only): the same in plain Python loops."""
    out = []
    for p_row, t_row, c in zip(pred.tolist(), part.tolist(), category.tolist()):
        pairs = [(p, t) for p, t in zip(p_row, t_row) if t >= 0]
        ious = []
        for q in SHAPENET_PART[c].parts:
            inter = sum(p == q and t == q for p, t in pairs)
            union = sum(p == q or t == q for p, t in pairs)
            ious.append(inter / union if union else 1.0)
        out.append(sum(ious) / len(ious))
    return out


class PartIoU:
    """Accumulates per-shape IoUs by category (all reduced across processes)."""

    def __init__(self):
        self.sums = torch.zeros(len(SHAPENET_PART), dtype=torch.float64)
        self.counts = torch.zeros(len(SHAPENET_PART), dtype=torch.float64)

    def update(self, ious: torch.Tensor, category: torch.Tensor) -> None:
        """ious: (B,) per-shape IoUs in [0, 1]; category: (B,) int64 ids in [0, 16)."""
        batch = V.batch_size(ious, 1, category)
        V.check_shape("ious", ious, (batch,), "(B,)")
        V.check_ids("category", category, (batch,), "(B,)", high=len(SHAPENET_PART))
        if len(ious) and not (0 <= float(ious.min()) and float(ious.max()) <= 1):
            raise ValueError(f"ious must lie in [0, 1], got values in [{float(ious.min()):g}, "
                             f"{float(ious.max()):g}]")
        self.sums.index_add_(0, category.cpu(), ious.cpu().double())
        self.counts.index_add_(0, category.cpu(), torch.ones(len(category), dtype=torch.float64))

    def all_reduce(self) -> None:
        """Sum the IoUs and shape counts of every process (no-op outside torch.distributed)."""
        both = all_reduce_sum(torch.stack([self.sums, self.counts]))
        self.sums, self.counts = both[0].clone(), both[1].clone()

    def summary(self) -> dict:
        """``instance_miou``, ``class_miou``, ``per_category`` {name: IoU or None}, ``shapes``."""
        seen = self.counts > 0
        per = self.sums / self.counts.clamp(min=1)
        total = float(self.counts.sum())
        return {
            "instance_miou": float(self.sums.sum() / total) if total else float("nan"),
            "class_miou": float(per[seen].mean()) if bool(seen.any()) else float("nan"),
            "per_category": {c.name: (float(v) if s else None) for c, v, s in zip(SHAPENET_PART, per, seen)},
            "shapes_per_category": {c.name: int(n) for c, n in zip(SHAPENET_PART, self.counts)},
            "samples": int(total),
        }
