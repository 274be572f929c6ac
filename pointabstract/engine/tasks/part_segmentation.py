"""The part-segmentation task: ShapeNetPart (all three layouts, the synthetic set's HDF5 one
included), scale + shift augmentation, and the standard mIoU protocol.

Protocol (PointNet / PointNet++ / every ShapeNetPart paper): the logits of each shape are
restricted to the parts of its category before the argmax; a shape's IoU is the mean over
its category's parts of ``|pred = p and true = p| / |pred = p or true = p|``, a part absent
from both prediction and truth counting as 1; **instance mIoU** averages the shapes,
**class mIoU** averages the per-category means (categories without test shapes left out).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from ... import _validate as V
from ...data import NUM_PARTS, SHAPENET_PART
from .base import missing_dataset

__all__ = ["PartIoU", "PartSegmentationSettings", "PartSegmentationTask", "check_part_labels",
           "restrict_to_category", "shape_ious", "shape_ious_naive"]

# (16, 50) True where a part belongs to a category
PART_MASK = torch.zeros(len(SHAPENET_PART), NUM_PARTS, dtype=torch.bool)
for _i, _c in enumerate(SHAPENET_PART):
    PART_MASK[_i, list(_c.parts)] = True


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
    if len(o.scale) != 2 or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in o.scale):
        raise ValueError(f"task.scale must be a list of 2 numbers [low, high], got {list(o.scale)}")
    if not 0 < o.scale[0] <= o.scale[1]:
        raise ValueError(f"task.scale must satisfy 0 < low <= high, got {list(o.scale)}")
    unknown = [c for c in o.categories if c not in names]
    if unknown:
        raise ValueError(f"task.categories must name ShapeNetPart categories ({names}), "
                         f"got unknown {unknown}")
    if not o.shift >= 0:
        raise ValueError(f"task.shift must be >= 0, got {o.shift}")
    if o.votes < 1:
        raise ValueError(f"task.votes must be >= 1, got {o.votes}")
    if o.layout not in ("", "normal", "v0", "hdf5"):
        raise ValueError(f"task.layout must be empty (detect), 'normal', 'v0' or 'hdf5', got {o.layout!r}")
    if o.undersized not in ("repeat", "error"):
        raise ValueError(f"task.undersized must be 'repeat' or 'error', got {o.undersized!r}")


def check_part_labels(part: torch.Tensor, category: torch.Tensor) -> None:
    """Raise ValueError when a label (other than padding -1) is not a part of its shape's category.

    part: (B, N) int64 global part ids; category: (B,) int64 category ids.
    """
    count = len(SHAPENET_PART)
    if not isinstance(part, torch.Tensor):
        raise TypeError(f"part must be a torch.Tensor of dtype int64, got {type(part).__name__}")
    if part.dtype != torch.int64:
        raise TypeError(f"part must have dtype int64, got {part.dtype}")
    if part.dim() != 2:
        raise ValueError(f"part must have shape (B, N), got {tuple(part.shape)}")
    if not isinstance(category, torch.Tensor):
        raise TypeError(f"category must be a torch.Tensor of dtype int64, got {type(category).__name__}")
    if category.dtype != torch.int64 or bool(((category < 0) | (category >= count)).any()):
        raise ValueError(f"category must hold int64 ids in [0, {count}), got {category.tolist()}")
    V.check_shape("category", category, (part.shape[0],), "(B,)", floating=False)
    inside = (part >= 0) & (part < NUM_PARTS)
    owned = PART_MASK.to(part.device)[category.unsqueeze(1), part.clamp(0, NUM_PARTS - 1)]  # (B, N)
    ok = (part == -1) | (inside & owned)
    if not bool(ok.all()):
        b, n = (~ok).nonzero()[0].tolist()
        c = SHAPENET_PART[int(category[b])]
        raise ValueError(f"part label {int(part[b, n])} of shape {b} point {n} is not one of "
                         f"{c.name}'s parts {list(c.parts)}")


def restrict_to_category(logits: torch.Tensor, category: torch.Tensor) -> torch.Tensor:
    """logits: (B, N, 50), category: (B,) -> (B, N, 50) with other categories' parts at -inf."""
    batch = V.batch_size(logits, 3, category)
    n = logits.shape[1] if isinstance(logits, torch.Tensor) and logits.dim() == 3 else 0
    V.check_shape("logits", logits, (batch, n, NUM_PARTS), f"(B, N, {NUM_PARTS})")
    V.check_ids("category", category, (batch,), "(B,)", high=len(SHAPENET_PART))
    allowed = PART_MASK.to(logits.device)[category].unsqueeze(1)  # (B, 1, 50)
    return logits.masked_fill(~allowed, float("-inf"))


def shape_ious(pred: torch.Tensor, part: torch.Tensor, category: torch.Tensor) -> torch.Tensor:
    """Per-shape IoU averaged over the category's parts (absent from both = 1).

    Args:
        pred: (B, N) int64 predicted global part ids.
        part: (B, N) int64 true global part ids, -1 at padded points (ignored).
        category: (B,) int64 category ids.

    Returns:
        (B,) float64 IoU of each shape.

    Raises:
        ValueError / TypeError naming the argument: shapes that disagree, ids out of range
        (a predicted id outside ``[0, 50)`` too, also at padded points), other dtypes.
    """
    check_part_labels(part, category)
    V.check_ids("pred", pred, tuple(part.shape), "(B, N)", high=NUM_PARTS)
    batch = part.shape[0]
    valid = part >= 0
    base = torch.arange(batch, device=part.device).unsqueeze(1) * NUM_PARTS

    def count(ids, keep):
        return torch.bincount((base + ids)[keep], minlength=batch * NUM_PARTS).view(batch, NUM_PARTS)

    inter = count(part, valid & (pred == part)).double()
    union = count(part, valid).double() + count(pred, valid).double() - inter
    iou = torch.where(union > 0, inter / union.clamp(min=1), torch.ones_like(union))  # (B, 50)
    mask = PART_MASK.to(part.device)[category].double()
    return (iou * mask).sum(1) / mask.sum(1)


def shape_ious_naive(pred, part, category) -> list[float]:
    """Reference (tests only): the same in plain Python loops."""
    out = []
    for p_row, t_row, c in zip(pred.tolist(), part.tolist(), category.tolist()):
        pairs = [(p, t) for p, t in zip(p_row, t_row) if t >= 0]
        ious = []
        for q in SHAPENET_PART[c].parts:
            inter = sum(p == q and t == q for p, t in pairs)
            union = sum(p == q or t == q for p, t in pairs)
            ious.append(inter / union if union else 1.0)
        out.append(sum(ious) / len(ious))
    return out


class PartIoU:
    """Accumulates per-shape IoUs by category (all reduced across processes)."""

    def __init__(self):
        self.sums = torch.zeros(len(SHAPENET_PART), dtype=torch.float64)
        self.counts = torch.zeros(len(SHAPENET_PART), dtype=torch.float64)

    def update(self, ious: torch.Tensor, category: torch.Tensor) -> None:
        """ious: (B,) per-shape IoUs in [0, 1]; category: (B,) int64 ids in [0, 16)."""
        batch = V.batch_size(ious, 1, category)
        V.check_shape("ious", ious, (batch,), "(B,)")
        V.check_ids("category", category, (batch,), "(B,)", high=len(SHAPENET_PART))
        if len(ious) and not (0 <= float(ious.min()) and float(ious.max()) <= 1):
            raise ValueError(f"ious must lie in [0, 1], got values in [{float(ious.min()):g}, "
                             f"{float(ious.max()):g}]")
        self.sums.index_add_(0, category.cpu(), ious.cpu().double())
        self.counts.index_add_(0, category.cpu(), torch.ones(len(category), dtype=torch.float64))

    def all_reduce(self) -> None:
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            both = torch.stack([self.sums, self.counts])
            torch.distributed.all_reduce(both)
            self.sums, self.counts = both[0].clone(), both[1].clone()

    def summary(self) -> dict:
        """``instance_miou``, ``class_miou``, ``per_category`` {name: IoU or None}, ``shapes``."""
        seen = self.counts > 0
        per = self.sums / self.counts.clamp(min=1)
        total = float(self.counts.sum())
        return {
            "instance_miou": float(self.sums.sum() / total) if total else float("nan"),
            "class_miou": float(per[seen].mean()) if bool(seen.any()) else float("nan"),
            "per_category": {c.name: (float(v) if s else None) for c, v, s in zip(SHAPENET_PART, per, seen)},
            "shapes_per_category": {c.name: int(n) for c, n in zip(SHAPENET_PART, self.counts)},
            "samples": int(total),
        }


class PartSegmentationTask:
    """ShapeNetPart part segmentation (``data.dataset: shapenet_part``); see the module docstring.

    Args:
        cfg: the run configuration; ``cfg.task_config()`` gives its :class:`PartSegmentationSettings`.
    """

    name = "part_segmentation"
    settings = PartSegmentationSettings
    metric = "instance_miou"
    mode = "max"

    def __init__(self, cfg):
        self.cfg = cfg
        self.opts = cfg.task_config()
        check_settings(self.opts)
        self.categories: list[str] = []

    # -- data ------------------------------------------------------------------------------------
    def train_transform(self):
        from ...data import Compose, RandomScale, RandomTranslate

        return Compose([RandomScale(*self.opts.scale, anisotropic=True), RandomTranslate(self.opts.shift)])

    def dataset(self, split: str, *, train: bool):
        """ShapeNetPart ``split``; ``train`` turns on random sampling order and augmentation (test
        sets take a seeded random subset of ``data.num_points`` points per shape)."""
        from ...data import LayoutNotFoundError, ShapeNetPart

        d = self.cfg.data
        if d.dataset != "shapenet_part":
            raise ValueError(f"data.dataset must be 'shapenet_part' for part segmentation, got {d.dataset!r}")
        try:
            ds = ShapeNetPart(d.root, split, categories=list(self.opts.categories) or None,
                              num_points=d.num_points, sampling=d.sampling if train else "random",
                              transform=self.train_transform() if train else None, seed=self.cfg.seed,
                              use_normals=d.use_normals, layout=self.opts.layout or None,
                              undersized=self.opts.undersized)
        except LayoutNotFoundError as err:
            raise missing_dataset(err, d.root) from None
        self.categories = [SHAPENET_PART[i].name for i in ds.category_ids]
        return ds

    def model_args(self) -> dict:
        return {"num_parts": NUM_PARTS, "num_categories": len(SHAPENET_PART),
                "in_channels": 3 if self.cfg.data.use_normals else 0}

    # -- steps -----------------------------------------------------------------------------------
    def _inputs(self, batch: dict, device):
        pos = batch["pos"].to(device, non_blocking=True)
        features = batch["normal"].to(device, non_blocking=True) if self.cfg.data.use_normals else None
        return pos, batch["category"].to(device, non_blocking=True), features

    def step(self, model, batch: dict, device) -> tuple[torch.Tensor, dict]:
        """Cross-entropy over all 50 logits of every real point (padding -1 ignored)."""
        check_part_labels(batch["part"], batch["category"])
        V.check_shape("part", batch["part"], tuple(batch["pos"].shape[:2]), "(B, N) of pos", floating=False)
        pos, category, features = self._inputs(batch, device)
        logits = model(pos, category, features=features)["logits"].float()  # (B, N, 50)
        part = batch["part"].to(logits.device)
        loss = F.cross_entropy(logits.transpose(1, 2), part, ignore_index=-1)
        valid = part >= 0
        accuracy = (logits.argmax(-1) == part)[valid].float().mean()
        return loss, {"accuracy": float(accuracy)}

    def _vote(self, pos: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        lo, hi = self.opts.scale
        scale = torch.rand(pos.shape[0], 1, 3, generator=gen) * (hi - lo) + lo
        shift = (torch.rand(pos.shape[0], 1, 3, generator=gen) * 2 - 1) * self.opts.shift
        return pos * scale.to(pos) + shift.to(pos)

    @torch.no_grad()
    def evaluate(self, model, loader, device, *, autocast=contextlib.nullcontext,
                 votes: int | None = None) -> dict:
        """mIoU over ``loader`` (restricted logits; with votes > 1 the softmax is averaged over
        the shape and ``votes - 1`` scaled + shifted copies, seeded by ``cfg.seed``)."""
        was_training = model.training
        model.eval()
        votes = self.opts.votes if votes is None else votes
        gen = torch.Generator().manual_seed(self.cfg.seed)
        meter = PartIoU()
        for batch in loader:
            pos, category, features = self._inputs(batch, device)
            probs = 0
            for v in range(max(1, votes)):
                with autocast():
                    seen = pos if v == 0 else self._vote(pos, gen)
                    logits = model(seen, category, features=features)["logits"]
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
        if saved and self.categories and saved != self.categories:
            raise ValueError(f"{where} was trained on categories {saved}, "
                             f"the data now holds {self.categories}")

    def summary(self, metrics: dict) -> str:
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
            _plot_categories(rows, Path(out) / "part_iou.png")
            lines += ["", "![per-category IoU](part_iou.png)"]
        return lines

    def curves(self) -> dict[str, list[str]]:
        return {"loss": ["train_loss"],
                "mIoU / accuracy": ["train_accuracy", "test_instance_miou", "test_class_miou"]}


def _plot_categories(rows, path: Path) -> None:
    from ..plots import _pyplot

    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(max(4, 0.6 * len(rows) + 1), 3.5))
    ax.bar([r[0] for r in rows], [r[1] for r in rows], color="tab:blue")
    ax.set_ylim(0, 1)
    ax.set_ylabel("mIoU")
    ax.tick_params(axis="x", rotation=60)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
