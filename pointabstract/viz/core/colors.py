"""Fixed palettes (classes, the 50 ShapeNetPart parts), scalar colour maps and their legends.

Every colour is an RGB triple of floats in [0, 1]; arrays of colours are ``(N, 3)`` float64,
which is what Open3D's ``Vector3dVector`` takes without a copy. Palettes are fixed (no
randomness), so the same class or part has the same colour in every scene, PNG and report.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ... import _validate as V
from ...data import NUM_PARTS, SHAPENET_PART, resolve_category

__all__ = ["BACKGROUND", "CONTEXT", "GREY", "HIGHLIGHT", "HIGHLIGHTS", "QUERY", "ScalarLegend",
           "class_palette", "contrasting_highlight", "label_colors", "legend_image", "part_legend",
           "part_palette", "scalar_colors"]

GREY = (0.62, 0.62, 0.62)  # points that are not highlighted
CONTEXT = (0.86, 0.86, 0.86)  # the input cloud drawn behind a block's points
HIGHLIGHT = (0.86, 0.08, 0.08)  # the K neighbours of the query (red, as in the paper's Fig. 4)
QUERY = (0.05, 0.25, 0.95)  # the query marker (blue: distinct from grey, red and white)
BACKGROUND = (1.0, 1.0, 1.0)  # rendered PNGs
# the neighbours' colour in order of preference, where the points around them are coloured by
# class or part (red is the first class's and some categories' first part's colour)
HIGHLIGHTS = {"red": HIGHLIGHT, "black": (0.05, 0.05, 0.05), "magenta": (0.9, 0.0, 0.9),
              "lime": (0.3, 1.0, 0.0)}
_APART = 0.35  # RGB distance at which two colours of these points are told apart at a glance

# 20 well-separated hues (Kelly / Glasbey-like, hand-ordered so neighbours in the list differ
# strongly); longer palettes continue with lighter and darker variants of the same hues.
_BASE = np.array([
    (0.90, 0.10, 0.29), (0.24, 0.71, 0.29), (0.00, 0.51, 0.78), (0.96, 0.51, 0.19),
    (0.57, 0.12, 0.71), (0.27, 0.94, 0.94), (0.94, 0.20, 0.90), (0.82, 0.96, 0.24),
    (0.98, 0.75, 0.83), (0.00, 0.50, 0.50), (0.86, 0.75, 1.00), (0.67, 0.43, 0.16),
    (1.00, 0.88, 0.10), (0.50, 0.00, 0.00), (0.67, 1.00, 0.76), (0.50, 0.50, 0.00),
    (1.00, 0.84, 0.71), (0.00, 0.00, 0.50), (0.40, 0.40, 0.40), (0.10, 0.10, 0.10),
])
# the six part hues: red, blue, green, orange, purple, cyan
_PART_HUES = _BASE[[0, 2, 1, 3, 4, 9]]


def contrasting_highlight(base) -> tuple[str, tuple[float, float, float]]:
    """The colour (name, RGB) to highlight points with among points coloured ``base``.

    Args:
        base: one RGB colour or (M, 3) colours in [0, 1].

    Returns:
        The first of :data:`HIGHLIGHTS` (red first) at least 0.35 in RGB distance from every
        colour of ``base`` and from the query marker's blue; if none is, the one farthest from
        them.
    """
    others = np.concatenate([np.asarray(base, dtype=np.float64).reshape(-1, 3), [QUERY]])
    apart = {name: float(np.linalg.norm(others - np.asarray(rgb), axis=1).min())
             for name, rgb in HIGHLIGHTS.items()}
    name = next((n for n, d in apart.items() if d >= _APART), max(apart, key=apart.get))
    return name, HIGHLIGHTS[name]


def class_palette(num_classes: int) -> np.ndarray:
    """A fixed colour per class index.

    Args:
        num_classes: number of classes, >= 1.

    Returns:
        (num_classes, 3) float64 in [0, 1]; row ``c`` is the colour of class ``c``. The first
        20 colours are distinct hues; later ones are darker (rows 20-39) and lighter (40-59)
        variants, then the cycle repeats.
    """
    V.check_int("num_classes", num_classes, low=1)
    rows = []
    for c in range(num_classes):
        base, variant = _BASE[c % 20], (c // 20) % 3
        rows.append(base if variant == 0 else base * 0.6 if variant == 1 else base + (1 - base) * 0.45)
    return np.clip(np.array(rows, dtype=np.float64), 0.0, 1.0)


def part_palette() -> np.ndarray:
    """The part palette keyed on the 50 global ShapeNetPart part ids.

    The j-th part of every category takes the j-th of six strong hues (so the parts of one
    category, at most 6, are far apart), shaded from darker to lighter by the category's
    position in ``SHAPENET_PART`` (so each of the 50 ids has its own colour).

    Returns:
        (50, 3) float64 in [0, 1]; row ``p`` is the colour of global part id ``p``.
    """
    out = np.full((NUM_PARTS, 3), np.nan)
    for c, category in enumerate(SHAPENET_PART):
        shade = -0.3 + 0.6 * c / (len(SHAPENET_PART) - 1)  # < 0 darkens, > 0 lightens
        for j, part in enumerate(category.parts):
            hue = _PART_HUES[j]
            out[part] = hue * (1 + shade) if shade < 0 else hue + (1 - hue) * shade
    assert not np.isnan(out).any(), "SHAPENET_PART must own every part id 0..49"
    return out


def part_legend(category: str | int) -> list[tuple[str, tuple[float, float, float]]]:
    """``[(part name, colour), ...]`` for one ShapeNetPart category (name, synset or index)."""
    found = SHAPENET_PART[resolve_category(category)]
    palette = part_palette()
    return [(name, tuple(palette[p])) for name, p in zip(found.part_names, found.parts)]


def label_colors(labels, palette: np.ndarray) -> np.ndarray:
    """Colour integer labels with a palette.

    Args:
        labels: (N,) integer labels in ``[0, len(palette))`` (numpy array, tensor or list).
        palette: (L, 3) colours in [0, 1].

    Returns:
        (N, 3) float64, row ``i`` = ``palette[labels[i]]``.
    """
    labels = _numpy(labels)
    palette = np.asarray(palette, dtype=np.float64)
    if palette.ndim != 2 or palette.shape[1] != 3:
        raise ValueError(f"palette must have shape (L, 3), got {palette.shape}")
    if labels.ndim != 1 or not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(f"labels must be a 1-D integer array, got shape {labels.shape} dtype {labels.dtype}")
    if labels.size and (labels.min() < 0 or labels.max() >= len(palette)):
        raise ValueError(f"labels must lie in [0, {len(palette)}), got values in "
                         f"[{labels.min()}, {labels.max()}]")
    return palette[labels]


@dataclass(frozen=True)
class ScalarLegend:
    """What a scalar colouring means: drawn as a colour bar beside a rendered image."""

    cmap: str  # matplotlib colour map name
    vmin: float  # value at the bottom of the bar
    vmax: float  # value at the top
    label: str = ""  # what the scalar is, e.g. "feature distance to the query"


def scalar_colors(values, *, cmap: str = "viridis", vmin: float | None = None,
                  vmax: float | None = None, label: str = "") -> tuple[np.ndarray, ScalarLegend]:
    """Map a per-point scalar through a matplotlib colour map.

    Args:
        values: (N,) finite floats.
        cmap: colour map name (``viridis``, ``magma``, ``coolwarm``, ...).
        vmin, vmax: value range mapped to the ends of the map (default: the data's range);
            values outside are clipped.
        label: the legend's caption.

    Returns:
        colors: (N, 3) float64 in [0, 1].
        legend: the :class:`ScalarLegend` to draw beside the image (see :func:`legend_image`).
    """
    from matplotlib import colormaps

    values = _numpy(values).astype(np.float64)
    if values.ndim != 1 or values.size == 0:
        raise ValueError(f"values must be a non-empty 1-D array, got shape {values.shape}")
    if not np.isfinite(values).all():
        raise ValueError("values holds NaN or Inf")
    if cmap not in colormaps:
        raise ValueError(f"unknown cmap {cmap!r}; e.g. viridis, magma, plasma, coolwarm")
    lo = float(values.min()) if vmin is None else float(vmin)
    hi = float(values.max()) if vmax is None else float(vmax)
    if not hi >= lo:
        raise ValueError(f"vmax must be >= vmin, got vmin={lo}, vmax={hi}")
    t = np.clip((values - lo) / (hi - lo), 0.0, 1.0) if hi > lo else np.zeros_like(values)
    return colormaps[cmap](t)[:, :3].astype(np.float64), ScalarLegend(cmap, lo, hi, label)


def legend_image(legend: ScalarLegend, *, width: int = 110, height: int = 400) -> np.ndarray:
    """A vertical colour bar with ticks and caption on a white background.

    Returns:
        (height, width, 3) uint8 RGB image.
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.colors import Normalize
    from matplotlib.figure import Figure

    if width < 40 or height < 60:
        raise ValueError(f"legend needs width >= 40 and height >= 60, got {width}x{height}")
    dpi = 100
    fig = Figure(figsize=(width / dpi, height / dpi), dpi=dpi, facecolor="white")
    ax = fig.add_axes([0.12, 0.06, 0.2, 0.88])
    norm = Normalize(legend.vmin, legend.vmax if legend.vmax > legend.vmin else legend.vmin + 1e-9)
    fig.colorbar(matplotlib.cm.ScalarMappable(norm=norm, cmap=legend.cmap), cax=ax,
                 label=legend.label or None)
    ax.tick_params(labelsize=7)
    ax.yaxis.label.set_size(8)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return np.asarray(canvas.buffer_rgba())[:height, :width, :3].copy()


def _numpy(x) -> np.ndarray:
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    return np.asarray(x)
