"""Checkpoint of a capsule autoencoder -> one shape's input, reconstruction and latent capsules.

A :class:`CapsuleSession` wraps a restored ``reconstruction`` run (see
:func:`load_capsule_session`); :meth:`CapsuleSession.sample` runs the model
on one shape of the split and returns a :class:`CapsuleSample`: the input (N, 3), the decoded
points (N_out, 3), which latent capsule decoded each point (``capsule_index``), and, on
part-labelled data (``data.dataset=shapenet_part``), each capsule's majority part. As in the
``purity`` metric of the reconstruction task (whose ``capsule_purity`` is used here), each
decoded point takes the part label of its nearest input point; a capsule's majority part is
the most frequent label among its points (ties: the lowest part id) and its purity the share
of its points carrying it.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import nn

from ... import _validate as V
from ...data import NUM_PARTS, SHAPENET_PART
from ...engine.config import RunConfig
from ...engine.tasks.reconstruction import capsule_purity, reconstruction_scores
from ...ops import knn
from ..core.loading import checked_item, restore_run

__all__ = ["ROUTING_NAMES", "TASK", "CapsuleSample", "CapsuleSession", "load_capsule_session", "part_name"]

TASK = "reconstruction"

ROUTING_NAMES = {"dynamic": "dynamic routing", "em": "EM routing", "centroid": "centroid attention"}


def part_name(part: int) -> str:
    """``"Airplane wing"`` for a global ShapeNetPart part id in [0, 50)."""
    for category in SHAPENET_PART:
        if part in category.parts:
            return f"{category.name} {category.part_names[category.parts.index(part)]}"
    raise ValueError(f"part must be a ShapeNetPart part id in [0, {NUM_PARTS}), got {part!r}")


@dataclass
class CapsuleSample:
    """One shape as the capsule viewer sees it (batch dimension removed, on the CPU)."""

    index: int  # position in the dataset split (-1: points handed in directly)
    pos: torch.Tensor  # (N, 3) input points
    points: torch.Tensor  # (N_out, 3) decoded points
    capsule_index: np.ndarray  # (N_out,) int64: the latent capsule that decoded each point
    num_capsules: int  # L
    chamfer: float  # this shape's Chamfer distance (squared L2, mean per direction, summed)
    explained_by: np.ndarray  # (N,) int64: capsule of each input point's nearest decoded point
    category_name: str = ""
    part: np.ndarray | None = None  # (N,) global part ids of the input, on part-labelled data
    capsule_parts: np.ndarray | None = None  # (L,) majority part of each capsule's points (-1: none)
    capsule_purity: np.ndarray | None = None  # (L,) share of each capsule's points in its majority part
    purity: float | None = None  # mean of capsule_purity (the eval metric, for this shape)
    extras: dict = field(default_factory=dict)

    def capsule_points(self, capsule: int) -> np.ndarray:
        """Indices into ``points`` of the points capsule ``capsule`` decoded."""
        self.check_capsule(capsule)
        return np.flatnonzero(self.capsule_index == capsule)

    def check_capsule(self, capsule) -> int:
        return V.check_int_in("capsule", capsule, 0, self.num_capsules - 1,
                              note=f" (this model has {self.num_capsules} latent capsules)")

    def part_groups(self) -> dict[int, list[int]]:
        """Majority part -> its capsules (ascending), parts in ascending id; {} without part labels.
        A capsule that decoded no point (part -1) is in no group."""
        if self.capsule_parts is None:
            return {}
        groups: dict[int, list[int]] = {}
        for capsule in np.argsort(self.capsule_parts, kind="stable"):
            if self.capsule_parts[capsule] >= 0:
                groups.setdefault(int(self.capsule_parts[capsule]), []).append(int(capsule))
        return groups

    def capsule_order(self) -> list[int]:
        """The capsules grouped by majority part (parts ascending, capsules ascending within a
        part, then any capsule without points); 0..L-1 without part labels. The viewer's N / B
        keys cycle in this order."""
        grouped = [c for caps in self.part_groups().values() for c in caps]
        return grouped + [c for c in range(self.num_capsules) if c not in grouped]

    def describe_capsule(self, capsule: int) -> str:
        """``"capsule 3: 64 points, 92% Airplane wing"`` (without part labels: the point count)."""
        n = len(self.capsule_points(capsule))
        points = f"{n} point{'' if n == 1 else 's'}"
        if self.capsule_parts is None or self.capsule_parts[capsule] < 0:
            return f"capsule {capsule}: {points}"
        return (f"capsule {capsule}: {points}, {self.capsule_purity[capsule]:.0%} "
                f"{part_name(int(self.capsule_parts[capsule]))}")

    def describe_groups(self) -> str:
        """``"Airplane body: 0 2 5; Airplane wing: 1 3"``; empty without part labels."""
        groups = self.part_groups().items()
        return "; ".join(f"{part_name(p)}: {' '.join(map(str, caps))}" for p, caps in groups)

    @property
    def title(self) -> str:
        name = f" {self.category_name}" if self.category_name else ""
        where = f"#{self.index}" if self.index >= 0 else "shape"
        return f"{where}{name}: CD {self.chamfer * 1e3:.2f} x 1e-3"


@dataclass
class CapsuleSession:
    """A trained capsule autoencoder with its dataset split, ready to show shapes."""

    model: nn.Module
    dataset: object  # a pointabstract.data dataset (samples are dicts of numpy arrays)
    category_names: list[str]
    config: RunConfig
    checkpoint: Path
    split: str = "test"
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))
    fscore_threshold: float = 0.05  # only to call the task's scoring function
    _scores: dict | None = field(default=None, init=False, repr=False)  # pool_scores, once computed

    @classmethod
    def from_restored(cls, run) -> CapsuleSession:
        """The session of a restored reconstruction run (:func:`pointabstract.engine.restore`)."""
        return cls(run.model, run.dataset, list(run.task.category_names), run.config, run.path,
                   split=run.split, device=run.device, fscore_threshold=run.task.s.fscore_threshold)

    def __len__(self) -> int:
        return len(self.dataset)

    @property
    def routing(self) -> str:
        """What routes the primary capsules to the latent ones, in words (``"dynamic routing"``)."""
        routing = getattr(getattr(self.model, "cfg", None), "routing", None)
        return ROUTING_NAMES.get(routing, str(routing or self.config.model))

    def pool_scores(self) -> dict:
        """Does the model reconstruct its input or a template? The reconstruction task's pool scores
        (retrieval, specificity, diversity, capsule spread, sampling floor) over the same fixed
        64 shapes of this split that ``eval`` scores; computed once (a few seconds on a CPU).
        Empty for a split of fewer than 2 shapes (one file shown with ``view --input``)."""
        if self._scores is None and len(self.dataset) < 2:
            self._scores = {}
        if self._scores is None:
            from ...engine.tasks.reconstruction_pool import RetrievalPool

            pool = RetrievalPool(self.dataset, 64, batch_size=32)
            self._scores = pool.score(self.model, self.device, autocast=contextlib.nullcontext)
        return self._scores

    def scores_line(self) -> str:
        """:meth:`pool_scores` in one line, for captions ("" when there are none)."""
        s = self.pool_scores()
        if not s:
            return ""
        spread = (f", capsule spread {s['capsule_spread']:.2f} (k-means {s['kmeans_spread']:.2f})"
                  if "capsule_spread" in s else "")
        return (f"{s['retrieval_pool']} {self.split} shapes: retrieval {s['retrieval']:.2f} (chance "
                f"{s['retrieval_chance']:.2f}), output diversity {s['diversity']:.2f}{spread}; Chamfer floor "
                f"{s['sampling_floor'] * 1e3:.2f} x 1e-3")

    def item(self, index: int) -> dict:
        """The dataset's sample ``index`` (a dict of numpy arrays), index checked."""
        return checked_item(self, index)

    def sample(self, index: int) -> CapsuleSample:
        """Reconstruct sample ``index`` of the split."""
        return self.reconstruct(self.item(index), index=int(index))

    @torch.no_grad()
    def reconstruct(self, item: dict, *, index: int = -1) -> CapsuleSample:
        """Run the model (eval mode) on one shape.

        Args:
            item: ``{"pos": (N, 3), "part"?: (N,) global part ids, "category" | "label"?: int}``,
                e.g. a sample of another session's dataset (to compare models on the same shapes).
            index: where the shape comes from, for titles (-1: not from this split).
        """
        pos = torch.as_tensor(np.asarray(item["pos"]), dtype=torch.float32)
        if pos.dim() != 2 or pos.shape[-1] != 3:
            raise ValueError(f"item['pos'] must have shape (N, 3), got {tuple(pos.shape)}")
        self.model.eval()
        out = self.model(pos[None].to(self.device))
        if not isinstance(out, dict) or "points" not in out or "capsule_index" not in out:
            raise ValueError(f"model '{self.config.model}' returned no 'points' and 'capsule_index': "
                             "the capsule viewer has nothing to show")
        points = out["points"][0].detach().float().cpu()
        caps = out["capsule_index"].detach().cpu().long()
        num_capsules = int(out["capsules"].shape[1]) if "capsules" in out else int(caps.max()) + 1
        cd, _ = reconstruction_scores(points[None], pos[None], threshold=self.fscore_threshold)
        _, nearest = knn(pos[None], points[None], 1)  # (1, N, 1): nearest decoded point of each input point
        sample = CapsuleSample(index, pos, points, caps.numpy(), num_capsules, float(cd[0]),
                               caps[nearest[0, :, 0]].numpy(), category_name=self._category(item))
        if item.get("part") is not None:
            part = np.asarray(item["part"], dtype=np.int64)
            if part.shape != (pos.shape[0],):
                raise ValueError(f"item['part'] must have shape ({pos.shape[0]},), got {part.shape}")
            purity, counts = capsule_purity(points[None], pos[None], torch.as_tensor(part)[None], caps,
                                            num_parts=NUM_PARTS)  # counts: (1, L', parts)
            table = np.zeros((num_capsules, NUM_PARTS), dtype=np.int64)
            table[:counts.shape[1]] = counts[0].numpy()
            size = table.sum(1)
            majority = np.where(size > 0, table.argmax(1), -1)  # -1: a capsule that decoded no point
            sample.part, sample.capsule_parts, sample.purity = part, majority, float(purity[0])
            sample.capsule_purity = np.where(size > 0, table.max(1) / np.maximum(size, 1), np.nan)
        return sample

    def _category(self, item: dict) -> str:
        c = item.get("category", item.get("label"))
        if c is None:
            return ""
        c = int(c)
        return self.category_names[c] if 0 <= c < len(self.category_names) else str(c)


def load_capsule_session(checkpoint: str | Path, *, data_root: str | Path | None = None, split: str = "test",
                         device: str = "cpu") -> CapsuleSession:
    """Rebuild the capsule autoencoder saved in ``checkpoint`` and open its dataset split
    (:func:`~pointabstract.viz.core.loading.restore_run`).

    Raises:
        FileNotFoundError: no such checkpoint, or no dataset at the root.
        ValueError: not a checkpoint, not a reconstruction run, weights that do not fit.
    """
    run = restore_run(checkpoint, shown=[TASK], data_root=data_root, split=split, device=device)
    return CapsuleSession.from_restored(run)
