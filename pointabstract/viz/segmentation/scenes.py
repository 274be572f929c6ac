"""Scenes of a part-segmentation shape: true parts, predicted parts with the errors, tree clusters.

Each panel is a list of drawables (``{"name", "geometry", "point_size"}``, see :mod:`..classification.scenes`)
over the same points, so panels rendered separately through one :class:`~.render.Camera` frame
the shape identically. :func:`side_by_side` joins panels into one scene for the window.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ... import _validate as V
from ...data import SHAPENET_PART
from ..core.colors import class_palette, label_colors, part_palette
from ..core.geometry import point_cloud
from ..core.render import Camera
from .session import NOT_MODEL_TREE, SegSample

__all__ = ["LAYOUTS", "WRONG", "SegPanel", "cluster_colors", "cluster_palette", "legend_entries",
           "legend_panel",
           "segmentation_panels", "side_by_side"]

LAYOUTS = ("all", "parts", "tree")  # true | predicted | tree level;  true | predicted;  tree level
WRONG = (0.0, 0.0, 0.0)  # wrongly predicted points (black: no part hue is that dark)
WRONG_SIZE = 1.7  # wrong points are drawn this much larger than the others


@dataclass
class SegPanel:
    """One panel: what it shows, its title, its drawables and its per-point colours."""

    name: str  # "true" | "predicted" | "tree"
    title: str
    geometries: list[dict]
    colors: np.ndarray  # (N, 3) colour of every point in this panel


# class_palette hues for clusters: the part hues (red, blue, green, orange, purple, teal) last and
# the two greys left out, so that a tree panel is not read as a part panel nor as "wrong" (black)
_CLUSTER_HUES = (5, 6, 7, 8, 10, 11, 12, 13, 14, 15, 16, 17, 0, 1, 2, 3, 4, 9)


def cluster_palette(count: int) -> np.ndarray:
    """(count, 3) colours of tree clusters: the 18 hues of ``_CLUSTER_HUES``, then their darker and
    lighter variants (as :func:`~.colors.class_palette`), then the cycle repeats."""
    V.check_int("count", count, low=1)
    full = class_palette(60)  # rows 0-19 the hues, 20-39 darker, 40-59 lighter
    order = [variant * 20 + hue for variant in range(3) for hue in _CLUSTER_HUES]
    return full[[order[i % len(order)] for i in range(int(count))]]


def cluster_colors(clusters) -> np.ndarray:
    """clusters: (N,) node ids of one tree level -> (N, 3) colours, one per node.

    Node ids are in tree order, so neighbouring clusters (siblings) take consecutive entries of
    :func:`cluster_palette`, whose consecutive hues differ strongly.
    """
    clusters = np.asarray(clusters)
    if clusters.ndim != 1 or clusters.size == 0 or not np.issubdtype(clusters.dtype, np.integer) \
            or clusters.min() < 0:
        raise ValueError(f"clusters must be a non-empty 1-D array of node ids >= 0, got shape "
                         f"{clusters.shape} dtype {clusters.dtype}")
    return label_colors(clusters, cluster_palette(int(clusters.max()) + 1))


def segmentation_panels(sample: SegSample, *, level: int = 1, layout: str = "all",
                        point_size: float = 6.0) -> list[SegPanel]:
    """The panels of one shape, left to right.

    Args:
        sample: the shape (from :meth:`~.segmentation_view.SegSession.sample`).
        level: tree level of the cluster panel, in [1, R] (1: the smallest groups).
        layout: one of :data:`LAYOUTS`; without true parts the "true" panel is left out.
        point_size: rendered point size in pixels (wrong points: :data:`WRONG_SIZE` times it).

    Returns:
        list of :class:`SegPanel`.
    """
    V.check_choice("layout", layout, LAYOUTS)
    V.check_positive("point_size", point_size)
    clusters = sample.clusters_at(level)  # validates the level
    pos = sample.pos
    panels = []
    if layout in ("all", "parts"):
        palette = part_palette()
        if sample.part is not None:
            colors = label_colors(sample.part, palette)
            panels.append(SegPanel("true", "true parts", [_cloud("true", pos, colors, point_size)], colors))
        colors = label_colors(sample.pred, palette)
        wrong = sample.wrong
        if wrong is None:
            panels.append(SegPanel("predicted", "predicted parts (no true parts to compare)",
                                   [_cloud("predicted", pos, colors, point_size)], colors))
        else:
            colors[wrong] = WRONG
            geoms = [_cloud("predicted", pos[~wrong], colors[~wrong], point_size)] if (~wrong).any() else []
            if wrong.any():  # drawn separately and larger: no z-fighting with the right points
                geoms.append(_cloud("predicted/wrong", pos[wrong], colors[wrong], point_size * WRONG_SIZE))
            title = f"predicted parts: {int(wrong.sum())}/{len(wrong)} wrong (black)"
            panels.append(SegPanel("predicted", title, geoms, colors))
    if layout in ("all", "tree"):
        colors = cluster_colors(clusters)
        title = (f"tree level {level} of {sample.top_level}: {sample.clusters_text(level)}"
                 + ("" if sample.tree_from_model else f"\n({NOT_MODEL_TREE})"))
        panels.append(SegPanel("tree", title, [_cloud("tree", pos, colors, point_size)], colors))
    return panels


def side_by_side(panels: list[SegPanel], *, gap: float = 0.25) -> list[dict]:
    """All panels in one scene, each shifted along the default camera's right by its rank (the
    window shows one scene; PNGs render the panels separately instead)."""
    if not panels:
        raise ValueError("panels must hold at least one panel")
    right = Camera().right
    pts = np.concatenate([np.asarray(d["geometry"].points) for p in panels for d in p.geometries])
    step = right * (np.ptp(pts @ right) * (1 + gap) + 1e-6)
    out = []
    for i, panel in enumerate(panels):
        for d in panel.geometries:
            g = point_cloud(np.asarray(d["geometry"].points) + i * step, np.asarray(d["geometry"].colors))
            out.append({**d, "geometry": g})
    return out


def legend_entries(sample: SegSample) -> list[tuple[str, tuple[float, float, float]]]:
    """``[(label, colour), ...]``: the parts of the shape's category, then the wrong-point colour."""
    category = SHAPENET_PART[sample.category]
    palette = part_palette()
    entries = [(name, tuple(palette[p])) for name, p in zip(category.part_names, category.parts)]
    if sample.part is not None:
        entries.append(("wrong prediction", WRONG))
    return entries


def legend_panel(sample: SegSample, *, width: int = 200, height: int = 300) -> np.ndarray:
    """The part legend of the shape's category as an image: (height, width, 3) uint8 RGB."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    if width < 60 or height < 60:
        raise ValueError(f"legend needs width >= 60 and height >= 60, got {width}x{height}")
    fig = Figure(figsize=(width / 100, height / 100), dpi=100, facecolor="white")
    handles = [Patch(facecolor=color, edgecolor="none", label=name) for name, color in legend_entries(sample)]
    fig.legend(handles=handles, loc="center", frameon=False, fontsize=8,
               title=f"{sample.category_name} parts", title_fontsize=8.5)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return np.asarray(canvas.buffer_rgba())[:height, :width, :3].copy()


def _cloud(name: str, pos, colors, point_size: float) -> dict:
    return {"name": name, "geometry": point_cloud(pos, colors), "point_size": point_size}
