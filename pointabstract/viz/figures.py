"""The multi-panel neighbourhood figure for reports (the paper's Fig. 4 on a trained checkpoint).

One row per test shape, two panels per query point: its K nearest neighbours (red) in the
feature space of one block, then its K nearest neighbours in 3D space. Panels are rendered
offscreen (:mod:`.render`) and composed with matplotlib.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from ..ops import farthest_point_sample
from .loading import SampleView, ViewSession, load_session
from .render import Renderer
from .scenes import default_k, neighbourhood_scene

__all__ = ["neighbourhood_figure", "neighbourhood_section", "pick_queries"]

def pick_queries(pos: torch.Tensor, count: int) -> list[int]:
    """``count`` well-spread query points of a block: farthest point sampling from point 0.

    pos: (M, 3) -> ``count`` indices into the M points.
    """
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= pos.shape[0]:
        raise ValueError(f"queries must be an int in [1, {pos.shape[0]}] or a list of point indices, "
                         f"got {count!r}")
    return farthest_point_sample(pos[None].float(), count)[0].tolist()


def neighbourhood_figure(checkpoint: str | Path | ViewSession, out_png: str | Path, *,
                         data_root: str | Path | None = None, split: str = "test",
                         indices: Sequence[int] = (0, 1, 2), queries: int | Sequence[int] = 3,
                         block: int | None = None, k: int | None = None, panel_size: int = 280,
                         context: bool = True, backend: str = "auto", device: str = "cpu") -> Path:
    """Write the feature-space vs 3D-space KNN figure of a checkpoint to ``out_png``.

    Args:
        checkpoint: trainer checkpoint path, or an already loaded :class:`ViewSession`.
        out_png: the PNG to write (folder created).
        data_root: dataset root (default: the one the checkpoint was trained on).
        split: dataset split the shapes come from.
        indices: samples of the split, one figure row each.
        queries: query points per shape: a count (picked by farthest point sampling on the
            block's points) or explicit indices into the block's M points.
        block: block whose features define the neighbourhoods (default: the second
            centroid-attention block, as in the paper; negative counts from the end).
        k: neighbours per query (default: :func:`~pointabstract.viz.scenes.default_k`, the
            paper's 40 of 128 points in proportion; an explicit ``k > M`` is an error).
        panel_size: pixel width and height of each rendered panel.
        context: draw the input cloud in light grey behind a block with fewer points.
        backend: rendering backend (see :func:`pointabstract.viz.render.resolve_backend`).
        device: torch device of the model.

    Returns:
        The path written.
    """
    session = checkpoint if isinstance(checkpoint, ViewSession) else \
        load_session(checkpoint, data_root=data_root, split=split, device=device)
    if isinstance(indices, (int, np.integer)) or len(indices) == 0:
        raise ValueError(f"indices must be a non-empty list of sample indices, got {indices!r}")
    samples = [session.sample(i) for i in indices]
    chosen = block if block is not None else samples[0].default_block
    rows = [_row_scenes(s, chosen, queries, k, context) for s in samples]
    with Renderer(panel_size, panel_size, backend=backend) as renderer:
        images = [[renderer.render(scene.geometries) for scene in row] for row, _ in rows]
    return _compose(images, samples, [meta for _, meta in rows], chosen, session, Path(out_png))


def neighbourhood_section(checkpoint: str | Path | ViewSession, out_dir: str | Path, *,
                          name: str = "neighbourhoods.png", **kwargs) -> str:
    """Write ``out_dir/name`` with :func:`neighbourhood_figure` and return a report.md section
    (a heading, the image link relative to ``out_dir`` and a caption) to append to the report."""
    path = neighbourhood_figure(checkpoint, Path(out_dir) / name, **kwargs)
    return ("## What the model groups together\n\n"
            f"![feature-space vs 3D-space neighbourhoods]({path.name})\n\n"
            "Each pair of panels: a query point (blue) and its K nearest neighbours (red) in the "
            "feature space of one block (left), and in 3D space (right). Feature-space "
            "neighbourhoods that follow parts of the shape, rather than balls, show what the "
            "block has learned to group (the Centroid Transformers paper, Fig. 4).")


def _row_scenes(sample: SampleView, block: int, queries, k, context: bool):
    pos, feats = sample.block(block)
    m = pos.shape[0]
    kk = default_k(m) if k is None else k
    if isinstance(queries, (int, np.integer)) and not isinstance(queries, bool):
        picked = pick_queries(pos, int(queries))
    else:
        picked = [int(q) for q in queries]
        if not picked:
            raise ValueError("queries must hold at least one point index")
    ctx = sample.pos if context and m < sample.pos.shape[0] else None
    scenes, meta = [], []
    for q in picked:
        for layout in ("feature", "xyz"):
            scenes.append(neighbourhood_scene(pos, feats, q, k=kk, layout=layout, context=ctx))
            meta.append((q, layout, kk, m))
    return scenes, meta


def _compose(images, samples, metas, block, session: ViewSession, out: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    nrows, ncols = len(images), len(images[0])
    size = images[0][0].shape[0] / 100
    fig = Figure(figsize=(ncols * size, nrows * (size + 0.35) + 0.7), dpi=100, facecolor="white")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for r in range(nrows):
        for c in range(ncols):
            ax = axes[r][c]
            ax.imshow(images[r][c])
            ax.set_xticks([])
            ax.set_yticks([])
            q, layout, k, m = metas[r][c]
            space = f"feature space (block {block})" if layout == "feature" else "3D space"
            ax.set_title(f"query {q}: {space}", fontsize=8)
            if c == 0:
                ax.set_ylabel(samples[r].title, fontsize=8)
    k, m = metas[0][0][2], metas[0][0][3]
    fig.suptitle(f"{session.config.model} ({session.checkpoint.name}): K = {k} nearest neighbours (red) of "
                 f"query points (blue) among block {block}'s {m} points", fontsize=9)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    FigureCanvasAgg(fig).print_png(str(out))
    return out
