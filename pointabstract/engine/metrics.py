"""Classification metrics from a confusion matrix."""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["ConfusionMatrix"]


class ConfusionMatrix:
    """Accumulates ``counts[true, predicted]`` over batches (all reduced across processes).

    Args:
        num_classes: number of classes.
    """

    def __init__(self, num_classes: int):
        self.counts = torch.zeros(num_classes, num_classes, dtype=torch.int64)

    def update(self, logits: torch.Tensor, labels: torch.Tensor) -> None:
        """logits: (B, classes), labels: (B,) int64."""
        pred = logits.argmax(-1).cpu()
        k = self.counts.shape[0]
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
