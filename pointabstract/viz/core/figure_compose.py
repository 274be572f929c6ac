"""Joining rendered panels into one titled figure image (matplotlib, Agg, no display).

:func:`compose_figure` lays out a grid of panel images with their titles; :func:`titled_row_png`
renders one row of panels and writes it titled, with the backends that drew it in the PNG's
metadata (the ``--png`` of every view); :func:`titled_panels_png` does so for drawable lists
seen through one camera, with a scalar colouring's colour bar, at an exact pixel size.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from ... import _validate as V

__all__ = ["MIN_TITLED", "TITLE_SPACE", "compose_figure", "title_space", "titled_panels_png",
           "titled_row_png"]

TITLE_SPACE = 125  # pixels compose_figure adds around one row of panels: figure title, panel titles, margins
MIN_TITLED = 120  # panels smaller than this (pixels) leave no room worth titling: drawn alone
_CHAR_PX = 5.4  # about this many pixels per character of a 7.5 pt panel title
_LABEL_CHAR_PX = 5.8  # ... of an 8 pt row label
_LINE_PX = 12.5  # height of a line of panel title; TITLE_SPACE holds three


def compose_figure(images: list[list[np.ndarray]], titles: list[list[str]], row_labels: list[str], *,
                   title: str = "", caption: str = "") -> np.ndarray:
    """A grid of panels with a title per panel, a label per row, a figure title and a caption.

    Args:
        images: rows of (H, W, 3) uint8 panels, every row as long as the first. Every row is as
            tall as the first panel; each column as wide as its panel in the first row (panels
            keep their aspect ratio inside that cell, scaled down a little for the margins).
        titles: one title per panel (same nesting as ``images``); lines longer than the panel
            is wide are wrapped, and titles of more than three lines get room for the rest.
        row_labels: one label per row (left of its first panel; wrapped to the panel's height).
        title: above the grid; caption: below it (wrapped to the figure's width).

    Returns:
        (H', W', 3) uint8 RGB of the whole figure: ``sum(widths)`` pixels wide, and for one row
        ``H + title_space(...)`` pixels tall (more rows: more; a caption: its lines more).
    """
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
    widths = [panel.shape[1] / 100 for panel in images[0]]  # inches at 100 dpi
    width = sum(widths)
    titles = [[_wrap(t, widths[c] * 100 / _CHAR_PX) for c, t in enumerate(row)] for row in titles]
    labels = [_wrap(label, size * 90 / _LABEL_CHAR_PX) for label in row_labels]
    extra = _extra_lines(titles) * _LINE_PX / 100  # inches for title lines beyond three
    chars = max(40, int(width * 100 / 6.5))  # about 6.5 pixels per character at 9 pt
    cap = "\n".join(textwrap.fill(line, chars) for line in caption.splitlines()) if caption else ""
    cap_lines = cap.count("\n") + 1 if cap else 0
    top, bottom = 0.6 + extra, 0.2 + 0.17 * cap_lines
    row = nrows * (size + 0.45) / (nrows + 0.3 * (nrows - 1))  # each row's cell; gaps of 0.3 rows, + extra
    gaps = (nrows - 1) * (0.3 * row + extra)
    fig = Figure(figsize=(width, nrows * row + gaps + top + bottom), dpi=100, facecolor="white")
    height = fig.get_figheight()
    left = max(0.02, (0.07 + 0.13 * max(label.count("\n") + 1 for label in labels)) / width)
    axes = fig.subplots(nrows, ncols, squeeze=False,
                        gridspec_kw={"top": 1 - top / height, "bottom": bottom / height, "left": left,
                                     "right": 0.99, "wspace": 0.04, "hspace": 0.3 + extra / row,
                                     "width_ratios": widths})
    for r in range(nrows):
        for c in range(ncols):
            ax = axes[r][c]
            ax.imshow(images[r][c])
            ax.set_xticks([])
            ax.set_yticks([])
            ax.set_title(titles[r][c], fontsize=7.5)
            if c == 0:
                ax.set_ylabel(labels[r], fontsize=8)
    fig.suptitle(textwrap.fill(title, chars), fontsize=9, y=1 - 0.1 / height, va="top")
    if cap:
        fig.text(0.02, 0.08 / height, cap, fontsize=8.5, va="bottom", ha="left")
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return np.asarray(canvas.buffer_rgba())[..., :3].copy()


def title_space(titles: Sequence[str], widths: Sequence[int]) -> int:
    """Pixels :func:`compose_figure` adds to the height of one row of panels ``widths`` pixels
    wide under ``titles``: :data:`TITLE_SPACE`, more where a wrapped title has over three lines."""
    if len(titles) != len(widths):
        raise ValueError(f"titles and widths must have one entry per panel, got {len(titles)} and "
                         f"{len(widths)}")
    wrapped = [_wrap(t, w / _CHAR_PX) for t, w in zip(titles, widths)]
    return TITLE_SPACE + int(np.ceil(_extra_lines([wrapped]) * _LINE_PX))


def titled_row_png(path: str | Path, draw: Callable, *, panel: tuple[int, int], row_label: str, title: str,
                   backend: str = "auto", size: tuple[int, int] | None = None) -> Path:
    """Render one row of panels and write it as a titled PNG (:func:`compose_figure`).

    Args:
        path: the PNG to write (folder created); its metadata names the backends that drew it
            (:func:`~pointabstract.viz.core.render.save_png`, read back by ``png_backend``).
        draw: ``draw(renderer) -> (images, titles)``: the row's (H, W, 3) uint8 panels, drawn
            with the :class:`~pointabstract.viz.core.render.Renderer` it is handed (or not: a legend),
            and one title each.
        panel: (width, height) in pixels of the renderer's images.
        row_label: left of the row (the sample's title); title: above the figure.
        backend: rendering backend (see :mod:`pointabstract.viz.core.backends`).
        size: (width, height): the figure padded with white (or cropped at its margin) to
            exactly this size; None: as composed (``panel`` plus :func:`title_space` rows).

    Returns:
        The path written.
    """
    from .render import Renderer, save_png

    with Renderer(*panel, backend=backend) as renderer:
        images, titles = draw(renderer)
    image = compose_figure([list(images)], [list(titles)], [row_label], title=title)
    if size is not None:
        image = _fit(image, *size)
    return save_png(np.ascontiguousarray(image), path, backends=renderer.backends_used,
                    fallbacks=renderer.fallbacks)


def titled_panels_png(panels: Sequence, titles: Sequence[str], path: str | Path, *, width: int, height: int,
                      row_label: str, title: str, camera=None, legend=None, backend: str = "auto") -> Path:
    """Panels drawn separately through one camera, each under its title, as one ``width`` x
    ``height`` PNG (the ``--png`` of the classification and capsule views).

    Args:
        panels: drawable lists (see :mod:`pointabstract.viz.classification.scenes`), left to right.
        titles: one title per panel.
        path: the PNG to write; its metadata names the backends that drew it.
        width, height: the PNG's size in pixels. Panels share the width (less the legend's bar)
            and leave :func:`title_space` pixels of the height to the titles; where that leaves
            them smaller than :data:`MIN_TITLED` pixels, the panels are drawn alone, untitled,
            filling the image (:func:`~pointabstract.viz.core.render.render_panels_png`).
        row_label: left of the panels (the sample's title); title: above them.
        camera: the :class:`~pointabstract.viz.core.render.Camera` of every panel (None: each panel's
            default camera, fitted to its own points).
        legend: a scalar colouring's :class:`~pointabstract.viz.core.colors.ScalarLegend`, drawn as
            a colour bar right of the panels.
        backend: rendering backend.

    Returns:
        The path written.
    """
    from .colors import legend_image
    from .render import legend_width, render_panels_png

    if isinstance(panels, dict) or not isinstance(panels, (list, tuple)) or not panels:
        raise ValueError(f"panels must be a non-empty list of drawable lists, got {type(panels).__name__}")
    if isinstance(titles, str) or len(titles) != len(panels):
        raise ValueError(f"titles must hold one title per panel ({len(panels)}), got {titles!r}")
    V.check_int("width", width, low=1)
    V.check_int("height", height, low=1)
    bar_width = legend_width(width)  # as render_panels draws it
    panel_w = (width - (0 if legend is None else bar_width)) // len(panels)
    panel_h = height - title_space(titles, [panel_w] * len(panels))
    if min(panel_w, panel_h) < MIN_TITLED:
        return render_panels_png(list(panels), path, width=width, height=height, camera=camera, legend=legend,
                                 backend=backend)
    bar = None
    if legend is not None:  # its caption runs along the bar: wrapped to the bar's length
        legend = replace(legend, label=_wrap(legend.label, 0.8 * panel_h / _LABEL_CHAR_PX))
        bar = legend_image(legend, width=bar_width, height=panel_h)

    def draw(renderer):
        images = [renderer.render(geometries, camera=camera) for geometries in panels]
        return images + ([] if bar is None else [bar]), list(titles) + ([] if bar is None else [""])

    return titled_row_png(path, draw, panel=(panel_w, panel_h), row_label=row_label, title=title,
                          backend=backend, size=(width, height))


def _wrap(text: str, chars: float) -> str:
    """``text`` with every line wrapped to ``chars`` characters (at least 12)."""
    return "\n".join(textwrap.fill(line, max(12, int(chars))) for line in text.splitlines())


def _extra_lines(titles: list[list[str]]) -> int:
    """Lines beyond three of the longest (wrapped) title."""
    return max(0, max(t.count("\n") + 1 for row in titles for t in row) - 3)


def _fit(image: np.ndarray, width: int, height: int) -> np.ndarray:
    """(H, W, 3) -> (height, width, 3): cropped at the bottom / right margin, padded with white."""
    out = np.full((height, width, 3), 255, dtype=np.uint8)
    h, w = min(height, image.shape[0]), min(width, image.shape[1])
    top, left = (height - h) // 2, (width - w) // 2
    out[top:top + h, left:left + w] = image[:h, :w]
    return out
