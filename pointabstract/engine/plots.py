"""Training curves and confusion matrices as PNG (matplotlib, no display needed)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

__all__ = ["plot_confusion", "plot_curves"]


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_curves(metrics_jsonl: str | Path, out: str | Path) -> Path:
    """Loss and accuracy per epoch from the run's metrics.jsonl."""
    rows = [json.loads(line) for line in Path(metrics_jsonl).read_text().splitlines() if line.strip()]
    plt = _pyplot()
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(10, 4))
    epochs = [r["epoch"] for r in rows]
    ax_loss.plot(epochs, [r["train_loss"] for r in rows], label="train loss")
    ax_loss.set_xlabel("epoch")
    ax_loss.set_ylabel("cross-entropy")
    ax_loss.legend()
    ax_acc.plot(epochs, [r["train_accuracy"] for r in rows], label="train accuracy")
    tested = [r for r in rows if "test_overall_accuracy" in r]
    ax_acc.plot([r["epoch"] for r in tested], [r["test_overall_accuracy"] for r in tested], "o-",
                label="test overall accuracy")
    ax_acc.plot([r["epoch"] for r in tested], [r["test_mean_class_accuracy"] for r in tested], "s--",
                label="test mean class accuracy")
    ax_acc.set_xlabel("epoch")
    ax_acc.set_ylim(0, 1)
    ax_acc.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return Path(out)


def plot_confusion(confusion: list[list[int]], class_names: list[str], out: str | Path,
                   *, title: str = "") -> Path:
    """Row-normalised confusion matrix (true class down, predicted across)."""
    counts = np.asarray(confusion, dtype=float)
    rates = counts / np.maximum(counts.sum(1, keepdims=True), 1)
    plt = _pyplot()
    size = max(5.0, 0.35 * len(class_names) + 2)
    fig, ax = plt.subplots(figsize=(size, size))
    image = ax.imshow(rates, cmap="Blues", vmin=0, vmax=1)
    ax.set_xticks(range(len(class_names)), class_names, rotation=90)
    ax.set_yticks(range(len(class_names)), class_names)
    ax.set_xlabel("predicted")
    ax.set_ylabel("true")
    if len(class_names) <= 20:
        for i in range(len(class_names)):
            for j in range(len(class_names)):
                if counts[i, j]:
                    ax.text(j, i, int(counts[i, j]), ha="center", va="center", fontsize=7,
                            color="white" if rates[i, j] > 0.5 else "black")
    ax.set_title(title)
    fig.colorbar(image, ax=ax, fraction=0.046)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return Path(out)
