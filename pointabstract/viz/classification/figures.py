"""The neighbourhood figure and report section (the paper's Fig. 4 on a trained checkpoint).

One row per test shape, two panels per query point: its K nearest neighbours (red) among one
block's points in that block's feature space, then its K nearest neighbours in 3D space. The
input cloud is drawn faintly coloured by part behind the block's points. Where the data root
holds part labels (the built-in synthetic data does), the shapes are evaluated with more input
points than training used (``figure_points``, default 1,024: the second centroid block then has
128 points, as in the paper) and :func:`~pointabstract.viz.classification.part_agreement.part_agreement` is
measured; its numbers go into the caption, the report section and the metrics.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch

from ... import _validate as V
from ...engine.tasks.base import dataset_points
from ...ops import farthest_point_sample
from ..core.colors import part_palette
from ..core.figure_compose import compose_figure
from ..core.panel_titles import run_label
from ..core.render import Camera, Renderer, save_png
from .part_agreement import open_part_dataset, part_agreement
from .scenes import default_k, feature_knn, neighbourhood_scene, xyz_knn
from .session import SampleView, ViewSession, load_view_session

__all__ = ["NeighbourhoodReport", "PartSamples", "contrasting_queries", "neighbourhood_figure",
           "neighbourhood_report", "neighbourhood_section", "pick_queries"]

FAINT = 0.3  # share of the part colour in the context cloud's colours (the rest is white)


def pick_queries(pos: torch.Tensor, count: int) -> list[int]:
    """``count`` well-spread query points of a block: farthest point sampling from point 0.

    pos: (M, 3) -> ``count`` indices into the M points.
    """
    V.check_int_in("queries", count, 1, pos.shape[0], note=" (or a list of point indices)")
    return farthest_point_sample(pos[None].float(), count)[0].tolist()


def contrasting_queries(pos: torch.Tensor, features: torch.Tensor, count: int, k: int) -> list[int]:
    """``count`` query points whose feature-space and 3D neighbourhoods differ most.

    Points are ranked by how many of their ``k`` feature-space neighbours are also among their
    ``k`` 3D neighbours (fewest first, ties by index); a point inside the 3D neighbourhood of an
    already chosen query is skipped while others remain, so the queries spread over the shape.

    Args:
        pos: (M, 3) block positions.
        features: (M, C) block features.
        count: queries wanted, 1 <= count <= M.
        k: neighbours per space.

    Returns:
        ``count`` indices into the M points.
    """
    m = pos.shape[0]
    V.check_int_in("queries", count, 1, m, note=" (or a list of point indices)")
    overlap = [len(set(feature_knn(features, q, k)) & set(xyz_knn(pos, q, k))) for q in range(m)]
    order = sorted(range(m), key=lambda q: (overlap[q], q))
    chosen, covered = [], set()
    for q in order:
        if q not in covered:
            chosen.append(q)
            covered |= set(xyz_knn(pos, q, k).tolist())
        if len(chosen) == count:
            return chosen
    return chosen + [q for q in order if q not in chosen][:count - len(chosen)]


def neighbourhood_figure(checkpoint: str | Path | ViewSession, out_png: str | Path, *,
                         data_root: str | Path | None = None, split: str = "test",
                         indices: Sequence[int] = (0, 1, 2), queries: int | Sequence[int] = 3,
                         block: int | None = None, k: int | None = None, panel_size: int = 280,
                         context: bool = True, backend: str = "auto", device: str = "cpu",
                         caption: str = "") -> Path:
    """Write the feature-space vs 3D-space KNN figure of a checkpoint to ``out_png``.

    Args:
        checkpoint: trainer checkpoint path, or an already loaded :class:`ViewSession` (its
            dataset gives the shapes: see :func:`neighbourhood_report` for more points per shape).
        out_png: the PNG to write (folder created); its metadata names the rendering backend.
        data_root: dataset root (default: the one the checkpoint was trained on).
        split: dataset split the shapes come from.
        indices: samples of the split, one figure row each.
        queries: query points per shape: a count (the points whose two neighbourhoods differ
            most, :func:`contrasting_queries`) or explicit indices into the block's M points.
        block: block whose features define the neighbourhoods (default: the second
            centroid-attention block, as in the paper; negative counts from the end).
        k: neighbours per query (default: :func:`~pointabstract.viz.classification.scenes.default_k`, the
            paper's 40 of 128 points in proportion; an explicit ``k > M`` is an error).
        panel_size: pixel width and height of each rendered panel.
        context: draw the input cloud (faintly coloured by part when the samples have parts).
        backend: rendering backend (see :mod:`pointabstract.viz.core.backends`).
        device: torch device of the model.
        caption: extra text under the figure's title (e.g. the part-agreement numbers).

    Returns:
        The path written.
    """
    session = checkpoint if isinstance(checkpoint, ViewSession) else \
        load_view_session(checkpoint, data_root=data_root, split=split, device=device)
    if isinstance(indices, (int, np.integer)) or len(indices) == 0:
        raise ValueError(f"indices must be a non-empty list of sample indices, got {indices!r}")
    samples = [session.sample(i) for i in indices]
    chosen = block if block is not None else samples[0].default_block
    rows = [_row_scenes(s, chosen, queries, k, context) for s in samples]
    with Renderer(panel_size, panel_size, backend=backend) as renderer:
        images = [[renderer.render(scene.geometries, camera=camera) for scene in row]
                  for row, _, camera in rows]
    first = rows[0][1][0]
    title = (f"{run_label(session)}: K = {first['k']} nearest "
             "neighbours (red) "
             f"of query points (blue) among block {chosen}'s {first['m']} points, shapes of "
             f"{samples[0].pos.shape[0]} input points")
    image = compose_figure(images, [[_panel_title(meta, chosen) for meta in m] for _, m, _ in rows],
                           [s.title for s in samples], title=title, caption=caption)
    return save_png(image, out_png, backends=renderer.backends_used, fallbacks=renderer.fallbacks)


@dataclass
class NeighbourhoodReport:
    """What :func:`neighbourhood_report` made: the report.md section, metrics and the PNG."""

    markdown: str
    metrics: dict  # {"part_agreement": {...}, "part_agreement_training_points": {...}} or {}
    png: Path


def neighbourhood_report(checkpoint: str | Path | ViewSession, out_dir: str | Path, *,
                         name: str = "neighbourhoods.png", data_root: str | Path | None = None,
                         device: str = "cpu", figure_points: int = 1024, agreement_shapes: int | None = 64,
                         **figure_kwargs) -> NeighbourhoodReport:
    """The neighbourhood figure, the part-agreement numbers, and the report section joining them.

    Args:
        checkpoint: trainer checkpoint, or a loaded :class:`ViewSession`.
        out_dir: where ``name`` is written (the section links it relative to ``out_dir``).
        data_root: dataset root (default: the one the checkpoint was trained on).
        device: torch device of the model.
        figure_points: N of the figure's shapes and of the headline agreement numbers, when the
            data root has part labels (then also measured at the training N).
        agreement_shapes: test shapes averaged for the agreement numbers (the first ones; the
            synthetic test split cycles through the 16 classes); None: all.
        figure_kwargs: passed to :func:`neighbourhood_figure` (indices, queries, block, k, ...).

    Returns:
        A :class:`NeighbourhoodReport`; ``metrics`` is empty when the data has no part labels.
    """
    from .neighbourhood_text import agreement_markdown, figure_caption

    session = checkpoint if isinstance(checkpoint, ViewSession) else \
        load_view_session(checkpoint, data_root=data_root, device=device)
    cfg = session.config
    try:
        parts = open_part_dataset(cfg.data.root, num_points=figure_points, use_normals=cfg.data.use_normals)
    except (FileNotFoundError, ValueError) as err:
        parts, why = None, str(err).splitlines()[0]
    metrics: dict = {}
    if parts is not None:
        shown = replace(session, dataset=PartSamples(parts, session.class_names))
        train_parts = open_part_dataset(cfg.data.root, num_points=dataset_points(cfg.data),
                                        use_normals=cfg.data.use_normals)
        run = dict(max_shapes=agreement_shapes, use_normals=cfg.data.use_normals, device=session.device)
        metrics = {"part_agreement": part_agreement(session.model, parts, **run),
                   "part_agreement_training_points": part_agreement(session.model, train_parts, **run)}
    else:
        shown = session
    block = figure_kwargs.get("block")
    block = block if block is not None else shown.sample(0).default_block
    caption = figure_caption(metrics.get("part_agreement"), block) if metrics else \
        f"no part labels at {cfg.data.root} ({why}): part agreement not measured"
    path = neighbourhood_figure(shown, Path(out_dir) / name, caption=caption, **figure_kwargs)
    return NeighbourhoodReport(agreement_markdown(path.name, metrics, block, caption), metrics, path)


def neighbourhood_section(checkpoint: str | Path | ViewSession, out_dir: str | Path, *,
                          name: str = "neighbourhoods.png", **kwargs) -> str:
    """The markdown of :func:`neighbourhood_report` (for callers that take no metrics)."""
    return neighbourhood_report(checkpoint, out_dir, name=name, **kwargs).markdown


class PartSamples(torch.utils.data.Dataset):
    """A part-labelled split seen as a classification split: ``label`` = ``category`` when the
    class names are the ShapeNetPart categories (the built-in synthetic data), else none."""

    def __init__(self, dataset, class_names: list[str]):
        from ...data import SHAPENET_PART

        self.dataset = dataset
        self.same_classes = [c.lower() for c in class_names] == [c.name.lower() for c in SHAPENET_PART]

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, index: int) -> dict:
        item = dict(self.dataset[index])
        item["label"] = int(item["category"]) if self.same_classes and "category" in item else None
        return item


def _row_scenes(sample: SampleView, block: int, queries, k, context: bool):
    pos, feats = sample.block(block)
    m = pos.shape[0]
    kk = default_k(m) if k is None else k
    if isinstance(queries, (int, np.integer)) and not isinstance(queries, bool):
        V.check_int_in("k", kk, 1, m, note=f" (the block has {m} points)")
        picked = contrasting_queries(pos, feats, int(queries), kk)
    else:
        picked = [int(q) for q in queries]
        if not picked:
            raise ValueError("queries must hold at least one point index")
    ctx = sample.pos if context else None
    ctx_colors = (0.86, 0.86, 0.86)
    labels = sample.labels_at(block, sample.part) if sample.part is not None else None
    if ctx is not None and sample.part is not None:
        ctx_colors = 1 - FAINT + FAINT * part_palette()[np.asarray(sample.part)]  # (N, 3) faint parts
    scenes, meta = [], []
    for q in picked:
        for layout in ("feature", "xyz"):
            scene = neighbourhood_scene(pos, feats, q, k=kk, layout=layout, context=ctx,
                                        context_colors=ctx_colors)
            idx = scene.feature_idx if layout == "feature" else scene.xyz_idx
            others = idx[idx != q]  # the query is its own first neighbour
            same = None if labels is None else (int((labels[others] == labels[q]).sum()), len(others))
            overlap = len(set(scene.feature_idx.tolist()) & set(scene.xyz_idx.tolist()))
            scenes.append(scene)
            meta.append({"q": q, "layout": layout, "k": kk, "m": m, "same": same, "overlap": overlap})
    camera = Camera.facing((ctx if ctx is not None else pos).numpy())
    return scenes, meta, camera


def _panel_title(meta: dict, block: int) -> str:
    space = f"feature space (block {block})" if meta["layout"] == "feature" else "3D space"
    part = "" if meta["same"] is None else f", {meta['same'][0]}/{meta['same'][1]} in its part"
    return f"query {meta['q']}: {space}\n{meta['overlap']}/{meta['k']} shared{part}"
