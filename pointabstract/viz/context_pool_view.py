"""What a ContextPool learned (the paper's Fig. 3 for point clouds): the points of one block
coloured by their pooling weight and by their support size.

For a model with ``model.context_pool=true``, block ``b``'s ContextPool (the ``b``-th in the
model, one per attention block) is run on the block's output while the model classifies or
segments one sample; its per-point weight ``w`` (softmax over the cloud, shown as
``log2(M w)``, so 0 means "an average point") and size ``s`` in (0, 1) (``sigma = r K s h``)
are mapped to colours.
``pointabstract view CHECKPOINT --context-pool BLOCK --png OUT`` renders both side by side.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from .. import _validate as V
from .core.colors import GREY, ScalarLegend, scalar_colors

__all__ = ["ContextPoolView", "context_pool_colors", "context_pool_png", "context_pool_view", "pools_of",
           "show_context_pool"]


@dataclass
class ContextPoolView:
    """One block's ContextPool on one sample (M points of the block, numpy, CPU).

    Attributes:
        block: which ContextPool (0-based, in model order).
        pos: (M, 3) the block's points.
        weight: (M,) ``M * w`` (normalised weights) or the raw ``a`` (unnormalised); None
            when the pool has no per-point weights (uniform or NL weights).
        size: (M,) ``s`` in (0, 1); None without the learned Gaussian.
        sigma: (M,) the Gaussian's width in xyz units; None without it.
        weight_colors, size_colors: (M, 3) RGB in [0, 1] (grey where the quantity is None).
        weight_legend, size_legend: the colour bars (None where the quantity is None).
    """

    block: int
    pos: np.ndarray
    weight: np.ndarray | None
    size: np.ndarray | None
    sigma: np.ndarray | None
    weight_colors: np.ndarray
    size_colors: np.ndarray
    weight_legend: ScalarLegend | None
    size_legend: ScalarLegend | None


def pools_of(model: torch.nn.Module) -> list:
    """The model's ContextPools in module order (one after every attention block)."""
    from ..nn import ContextPool

    return [m for m in model.modules() if isinstance(m, ContextPool)]


def context_pool_colors(model: torch.nn.Module, run, block: int) -> ContextPoolView:
    """Run ``run()`` (one forward pass of ``model`` on one sample) and colour block ``block``.

    Args:
        model: a model built with ``context_pool=True``.
        run: a callable that runs the model once on a batch of one sample.
        block: index of the ContextPool (negative: from the end).

    Raises:
        ValueError: the model has no ContextPool, or ``block`` is out of range.
    """
    pools = pools_of(model)
    if not pools:
        raise ValueError("this model has no ContextPool (train it with model.context_pool=true)")
    V.check_int_in("block", block, -len(pools), len(pools) - 1, note=" for this model")
    pool, seen = pools[block], {}

    def keep_inputs(module, args, out):  # returns None: the model's output is left as it is
        seen.setdefault("args", args)

    handle = pool.register_forward_hook(keep_inputs)
    try:
        with torch.no_grad():
            run()
            if "args" not in seen:
                raise ValueError(f"ContextPool {block} did not run in the model's forward pass")
            x, pos = seen["args"][:2]
            _, info = pool(x[:1], pos[:1], return_info=True)
    finally:
        handle.remove()
    pos = pos[0].detach().float().cpu().numpy()
    m = pos.shape[0]
    weight, size, sigma = (None if info[key] is None else info[key][0].detach().float().cpu().numpy()
                           for key in ("weight", "size", "sigma"))
    grey = np.tile(np.asarray(GREY, dtype=np.float64), (m, 1))
    weight_colors, weight_legend, size_colors, size_legend = grey, None, grey, None
    if weight is not None:
        if pool.normalize:  # a few points often take most of the weight: a log scale shows the rest
            weight = weight * m
            shown, label = np.log2(np.maximum(weight, 1e-30)), "log2(pooling weight x M), 0 = average"
        else:
            shown, label = weight, "raw pooling weight a"
        weight_colors, weight_legend = scalar_colors(shown, cmap="magma", label=label)
    if size is not None:
        size_colors, size_legend = scalar_colors(size, cmap="viridis",
                                                 label="support size s (sigma = r K s h)")
    return ContextPoolView(block if block >= 0 else len(pools) + block, pos, weight, size, sigma,
                           weight_colors, size_colors, weight_legend, size_legend)


def context_pool_view(checkpoint: str | Path, *, block: int, index: int = 0, split: str = "test",
                      data_root: str | Path | None = None, device: str = "cpu") -> ContextPoolView:
    """:func:`context_pool_colors` for sample ``index`` of a checkpoint's dataset split (any task:
    the sample goes through the task's own step, as in training, without gradients)."""
    from ..data import collate
    from ..engine.restored import restore

    restored = restore(checkpoint, data_root=data_root, split=split, device=device,
                       overrides={"data.workers": 0})
    n = len(restored.dataset)
    V.check_int_in("index", index, 0, n - 1, note=f" (the {split} split has {n} samples)")
    batch = collate([restored.dataset[index]])
    model = restored.model.eval()
    return context_pool_colors(model, lambda: restored.task.step(model, batch, restored.device), block)


def context_pool_png(view: ContextPoolView, path: str | Path, *, width: int = 1280, height: int = 640,
                     backend: str = "auto") -> Path:
    """Two panels, each with its colour bar: the points by pooling weight | by support size."""
    from .core.geometry import point_cloud
    from .core.render import Renderer, save_png

    half = max(16, width // 2)
    with Renderer(half, height, backend=backend) as renderer:
        images = [renderer.render([{"geometry": point_cloud(view.pos, colors), "point_size": 6.0}],
                                  legend=legend)
                  for colors, legend in ((view.weight_colors, view.weight_legend),
                                         (view.size_colors, view.size_legend))]
    return save_png(np.concatenate(images, axis=1), path, backends=renderer.backends_used,
                    fallbacks=renderer.fallbacks)


def show_context_pool(view: ContextPoolView, *, width: int = 1280, height: int = 720) -> None:
    """An Open3D window: the points by pooling weight (left) and by support size (right)."""
    import open3d as o3d

    from .core.geometry import point_cloud

    shift = np.zeros(3)
    shift[0] = 1.3 * float(np.ptp(view.pos[:, 0]) or 1.0)
    clouds = [point_cloud(view.pos, view.weight_colors), point_cloud(view.pos + shift, view.size_colors)]
    o3d.visualization.draw_geometries(clouds, window_name=f"ContextPool {view.block}: weight | size",
                                      width=width, height=height)
