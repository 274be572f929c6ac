"""Scene builders: coloured Open3D geometries from a model's ``return_features=True`` output.

The central scene is the paper's Fig. 4: one block's points in grey, a query point marked,
its K nearest neighbours *in the block's feature space* in red, next to (or instead of) its
K nearest neighbours *in 3D space*. Both neighbourhoods come from :func:`pointabstract.ops.knn`.

A scene is a list of *drawables*: ``{"name": str, "geometry": open3d geometry,
"point_size": float}`` dicts that :func:`pointabstract.viz.core.render.render_png` and the viewer
take (``[d["geometry"] for d in scene.geometries]`` for plain Open3D calls).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from ... import _validate as V
from ...ops import knn
from ..core.colors import CONTEXT, GREY, HIGHLIGHT, QUERY, ScalarLegend
from ..core.geometry import float_points, point_cloud, rgb_colors
from ..core.render import Camera

__all__ = ["LAYOUTS", "NeighbourhoodScene", "block_output", "default_block", "default_k", "feature_knn",
           "highlight_colors", "neighbourhood_scene", "query_marker", "xyz_knn"]

LAYOUTS = ("side_by_side", "feature", "xyz")  # both panels, feature space only, 3D space only


def block_output(output: dict, block: int, *, batch: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Positions and features of one block from ``model(pos, return_features=True)``.

    Args:
        output: the model's output dict with ``"blocks"``, a list of ``{"features": (B, M, C),
            "pos": (B, M, 3), ...}``.
        block: block index, negative counts from the end.
        batch: which cloud of the batch.

    Returns:
        pos: (M, 3) float, features: (M, C) float, detached, on the CPU.
    """
    blocks = output.get("blocks") if isinstance(output, dict) else None
    if not blocks:
        raise ValueError("output holds no per-block features: call the model with "
                         "return_features=True (a model that cannot has nothing to show)")
    V.check_int_in("block", block, -len(blocks), len(blocks) - 1, note=" for this model")
    entry = blocks[block]
    pos, feats = entry["pos"], entry["features"]
    V.check_int_in("batch", batch, 0, pos.shape[0] - 1)
    return pos[batch].detach().float().cpu(), feats[batch].detach().float().cpu()


def default_block(blocks: list[dict]) -> int:
    """The block the paper visualises: the second centroid-attention block (one with
    ``init_idx``), else the last centroid block, else the last block."""
    centroid = [i for i, b in enumerate(blocks) if b.get("init_idx") is not None]
    if len(centroid) >= 2:
        return centroid[1]
    return centroid[-1] if centroid else len(blocks) - 1


def default_k(num_points: int) -> int:
    """The paper's K = 40 neighbours among a block's 128 points (N/8 of 1024), kept in proportion
    for smaller blocks: ``min(40, max(1, round(M * 40 / 128)))``."""
    V.check_int("num_points", num_points, low=1)
    return int(min(40, max(1, round(num_points * 40 / 128))))


def feature_knn(features, query: int, k: int) -> np.ndarray:
    """The ``k`` nearest points of point ``query`` in feature space (L2), nearest first.

    Args:
        features: (M, C) per-point features.
        query: index of the query point in ``[0, M)``; it is its own first neighbour.
        k: neighbours, 1 <= k <= M.

    Returns:
        (K,) int64; entries index the M points.
    """
    feats = float_points("features", features)
    V.check_int_in("query", query, 0, feats.shape[0] - 1)
    V.check_int_in("k", k, 1, feats.shape[0], note=f" (the block has {feats.shape[0]} points)")
    _, idx = knn(feats[None, query:query + 1], feats[None], k)  # (1, 1, K)
    return idx[0, 0].numpy()


def xyz_knn(pos, query: int, k: int) -> np.ndarray:
    """The ``k`` nearest points of point ``query`` in 3D space. pos: (M, 3) -> (K,) int64."""
    pos = float_points("pos", pos, channels=3)
    return feature_knn(pos, query, k)


def highlight_colors(num_points: int, neighbours, *, base=GREY, color=HIGHLIGHT) -> np.ndarray:
    """Per-point colours: ``base`` everywhere, ``color`` on ``neighbours``.

    Args:
        num_points: M.
        neighbours: (K,) indices into the M points.
        base: one RGB colour or (M, 3) colours.
        color: RGB colour of the neighbours.

    Returns:
        (M, 3) float64 in [0, 1].
    """
    out = np.empty((num_points, 3))
    out[:] = rgb_colors("base", base, num_points)
    idx = np.asarray(neighbours, dtype=np.int64).reshape(-1)
    if idx.size and (idx.min() < 0 or idx.max() >= num_points):
        raise ValueError(f"neighbours must index [0, {num_points}), got values in [{idx.min()}, {idx.max()}]")
    out[idx] = rgb_colors("color", color, 1)
    return out


def query_marker(center, *, radius: float, color=QUERY):
    """A sphere mesh marking the query point. center: (3,), radius > 0."""
    import open3d as o3d

    center = np.asarray(center, dtype=np.float64).reshape(-1)
    if center.shape != (3,) or not np.isfinite(center).all():
        raise ValueError(f"center must be 3 finite coordinates, got {center}")
    V.check_positive("radius", radius)
    mesh = o3d.geometry.TriangleMesh.create_sphere(radius=radius, resolution=12)
    mesh.translate(center)
    mesh.paint_uniform_color(rgb_colors("color", color, 1)[0])
    return mesh


@dataclass
class NeighbourhoodScene:
    """What :func:`neighbourhood_scene` built (the arrays are kept for tests and captions)."""

    geometries: list[dict]  # drawables: {"name", "geometry", "point_size"}
    query: int  # index of the query among the M points
    feature_idx: np.ndarray  # (K,) its feature-space neighbours
    xyz_idx: np.ndarray  # (K,) its 3D-space neighbours
    colors: dict[str, np.ndarray] = field(default_factory=dict)  # panel -> (M, 3) point colours
    offset: np.ndarray = field(default_factory=lambda: np.zeros(3))  # shift of the 3D panel
    legend: ScalarLegend | None = None  # set when the base colours encode a scalar


def neighbourhood_scene(pos, features, query: int, *, k: int = 40, layout: str = "side_by_side",
                        base_colors=GREY, xyz_base_colors=None, highlight: bool = True,
                        context=None, context_colors=CONTEXT, gap: float = 0.25, side_direction=None,
                        point_size: float = 7.0, legend: ScalarLegend | None = None,
                        highlight_color=HIGHLIGHT) -> NeighbourhoodScene:
    """Feature-space vs 3D-space neighbourhood of one query point (the paper's Fig. 4).

    Args:
        pos: (M, 3) the block's point positions.
        features: (M, C) the block's features.
        query: index of the query point in [0, M).
        k: neighbours per space, 1 <= k <= M (the query is its own first neighbour).
        layout: ``"side_by_side"`` (the feature panel, the 3D panel beside it on its right),
            ``"feature"`` or ``"xyz"`` (one panel).
        base_colors: colour of the points that are not neighbours: one RGB colour or (M, 3).
        xyz_base_colors: the same for the 3D panel when it differs (e.g. a colouring by the
            distance to the query in each space); default ``base_colors``.
        highlight: paint the neighbours in ``highlight_color`` (off for scalar colourings that
            show them anyway).
        context: (N, 3) optional input cloud drawn smaller behind each panel.
        context_colors: its colour: one RGB colour (default light grey) or (N, 3), e.g. faint parts.
        gap: space between the panels, as a fraction of the cloud's width.
        side_direction: (3,) direction from the feature panel to the 3D panel (default: the
            image's right for the default :class:`~pointabstract.viz.core.render.Camera`, so both
            copies sit at the same depth and look alike).
        point_size: rendered size of the block's points in pixels (context: half of it).
        legend: what ``base_colors`` encode, when they encode a scalar.
        highlight_color: the neighbours' RGB colour (default red; see
            :func:`~pointabstract.viz.core.colors.contrasting_highlight` for class / part colourings).

    Returns:
        A :class:`NeighbourhoodScene`; ``feature_idx`` equals ``knn(features[query], features, k)``.
    """
    pos_t = float_points("pos", pos, channels=3)
    feats = float_points("features", features)
    m = pos_t.shape[0]
    if feats.shape[0] != m:
        raise ValueError(f"features must have one row per point of pos ({m}), got {tuple(feats.shape)}")
    V.check_choice("layout", layout, LAYOUTS)
    V.check_float("gap", gap, low=0.0)
    ctx = None if context is None else float_points("context", context, channels=3).double().numpy()
    base = (base_colors, base_colors if xyz_base_colors is None else xyz_base_colors)
    f_idx, x_idx = feature_knn(feats, query, k), xyz_knn(pos_t, query, k)
    xyz = pos_t.double().numpy()
    everything = xyz if ctx is None else np.concatenate([xyz, ctx])
    side = Camera().right if side_direction is None else _unit("side_direction", side_direction)
    offset = side * (np.ptp(everything @ side) * (1 + gap) + 1e-6)  # beside, at the same depth
    radius = 0.025 * float(np.linalg.norm(np.ptp(everything, axis=0))) + 1e-6
    panels = {"feature": (f_idx, base[0], np.zeros(3)),
              "xyz": (x_idx, base[1], offset if layout == "side_by_side" else np.zeros(3))}
    shown = ("feature", "xyz") if layout == "side_by_side" else (layout,)
    scene = NeighbourhoodScene([], query, f_idx, x_idx, offset=offset, legend=legend)
    for name in shown:
        idx, panel_base, shift = panels[name]
        colors = highlight_colors(m, idx if highlight else [], base=panel_base, color=highlight_color)
        scene.colors[name] = colors
        if ctx is not None:
            cloud = point_cloud(ctx + shift, context_colors)
            scene.geometries.append({"name": f"{name}/context", "geometry": cloud,
                                     "point_size": point_size / 2})
        scene.geometries.append({"name": f"{name}/points", "geometry": point_cloud(xyz + shift, colors),
                                 "point_size": point_size})
        scene.geometries.append({"name": f"{name}/query", "geometry": query_marker(xyz[query] + shift,
                                                                                  radius=radius),
                                 "point_size": point_size})
    return scene


def _unit(name: str, v) -> np.ndarray:
    v = np.asarray(v, dtype=np.float64).reshape(-1)
    if v.shape != (3,) or not np.isfinite(v).all() or np.linalg.norm(v) == 0:
        raise ValueError(f"{name} must be a non-zero 3-vector, got {v}")
    return v / np.linalg.norm(v)
