"""A classification checkpoint as the viewer sees it: the model with its dataset split
(:class:`ViewSession`) and one sample's prediction and per-block features (:class:`SampleView`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import nn

from ... import _validate as V
from ...engine.config import RunConfig
from ...ops import knn
from ..core.loading import checked_item, cloud_inputs, restore_run
from .scenes import default_block

__all__ = ["TASK", "SampleView", "ViewSession", "load_view_session"]

TASK = "classification"


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
        V.check_int_in("block", block, -len(self.blocks), len(self.blocks) - 1, note=" for this model")
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

    @classmethod
    def from_restored(cls, run) -> ViewSession:
        """The session of a restored classification run (:class:`pointabstract.engine.restored.Restored`)."""
        return cls(run.model, run.dataset, list(run.task.class_names), run.config, run.path,
                   split=run.split, device=run.device)

    def _name(self, c: int) -> str:
        return self.class_names[c] if 0 <= c < len(self.class_names) else str(c)


def load_view_session(checkpoint: str | Path, *, data_root: str | Path | None = None, split: str = "test",
                      device: str = "cpu") -> ViewSession:
    """Rebuild the classifier saved in ``checkpoint`` and open its dataset split
    (:func:`~pointabstract.viz.core.loading.restore_run`).

    Raises:
        FileNotFoundError: no such checkpoint, or no dataset at the root.
        ValueError: not a checkpoint, not a classification run, weights that do not fit.
    """
    run = restore_run(checkpoint, shown=[TASK], data_root=data_root, split=split, device=device)
    return ViewSession.from_restored(run)
