"""The part-segmentation task: ShapeNetPart (all three layouts, the synthetic set's HDF5 one
included), scale + shift augmentation, and the standard mIoU protocol (logits restricted to each
shape's category, instance and class mIoU: ``engine/metrics/part_iou.py`` defines and scores it)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from ... import _validate as V
from ...data import NUM_PARTS, SHAPENET_PART
from ..metrics import PartIoU, check_part_labels, restrict_to_category, shape_ious, shape_ious_naive
from ..plots import plot_part_ious
from .base import (
    check_dataset,
    check_same_labels,
    check_settings_type,
    dataset_points,
    lengths_arg,
    missing_dataset,
)

# the metric functions live in engine/metrics/; they are re-exported here, where the viewer,
# the predictor, the benchmarks and their users first imported them
__all__ = ["PartIoU", "PartSegmentationSettings", "PartSegmentationTask", "check_part_labels",
           "restrict_to_category", "shape_ious", "shape_ious_naive"]


@dataclass
class PartSegmentationSettings:
    categories: tuple[str, ...] = ()  # ShapeNetPart category names to keep (empty: all 16)
    layout: str = ""  # force "normal", "v0" or "hdf5" (empty: detect)
    undersized: str = "repeat"  # shapes with fewer than data.num_points points: repeat | error
    scale: tuple[float, float] = (0.8, 1.25)  # training: per-axis scale drawn in this range
    shift: float = 0.1  # training: per-axis shift drawn in [-shift, shift]
    votes: int = 1  # evaluation: average softmax over this many copies (the extra ones augmented)


def check_settings(o: PartSegmentationSettings) -> None:
    """ValueError naming the ``task.*`` key, the rule and what arrived, for settings that are
    the right type but the wrong shape or range."""
    names = [c.name for c in SHAPENET_PART]
    if len(o.scale) != 2:
        raise ValueError(f"task.scale must be a list of 2 numbers [low, high], got {list(o.scale)}")
    for i, v in enumerate(o.scale):
        V.check_float(f"task.scale[{i}]", v)
    if not 0 < o.scale[0] <= o.scale[1]:
        raise ValueError(f"task.scale must satisfy 0 < low <= high, got {list(o.scale)}")
    unknown = [c for c in o.categories if c not in names]
    if unknown:
        raise ValueError(f"task.categories must name ShapeNetPart categories ({names}), "
                         f"got unknown {unknown}")
    V.check_float("task.shift", o.shift, low=0.0)
    V.check_int("task.votes", o.votes, low=1)
    V.check_choice("task.layout", o.layout, ("", "normal", "v0", "hdf5"), note=" ('': detect)")
    V.check_choice("task.undersized", o.undersized, ("repeat", "error"))


class PartSegmentationTask:
    """ShapeNetPart part segmentation (``data.dataset: shapenet_part``); see the module docstring.

    Args:
        data: the run's ``data.*`` keys (root, points, normals; ``dataset`` must be shapenet_part).
        seed: seeds the training sampling and augmentation, the test subsets and the votes.
        settings: the ``task.*`` keys (None: the defaults).
    """

    name = "part_segmentation"
    settings = PartSegmentationSettings
    metric = "instance_miou"
    mode = "max"
    datasets = ("shapenet_part",)
    eval_options = ("votes",)
    figures = ("segmentation", "viewer")

    def __init__(self, data, *, seed: int = 0, settings: PartSegmentationSettings | None = None):
        self.data, self.seed = data, seed
        self.s = check_settings_type(type(self), data, settings)
        check_settings(self.s)
        self.categories: list[str] = []

    # -- data ------------------------------------------------------------------------------------
    def train_transform(self):
        from ...data import Compose, RandomScale, RandomTranslate

        return Compose([RandomScale(*self.s.scale, anisotropic=True), RandomTranslate(self.s.shift)])

    def dataset(self, split: str, *, train: bool):
        """ShapeNetPart ``split``; ``train`` turns on random sampling order and augmentation (test
        sets take a seeded random subset of ``data.num_points`` points per shape)."""
        from ...data import LayoutNotFoundError, ShapeNetPart

        d = self.data
        check_dataset(self.name, self.datasets, d.dataset)
        try:
            ds = ShapeNetPart(d.root, split, categories=list(self.s.categories) or None,
                              num_points=dataset_points(d), sampling=d.sampling if train else "random",
                              transform=self.train_transform() if train else None, seed=self.seed,
                              use_normals=d.use_normals, layout=self.s.layout or None,
                              undersized=self.s.undersized)
        except LayoutNotFoundError as err:
            raise missing_dataset(err, d.root) from None
        self.categories = [SHAPENET_PART[i].name for i in ds.category_ids]
        return ds

    def model_args(self) -> dict:
        return {"num_parts": NUM_PARTS, "num_categories": len(SHAPENET_PART),
                "in_channels": 3 if self.data.use_normals else 0}

    # -- steps -----------------------------------------------------------------------------------
    def _inputs(self, batch: dict, device):
        pos = batch["pos"].to(device, non_blocking=True)
        features = batch["normal"].to(device, non_blocking=True) if self.data.use_normals else None
        return pos, batch["category"].to(device, non_blocking=True), features

    def step(self, model, batch: dict, device) -> tuple[torch.Tensor, dict]:
        """Cross-entropy over all 50 logits of every real point (padding -1 ignored)."""
        check_part_labels(batch["part"], batch["category"])
        V.check_shape("part", batch["part"], tuple(batch["pos"].shape[:2]), "(B, N) of pos", floating=False)
        pos, category, features = self._inputs(batch, device)
        logits = model(pos, category, features=features, **lengths_arg(batch, device))["logits"].float()
        part = batch["part"].to(logits.device)
        loss = F.cross_entropy(logits.transpose(1, 2), part, ignore_index=-1)
        valid = part >= 0
        accuracy = (logits.argmax(-1) == part)[valid].float().mean()
        return loss, {"accuracy": float(accuracy)}

    def _vote(self, pos: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        lo, hi = self.s.scale
        scale = torch.rand(pos.shape[0], 1, 3, generator=gen) * (hi - lo) + lo
        shift = (torch.rand(pos.shape[0], 1, 3, generator=gen) * 2 - 1) * self.s.shift
        return pos * scale.to(pos) + shift.to(pos)

    @torch.no_grad()
    def evaluate(self, model, loader, device, *, autocast=contextlib.nullcontext,
                 votes: int | None = None) -> dict:
        """mIoU over ``loader`` (restricted logits; with votes > 1 the softmax is averaged over
        the shape and ``votes - 1`` scaled + shifted copies, seeded by ``seed``)."""
        was_training = model.training
        model.eval()
        votes = self.s.votes if votes is None else votes
        gen = torch.Generator().manual_seed(self.seed)
        meter = PartIoU()
        for batch in loader:
            pos, category, features = self._inputs(batch, device)
            probs = 0
            for v in range(max(1, votes)):
                with autocast():
                    seen = pos if v == 0 else self._vote(pos, gen)
                    logits = model(seen, category, features=features, **lengths_arg(batch, device))["logits"]
                probs = probs + restrict_to_category(logits.float(), category).softmax(-1)
            ious = shape_ious(probs.argmax(-1).cpu(), batch["part"], batch["category"])
            meter.update(ious, batch["category"])
        meter.all_reduce()
        model.train(was_training)
        return meter.summary()

    # -- checkpoints and reports -----------------------------------------------------------------
    def state(self) -> dict:
        return {"categories": list(self.categories)}

    def check_restore(self, state: dict, where: str) -> None:
        saved = state.get("categories")
        if saved and self.categories:
            check_same_labels(where, "categories", saved, self.categories, "the data now holds")

    @staticmethod
    def summary(metrics: dict) -> str:
        return (f"test instance mIoU {metrics['instance_miou']:.3f} (class mIoU {metrics['class_miou']:.3f}, "
                f"{metrics['samples']} shapes)")

    def report(self, metrics: dict, out: Path) -> list[str]:
        """Markdown: the two mIoUs and the per-category table; writes ``part_iou.png``."""
        counts = metrics["shapes_per_category"]
        rows = [(name, iou, counts[name]) for name, iou in metrics["per_category"].items() if iou is not None]
        lines = ["## Part segmentation", "",
                 f"Instance mIoU **{metrics['instance_miou']:.4f}**, class mIoU "
                 f"**{metrics['class_miou']:.4f}** over {metrics['samples']} test shapes (logits "
                 "restricted to each shape's category).", "",
                 "| category | shapes | mIoU |", "|---|---:|---:|"]
        lines += [f"| {name} | {count} | {iou:.4f} |" for name, iou, count in rows]
        if rows:
            plot_part_ious(rows, Path(out) / "part_iou.png")
            lines += ["", "![per-category IoU](part_iou.png)"]
        return lines

    def curves(self) -> dict[str, list[str]]:
        return {"loss": ["train_loss"],
                "mIoU / accuracy": ["train_accuracy", "test_instance_miou", "test_class_miou"]}

