"""Checkpoint -> model + dataset -> the viewer's session of the run's task.

The model is rebuilt by :func:`pointabstract.engine.restore` (as ``eval`` does): the
flat config saved in the checkpoint, the task's dataset (test split, no augmentation, the
first ``num_points`` points), the task's model arguments, then the saved weights.
:data:`SESSIONS` then wraps the restored run in its task's session: a classification run in a
:class:`ViewSession` (one sample's prediction and per-block features), a reconstruction run in
a :class:`~pointabstract.viz.capsule_view.CapsuleSession` (input, reconstruction, capsules), a
part-segmentation run in a :class:`~pointabstract.viz.segmentation_view.SegSession` (true and
predicted parts, the tree).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import nn

from ..engine.config import RunConfig
from ..ops import knn
from .scenes import default_block

# checked_item and cloud_inputs serve the task sessions (capsule_view, segmentation_view), not users
__all__ = ["SESSIONS", "SampleView", "ViewSession", "load_session"]


@dataclass
class SampleView:
    """One sample as the viewer sees it (batch dimension removed, tensors on the CPU)."""

    index: int  # position in the dataset split
    pos: torch.Tensor  # (N, 3) input points
    pred: int  # predicted class
    probs: torch.Tensor  # (classes,) softmax
    blocks: list[dict]  # per block: "features" (M, C), "pos" (M, 3), "idx" (M, K) | None, ...
    label: int | None = None  # true class, when the dataset has one
    pred_name: str = ""
    label_name: str = ""
    part: np.ndarray | None = None  # (N,) global ShapeNetPart ids, for segmentation sets
    extras: dict = field(default_factory=dict)

    @property
    def default_block(self) -> int:
        """The paper's choice: the second centroid-attention block (else the last block)."""
        return default_block(self.blocks)

    def block(self, block: int) -> tuple[torch.Tensor, torch.Tensor]:
        """pos (M, 3) and features (M, C) of block ``block`` (negative: from the end)."""
        if not -len(self.blocks) <= block < len(self.blocks):
            raise ValueError(f"block must be in [0, {len(self.blocks)}) for this model, got {block}")
        b = self.blocks[block]
        return b["pos"], b["features"]

    def labels_at(self, block: int, labels) -> np.ndarray:
        """Per-input-point labels (N,) carried to a block's M points by nearest input point."""
        labels = np.asarray(labels)
        if labels.shape != (self.pos.shape[0],):
            raise ValueError(f"labels must have shape ({self.pos.shape[0]},), got {labels.shape}")
        pos, _ = self.block(block)
        _, idx = knn(pos[None], self.pos[None], 1)  # (1, M, 1)
        return labels[idx[0, :, 0].numpy()]

    @property
    def title(self) -> str:
        true = f", true {self.label_name}" if self.label is not None else ""
        return f"#{self.index}: predicted {self.pred_name}{true}"


@dataclass
class ViewSession:
    """A trained model with its dataset split, ready to show samples."""

    model: nn.Module
    dataset: object  # a pointabstract.data dataset (samples are dicts of numpy arrays)
    class_names: list[str]
    config: RunConfig
    checkpoint: Path
    split: str = "test"
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))

    def __len__(self) -> int:
        return len(self.dataset)

    @torch.no_grad()
    def sample(self, index: int) -> SampleView:
        """Run the model on sample ``index`` with ``return_features=True``."""
        item = checked_item(self, index)
        pos, feats = cloud_inputs(item, self.config)
        self.model.eval()
        try:
            out = self.model(pos[None].to(self.device), features=None if feats is None else
                             feats.to(self.device), return_features=True)
        except TypeError as err:
            raise ValueError(f"model '{self.config.model}' cannot return per-block features "
                             f"({err}); the viewer has nothing to show") from None
        if not isinstance(out, dict) or not out.get("blocks"):
            raise ValueError(f"model '{self.config.model}' returned no per-block features "
                             "(no 'blocks' with return_features=True); the viewer has nothing to show")
        probs = out["logits"][0].float().softmax(-1).cpu()
        pred = int(probs.argmax())
        blocks = [{key: (v[0].detach().float().cpu() if key in ("features", "pos") else
                         v[0].detach().cpu() if isinstance(v, torch.Tensor) else v)
                   for key, v in b.items()} for b in out["blocks"]]
        label = int(item["label"]) if item.get("label") is not None else None
        part = np.asarray(item["part"]) if item.get("part") is not None else None
        return SampleView(int(index), pos, pred, probs, blocks, label=label, pred_name=self._name(pred),
                          label_name=self._name(label) if label is not None else "", part=part)

    def _name(self, c: int) -> str:
        return self.class_names[c] if 0 <= c < len(self.class_names) else str(c)


def checked_item(session, index: int, *, noun: str = "samples") -> dict:
    """Sample ``index`` of ``session.dataset`` (a dict of numpy arrays), for any task's session
    (``dataset``, ``split``, ``config``); an index outside the split is a ValueError naming the
    split, its root and its size in ``noun``."""
    n = len(session.dataset)
    if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or not 0 <= index < n:
        raise ValueError(f"index {index!r} is out of range: the {session.split} split of "
                         f"{session.config.data.root} has {n} {noun} (0..{n - 1})")
    return session.dataset[int(index)]


def cloud_inputs(item: dict, config: RunConfig) -> tuple[torch.Tensor, torch.Tensor | None]:
    """A dataset sample as model inputs: pos (N, 3) float32, and the normals as features
    (1, N, 3) when the run trained with them (``data.use_normals``), else None."""
    pos = torch.as_tensor(np.asarray(item["pos"]), dtype=torch.float32)
    normal = item.get("normal") if config.data.use_normals else None
    return pos, None if normal is None else torch.as_tensor(np.asarray(normal), dtype=torch.float32)[None]


def _classification_session(run) -> ViewSession:
    return ViewSession(run.model, run.dataset, list(run.task.class_names), run.config, run.path,
                       split=run.split, device=run.device)


def _capsule_session(run):
    from .capsule_view import CapsuleSession

    return CapsuleSession.from_restored(run)


def _segmentation_session(run):
    from .segmentation_view import SegSession

    return SegSession.from_restored(run)


# task -> the viewer's session of its runs, built from the restored run (engine.restored.Restored);
# the viewer state (app.STATES) and the --figure writer (cli.FIGURES) are keyed on the same names
SESSIONS: dict[str, Callable] = {
    "classification": _classification_session,
    "reconstruction": _capsule_session,
    "part_segmentation": _segmentation_session,
}


def load_session(checkpoint: str | Path, *, data_root: str | Path | None = None, split: str = "test",
                 device: str = "cpu", task: str | None = None):
    """Rebuild the model saved in ``checkpoint`` and open its dataset split (as ``eval`` does,
    through :func:`pointabstract.engine.restore`), wrapped in its task's session (:data:`SESSIONS`).

    Args:
        checkpoint: a trainer checkpoint (``last.pt`` / ``best.pt``).
        data_root: dataset root (default: the one it was trained on).
        split: dataset split, ``"test"`` or ``"train"`` (never augmented here).
        device: torch device of the model.
        task: the one task the caller can show (e.g. ``"classification"`` for the neighbourhood
            figure); None: any task of :data:`SESSIONS`.

    Returns:
        A :class:`ViewSession` for classification runs, a ``CapsuleSession`` for reconstruction,
        a ``SegSession`` for part segmentation.

    Raises:
        FileNotFoundError: no such checkpoint, or no dataset at the root.
        ValueError: not a checkpoint, classes or weights that do not fit, unknown split, a task
            the viewer (or the caller) cannot show.
    """
    from ..engine.restored import restore

    run = restore(checkpoint, data_root=data_root, split=split, device=device,
                  overrides={"data.workers": 0})
    shown = list(SESSIONS) if task is None else [task]
    if run.config.task not in shown or run.config.task not in SESSIONS:
        raise ValueError(f"{checkpoint}: this shows {' and '.join(shown)} runs; this is a "
                         f"'{run.config.task}' run")
    return SESSIONS[run.config.task](run)
