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


def plot_curves(metrics_jsonl: str | Path, out: str | Path, *,
                panels: dict[str, list[str]] | None = None) -> Path:
    """Per-epoch curves from the run's metrics.jsonl: the training loss, then one panel per
    entry of ``panels`` (``{title: [logged keys]}``, e.g. a task's :meth:`curves`); keys a row
    lacks (epochs without evaluation) are skipped for that row."""
    rows = [json.loads(line) for line in Path(metrics_jsonl).read_text().splitlines() if line.strip()]
    panels = {"loss": ["train_loss", "test_loss"], **(panels or {})}
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 4), squeeze=False)
    for ax, (title, keys) in zip(axes[0], panels.items()):
        for style, key in zip(("-", "o-", "s--", "^:", "d-."), keys):
            have = [r for r in rows if isinstance(r.get(key), (int, float))]
            if have:
                ax.plot([r["epoch"] for r in have], [r[key] for r in have], style,
                        label=key.replace("_", " "))
        ax.set_xlabel("epoch")
        ax.set_ylabel(title)
        if ax.lines:
            ax.legend()
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
