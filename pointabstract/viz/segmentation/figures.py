"""The part-segmentation figure and eval report section (the Sequoia paper's Fig. 5 on a checkpoint).

One row per test shape: true parts | predicted parts, wrong points black and larger | each
point coloured by its ancestor at a low tree level (many small clusters) | at a higher level
(a few large ones) | the legend of the category's parts. Every panel of a row is rendered
through the same camera (:meth:`~.render.Camera.facing` the shape).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ... import _validate as V
from ..core.figure_compose import compose_figure
from ..core.panel_titles import run_label
from ..core.render import Camera, Renderer, save_png
from .scenes import legend_panel, segmentation_panels
from .session import TASK, SegSample, SegSession, load_seg_session

__all__ = ["default_levels", "segmentation_figure", "segmentation_images", "segmentation_section"]


def default_levels(top_level: int) -> tuple[int, ...]:
    """The two levels just below the root, ``(R - 2, R - 1)``, kept >= 1 and distinct: with the
    Sequoia defaults (branching 4) about 16 and 4 clusters, the paper's Fig. 5 C and D."""
    V.check_int("top_level", top_level, low=1)
    return tuple(sorted({max(1, top_level - 2), max(1, top_level - 1)}))


def segmentation_images(samples: Sequence[SegSample], *, levels: Sequence[int] | None = None,
                        panel_size: int = 300, backend: str = "auto", layout: str = "all",
                        renderer: Renderer | None = None):
    """Rendered rows of panels: ``(images, titles, renderer)`` for :func:`compose_figure`.

    Each row: the panels of :func:`~.segmentation_scenes.segmentation_panels` (the tree panel once
    per level of ``levels``; default :func:`default_levels`), then the part legend.
    """
    if not samples:
        raise ValueError("samples must hold at least one shape")
    own = renderer is None
    renderer = renderer or Renderer(panel_size, panel_size, backend=backend)
    images, titles = [], []
    try:
        for sample in samples:
            chosen = default_levels(sample.top_level) if levels is None else tuple(levels)
            if not chosen:
                raise ValueError("levels must name at least one tree level")
            panels = segmentation_panels(sample, level=chosen[0], layout=layout)
            if layout == "all" or layout == "tree":
                tree = [p for p in panels if p.name == "tree"]
                panels = [p for p in panels if p.name != "tree"] + tree + [
                    segmentation_panels(sample, level=lv, layout="tree")[0] for lv in chosen[1:]]
            camera = Camera.facing(sample.pos.numpy())
            row = [renderer.render(p.geometries, camera=camera) for p in panels]
            images.append(row + [legend_panel(sample, width=renderer.width, height=renderer.height)])
            titles.append([p.title for p in panels] + [""])
    finally:
        if own:
            renderer.close()
    return images, titles, renderer


def segmentation_figure(checkpoint: str | Path | SegSession, out_png: str | Path, *,
                        data_root: str | Path | None = None, split: str = "test",
                        indices: Sequence[int] | None = None, count: int = 4,
                        levels: Sequence[int] | None = None, panel_size: int = 300, backend: str = "auto",
                        device: str = "cpu") -> Path:
    """Write the predicted-vs-true parts and tree-clusters figure of a checkpoint to ``out_png``.

    Args:
        checkpoint: trainer checkpoint path, or a loaded :class:`SegSession`.
        out_png: the PNG to write (folder created); its metadata names the rendering backend.
        data_root: dataset root (default: the one the checkpoint was trained on).
        split: dataset split the shapes come from.
        indices: shapes of the split, one row each (default: the first shape of each of the
            first ``count`` categories in split order).
        count: rows when ``indices`` is not given.
        levels: tree levels shown, one panel each (default :func:`default_levels`).
        panel_size: pixel width and height of each panel.
        backend: rendering backend (see :mod:`pointabstract.viz.core.backends`).
        device: torch device of the model.

    Returns:
        The path written.
    """
    session = checkpoint if isinstance(checkpoint, SegSession) else \
        load_seg_session(checkpoint, data_root=data_root, split=split, device=device)
    if indices is None:
        indices = session.first_of_categories(count)
    if isinstance(indices, (int, np.integer)) or len(indices) == 0:
        raise ValueError(f"indices must be a non-empty list of shape indices, got {indices!r}")
    return _write_figure(session, [session.sample(i) for i in indices], out_png, levels=levels,
                         panel_size=panel_size, backend=backend)


def _write_figure(session: SegSession, samples: list[SegSample], out_png, **kwargs) -> Path:
    images, titles, renderer = segmentation_images(samples, **kwargs)
    image = compose_figure(images, titles, [s.title for s in samples], title=_title(session, samples),
                           caption=_caption(samples))
    return save_png(image, out_png, backends=renderer.backends_used, fallbacks=renderer.fallbacks)


def segmentation_section(run, out: str | Path, *, name: str = "segmentation.png", count: int = 4,
                         **figure_kwargs) -> tuple[str, dict]:
    """The eval report section of a part-segmentation run: ``(markdown, metrics)``.

    Args:
        run: :func:`pointabstract.engine.restore`'s result (what ``evaluate_checkpoint`` passes);
            runs of other tasks get ``("", {})``.
        out: the report folder; the figure is written there as ``name``.
        count: shapes shown (the first of each of the first ``count`` categories of the split).
        figure_kwargs: ``indices`` (default: as ``count`` says), ``levels``, ``panel_size``,
            ``backend`` (as :func:`segmentation_figure` takes them).

    Returns:
        The markdown (figure and a per-shape table) and ``{}`` (no new metrics).
    """
    if run.config.task != TASK:
        return "", {}
    session = SegSession.from_restored(run)
    indices = figure_kwargs.pop("indices", None) or session.first_of_categories(count)
    samples = [session.sample(i) for i in indices]
    path = _write_figure(session, samples, Path(out) / name, **figure_kwargs)
    lines = ["## Predicted vs true parts", "",
             "Each row: the true parts, the predicted parts (logits restricted to the shape's category, "
             "as the metrics above; wrong points black and larger), and every point coloured by its "
             "ancestor at two levels of the tree (many small clusters, then a few large ones: the "
             "Sequoia paper's Fig. 5 C/D), all through the same camera.", "",
             f"![predicted vs true parts]({path.name})", "",
             "| shape | category | IoU | wrong points | tree |", "|---:|---|---:|---:|---|"]
    for s in samples:
        iou = "n/a" if s.iou is None else f"{s.iou:.4f}"
        wrong = "n/a" if s.wrong is None else f"{int(s.wrong.sum())}/{len(s.pred)}"
        lines.append(f"| {s.index} | {s.category_name} | {iou} | {wrong} | {s.tree_note()} |")
    return "\n".join(lines), {}


def _title(session: SegSession, samples: list[SegSample]) -> str:
    return (f"{run_label(session)}: true vs predicted parts and the "
            "tree's "
            f"clusters, {session.split} shapes of {samples[0].pos.shape[0]} points")


def _caption(samples: list[SegSample]) -> str:
    note = ("" if all(s.tree_from_model for s in samples) else
            " This model attends densely and has no tree: the cluster panels show the tree "
            "ops.build_tree builds on the points (the one a Sequoia model of the same config uses).")
    return ("Predicted parts use the logits restricted to the shape's category; wrong points are black "
            "and drawn larger. Tree panels: each point coloured by its ancestor at that level (level 1: the "
            "smallest groups)." + note)
