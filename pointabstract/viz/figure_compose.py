"""Joining rendered panels into one titled figure image (matplotlib, Agg, no display)."""

from __future__ import annotations

import numpy as np

__all__ = ["compose_figure"]


def compose_figure(images: list[list[np.ndarray]], titles: list[list[str]], row_labels: list[str], *,
                   title: str = "", caption: str = "") -> np.ndarray:
    """A grid of panels with a title per panel, a label per row, a figure title and a caption.

    Args:
        images: rows of (H, W, 3) uint8 panels, every row as long as the first.
        titles: one title per panel (same nesting as ``images``).
        row_labels: one label per row (left of its first panel).
        title: above the grid; caption: below it (wrapped to the figure's width).

    Returns:
        (H', W', 3) uint8 RGB of the whole figure.
    """
    import textwrap

    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    if not images or not images[0] or any(len(r) != len(images[0]) for r in images):
        raise ValueError("images must be a non-empty grid: every row as long as the first")
    if [len(r) for r in titles] != [len(r) for r in images] or len(row_labels) != len(images):
        raise ValueError("titles must match images panel for panel, row_labels row for row")
    nrows, ncols = len(images), len(images[0])
    size = images[0][0].shape[0] / 100
    width = ncols * size
    chars = max(40, int(width * 100 / 6.5))  # about 6.5 pixels per character at 9 pt
    cap = "\n".join(textwrap.fill(line, chars) for line in caption.splitlines()) if caption else ""
    cap_lines = cap.count("\n") + 1 if cap else 0
    top, bottom = 0.6, 0.2 + 0.17 * cap_lines
    fig = Figure(figsize=(width, nrows * (size + 0.45) + top + bottom), dpi=100, facecolor="white")
    height = fig.get_figheight()
    axes = fig.subplots(nrows, ncols, squeeze=False,
                        gridspec_kw={"top": 1 - top / height, "bottom": bottom / height, "left": 0.02,
                                     "right": 0.99, "wspace": 0.04, "hspace": 0.3})
    for r in range(nrows):
        for c in range(ncols):
            ax = axes[r][c]
            ax.imshow(images[r][c])
            ax.set_xticks([])
            ax.set_yticks([])
            ax.set_title(titles[r][c], fontsize=7.5)
            if c == 0:
                ax.set_ylabel(row_labels[r], fontsize=8)
    fig.suptitle(textwrap.fill(title, chars), fontsize=9, y=1 - 0.1 / height, va="top")
    if cap:
        fig.text(0.02, 0.08 / height, cap, fontsize=8.5, va="bottom", ha="left")
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return np.asarray(canvas.buffer_rgba())[..., :3].copy()
