"""The PNGs of training runs and reports (matplotlib, no display needed): training curves, the
confusion matrix, reconstruction examples and per-category part IoU."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

__all__ = ["plot_confusion", "plot_curves", "plot_part_ious", "plot_reconstructions"]


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


def plot_reconstructions(examples: list[dict], out: str | Path) -> Path:
    """One row per example: the input cloud (grey) and its reconstruction coloured by capsule.

    Args:
        examples: dicts with ``input`` (N, 3) and ``output`` (M, 3) arrays, ``index`` (M,) the
            capsule of each output point, ``kind`` ("best" / "worst") and ``cd`` (its Chamfer distance).
        out: the PNG written.
    """
    plt = _pyplot()
    fig = plt.figure(figsize=(6, 3 * len(examples)))
    for row, ex in enumerate(examples):
        for col, (cloud, style) in enumerate([(ex["input"], {"c": "0.4"}),
                                              (ex["output"], {"c": ex["index"].numpy(), "cmap": "tab20"})]):
            ax = fig.add_subplot(len(examples), 2, 2 * row + col + 1, projection="3d")
            ax.scatter(cloud[:, 0], cloud[:, 2], cloud[:, 1], s=1, **style)
            for axis in (ax.set_xlim, ax.set_ylim, ax.set_zlim):  # the same unit-sphere box for both
                axis(-1, 1)
            ax.set_axis_off()
            ax.set_title(f"{ex['kind']}: CD {ex['cd'] * 1e3:.2f}e-3" if col == 0 else "reconstruction",
                         fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=80)
    plt.close(fig)
    return Path(out)


def plot_part_ious(rows: list[tuple[str, float, int]], out: str | Path) -> Path:
    """A bar per category: ``rows`` of (category name, mIoU, shapes); the folder of ``out`` is created."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(max(4, 0.6 * len(rows) + 1), 3.5))
    ax.bar([r[0] for r in rows], [r[1] for r in rows], color="tab:blue")
    ax.set_ylim(0, 1)
    ax.set_ylabel("mIoU")
    ax.tick_params(axis="x", rotation=60)
    fig.tight_layout()
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return Path(out)
