"""Classification accuracy: a confusion matrix summed over batches and processes."""

from __future__ import annotations

import numpy as np
import torch

from ... import _validate as V
from ..distributed import all_reduce_sum

__all__ = ["ConfusionMatrix"]


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
        self.counts = all_reduce_sum(self.counts)

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
