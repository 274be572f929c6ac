"""Part-segmentation checkpoints in the viewer: predicted vs true parts and the tree's clusters.

A part segmenter (``task: part_segmentation``, e.g. ``sequoia_seg*`` or ``softmax_seg*``) is
rebuilt by :func:`pointabstract.engine.restore`, as ``eval`` does. For one shape the viewer
shows, side by side and through the same camera:

- **true parts**: each point coloured by its ShapeNetPart part (:func:`~.colors.part_palette`);
- **predicted parts**: the model's logits restricted to the shape's category (the eval
  protocol), argmax; points whose prediction is wrong are drawn larger and in black;
- **tree level l**: each point coloured by its ancestor at level ``l`` of the tree (the Sequoia
  paper's Fig. 5 C/D: low levels cut the shape into many small clusters, high levels into a few
  large ones). Level 1 holds the smallest groups, the top level is the root.

The tree is the one the model attended over (``return_features=True`` returns it). A model
without a tree (``softmax_seg*`` attends densely over all points) gets the tree
:func:`pointabstract.ops.build_tree` builds on the same points with the model's ``branching``
and ``leaf_size`` settings (the Sequoia defaults 4 and 16 when it has none): the tree a Sequoia
model of the same config would use; every title and status line then says "built on the points,
not used by the model".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import nn

from ... import _validate as V
from ...data import SHAPENET_PART
from ...engine.config import RunConfig
from ...ops import build_tree
from ..core.loading import checked_item, cloud_inputs

__all__ = ["SegSample", "SegSession", "load_seg_session", "tree_clusters"]

TASK = "part_segmentation"
DEFAULT_BRANCHING, DEFAULT_LEAF_SIZE = 4, 16  # SequoiaSegConfig's defaults
NOT_MODEL_TREE = "tree built on the points, not used by the model"


def tree_clusters(tree, *, batch: int = 0) -> list[np.ndarray]:
    """Every point's ancestor at each level of a :class:`~pointabstract.ops.tree.PointTree`.

    Args:
        tree: from :func:`~pointabstract.ops.build_tree` (or a model's ``return_features=True``).
        batch: which cloud of the batch.

    Returns:
        ``R + 1`` arrays of shape (N,) int64: entry ``l`` holds, for each point, the index of its
        ancestor among level ``l``'s nodes (level 0: the point itself; level R: 0, the root).
    """
    levels = getattr(tree, "levels", None)
    if not levels:
        raise TypeError(f"tree must be a PointTree (from build_tree), got {type(tree).__name__}")
    V.check_int_in("batch", batch, 0, levels[0].pos.shape[0] - 1)
    node = torch.arange(levels[0].pos.shape[1])
    out = [node.numpy()]
    for level in levels[:-1]:
        node = level.parent[batch].cpu()[node]  # (N,) ancestor one level up
        out.append(node.numpy())
    return out


@dataclass
class SegSample:
    """One shape as the segmentation viewer sees it (batch dimension removed, on the CPU)."""

    index: int  # position in the dataset split
    pos: torch.Tensor  # (N, 3) input points
    category: int  # ShapeNetPart category id
    pred: np.ndarray  # (N,) predicted global part ids (logits restricted to the category)
    clusters: list[np.ndarray]  # R + 1 arrays (N,): each point's ancestor at tree level l
    tree_from_model: bool  # False: built by ops.build_tree here (the model has no tree)
    part: np.ndarray | None = None  # (N,) true global part ids, when the split has them
    extras: dict = field(default_factory=dict)

    @property
    def category_name(self) -> str:
        return SHAPENET_PART[self.category].name

    @property
    def top_level(self) -> int:
        """R, the root's level (levels 1..R can be shown)."""
        return len(self.clusters) - 1

    def clusters_text(self, level: int) -> str:
        """``"16 clusters"`` / ``"1 cluster"`` at ``level``."""
        count = self.cluster_count(level)
        return f"{count} cluster{'s' if count != 1 else ''}"

    def cluster_count(self, level: int) -> int:
        return int(self.clusters[self._level(level)].max()) + 1

    def clusters_at(self, level: int) -> np.ndarray:
        """(N,) each point's ancestor at ``level`` in [1, R]."""
        return self.clusters[self._level(level)]

    def _level(self, level: int) -> int:
        top = self.top_level
        return V.check_int_in("level", level, 1, top, note=f" (1: smallest groups, {top}: the root)")

    @property
    def wrong(self) -> np.ndarray | None:
        """(N,) bool, True where the predicted part differs from the true one (None without truth)."""
        return None if self.part is None else self.pred != self.part

    @property
    def iou(self) -> float | None:
        """The shape's IoU (mean over its category's parts, absent from both = 1), as ``eval`` computes it."""
        if self.part is None:
            return None
        from ...engine.tasks.part_segmentation import shape_ious

        pred, part = torch.as_tensor(self.pred)[None], torch.as_tensor(self.part)[None]
        return float(shape_ious(pred, part, torch.tensor([self.category]))[0])

    @property
    def title(self) -> str:
        if self.part is None:
            return f"#{self.index} {self.category_name}"
        wrong = f"{int(self.wrong.sum())}/{len(self.pred)} points wrong"
        return f"#{self.index} {self.category_name}: IoU {self.iou:.3f}, {wrong}"

    def tree_note(self) -> str:
        return "the model's tree" if self.tree_from_model else NOT_MODEL_TREE


@dataclass
class SegSession:
    """A trained part segmenter with its dataset split, ready to show shapes."""

    model: nn.Module
    dataset: object  # a ShapeNetPart-layout dataset (samples: pos, part, category[, normal])
    config: RunConfig
    checkpoint: Path
    split: str = "test"
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))

    @classmethod
    def from_restored(cls, run) -> SegSession:
        """From :func:`pointabstract.engine.restore`'s result (what ``eval`` sections receive)."""
        _check_task(run.config.task, run.path)
        return cls(run.model, run.dataset, run.config, Path(run.path), split=run.split, device=run.device)

    def __len__(self) -> int:
        return len(self.dataset)

    def first_of_categories(self, count: int) -> list[int]:
        """Indices of the first shape of each category in split order, up to ``count`` categories."""
        V.check_int("count", count, low=1)
        seen: dict[int, int] = {}
        for i in range(len(self.dataset)):
            seen.setdefault(int(self.dataset[i]["category"]), i)
            if len(seen) == count:
                break
        return sorted(seen.values())

    @torch.no_grad()
    def sample(self, index: int) -> SegSample:
        """Run the model on shape ``index`` with ``return_features=True``."""
        from ...engine.tasks.part_segmentation import restrict_to_category

        item = checked_item(self, index, noun="shapes")
        pos, feats = cloud_inputs(item, self.config)
        category = torch.tensor([int(item["category"])], dtype=torch.int64)
        self.model.eval()
        out = self.model(pos[None].to(self.device), category.to(self.device),
                         features=None if feats is None else feats.to(self.device), return_features=True)
        logits = restrict_to_category(out["logits"].float(), category.to(self.device))  # (1, N, 50)
        pred = logits[0].argmax(-1).cpu().numpy()
        tree = out.get("tree") if isinstance(out, dict) else None
        from_model = tree is not None
        if tree is None:
            cfg = getattr(self.model, "cfg", None)
            tree = build_tree(pos[None], branching=getattr(cfg, "branching", DEFAULT_BRANCHING),
                              leaf_size=getattr(cfg, "leaf_size", DEFAULT_LEAF_SIZE))
        part = np.asarray(item["part"], dtype=np.int64) if item.get("part") is not None else None
        return SegSample(int(index), pos, int(category[0]), pred, tree_clusters(tree), from_model, part=part)


def load_seg_session(checkpoint: str | Path, *, data_root: str | Path | None = None, split: str = "test",
                     device: str = "cpu") -> SegSession:
    """Rebuild the part segmenter saved in ``checkpoint`` and open its dataset split.

    Raises:
        FileNotFoundError: no such checkpoint, or no dataset at the root.
        ValueError: not a checkpoint, not a part-segmentation run, weights that do not fit.
    """
    from ...engine.restored import restore

    run = restore(checkpoint, data_root=data_root, split=split, device=device, overrides={"data.workers": 0})
    return SegSession.from_restored(run)


def _check_task(task: str, path) -> None:
    if task != TASK:
        raise ValueError(f"{path}: the segmentation viewer shows '{TASK}' runs; this is a '{task}' run")
