"""The reconstruction task: point-cloud autoencoders trained with the Chamfer distance.

Data: ModelNet40 / ModelNet10 layouts (the synthetic sets included), ShapeNetPart (any
layout; part labels give the capsule part purity), ShapeNetCore (PLY or ShapeNetPart
layouts) and a folder of the user's own shapes (``data.dataset=folder``); every cloud is
centred and scaled into the unit sphere.

Loss and ``chamfer`` metric: the 3D-PointCapsNet / pytorch3d Chamfer distance (units: squared
unit-sphere radii; reports show it x 1e-3); ``fscore``: the F-score at ``task.fscore_threshold``
(unit-sphere radii); ``purity`` (part-labelled data): the capsule part purity. Their definitions
and code: ``engine/metrics/reconstruction.py`` and ``engine/metrics/purity.py``.

BatchNorm statistics ("precise BN", Wu & Johnson 2021, *Rethinking "Batch" in BatchNorm*):
the running averages BatchNorm keeps during training (momentum 0.1) mix statistics of many
past weights, and the autoencoder's decoder changes fast enough that they lag far behind
(measured on ``capsule_ae_demo_ca``: test Chamfer 0.17 with the running averages, 0.022 with
statistics recomputed at the final weights, train loss 0.027). So when this task has opened
its training split (the trainer does; ``restore`` / ``eval`` do not), :meth:`evaluate` first
recomputes every BatchNorm layer's statistics at the current weights: ``task.bn_batches``
training batches of ``data.batch_size`` shapes, chosen by a generator seeded with ``seed``
(the same shapes every evaluation of a run, their per-epoch sampling as in training), the
model in evaluation mode (fixed decoder grid) except its BatchNorm layers, no gradients, the
equal-weight average of the batches' statistics (``momentum=None``). Only BatchNorm running
buffers change, never a weight, and the global RNG is left as it was. Under DDP every process
runs the same batches, so all hold identical statistics. The trainer saves the model after
evaluating, so ``last.pt`` / ``best.pt`` hold the recalibrated statistics and ``eval`` of them
reproduces the trainer's number.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from ... import _validate as V
from ...data import NUM_PARTS, SHAPENET_PART
from ...ops import chamfer_distance
from ..metrics import (
    PurityMeter,
    ReconstructionMeter,
    capsule_purity,
    capsule_purity_naive,
    reconstruction_scores,
)
from ..metrics.retrieval import TEMPLATE_WARNING, depends_on_input
from ..plots import plot_reconstructions
from ..precise_bn import recalibrate_batchnorm
from .base import check_dataset, check_settings_type, lengths_arg, missing_dataset
from .reconstruction_pool import RetrievalPool, retrieval_lines

# the metric functions live in engine/metrics/; they are re-exported here, where the viewer,
# the benchmarks and their users first imported them
__all__ = ["ReconstructionSettings", "ReconstructionTask", "capsule_purity", "capsule_purity_naive",
           "reconstruction_scores"]

AUGMENTATIONS = ("none", "rotate_up")


@dataclass
class ReconstructionSettings:
    augment: str = "none"  # training augmentation after normalising: none | rotate_up (about y)
    fscore_threshold: float = 0.05  # F-score distance, unit-sphere radii (not squared)
    undersized: str = "repeat"  # ShapeNet shapes with fewer points than data.num_points: repeat | error
    examples: int = 3  # best and worst shapes drawn in the report
    bn_batches: int = 20  # training batches recomputing BatchNorm statistics before each evaluation
    #                       in training (precise BN, see the module docstring); 0: running averages
    retrieval_pool: int = 64  # fixed test shapes scored against each other's inputs (retrieval,
    #                           specificity, diversity; engine/metrics/retrieval.py); 0: skip


class ReconstructionTask:
    """Autoencoding point clouds; see the module docstring for data, loss and metrics.

    Args:
        data: the run's ``data.*`` keys (dataset, root, points, batch size of precise BN).
        seed: seeds the training sampling, augmentation and the precise-BN batches.
        settings: the ``task.*`` keys (None: the defaults).
    """

    name = "reconstruction"
    settings = ReconstructionSettings
    metric = "chamfer"
    mode = "min"
    datasets = ("shapenet_part", "modelnet40", "modelnet10", "shapenet_core", "folder")
    eval_options = ()
    figures = ("capsules", "viewer")
    split_file = None  # a run's recorded split (split.json) to reuse: set by the trainer / restore

    def __init__(self, data, *, seed: int = 0, settings: ReconstructionSettings | None = None):
        s = check_settings_type(type(self), data, settings)
        V.check_choice("task.augment", s.augment, AUGMENTATIONS)
        V.check_positive("task.fscore_threshold", s.fscore_threshold)
        V.check_choice("task.undersized", s.undersized, ("repeat", "error"))
        V.check_int("task.examples", s.examples, low=0)
        V.check_int("task.bn_batches", s.bn_batches, low=0)
        V.check_int("task.retrieval_pool", s.retrieval_pool, low=0)
        if s.retrieval_pool == 1:
            raise ValueError("task.retrieval_pool must be 0 (off) or at least 2 shapes, got 1")
        self.data, self.seed, self.s = data, seed, s
        self.category_names: list[str] = []
        self.has_parts = False
        self._examples: list[dict] = []
        self._train_set = None  # the training split, once opened with train=True (precise BN)
        self._pool = None  # the RetrievalPool of the test split, built at the first evaluation

    # --- data -----------------------------------------------------------------------------

    def transform(self, train: bool):
        from ...data import Compose, NormalizeUnitSphere, RandomRotate

        steps = [NormalizeUnitSphere()]
        if train and self.s.augment == "rotate_up":
            steps.append(RandomRotate("y"))
        if train:  # last, so the draws above are unchanged; per-sample decoder noise (DDP = 1 process)
            from ...models.capsule_autoencoder import DecoderNoiseSeed

            steps.append(DecoderNoiseSeed())
        return Compose(steps)

    def dataset(self, split: str, *, train: bool):
        """The dataset of ``split``, normalised to the unit sphere (augmented when ``train``)."""
        from ...data import LayoutNotFoundError, ModelNet10, ModelNet40, ShapeNetCore, ShapeNetPart
        from ...data.datasets.folder import ShapeFolder

        d = self.data
        check_dataset(self.name, self.datasets, d.dataset)
        common = {"num_points": d.num_points, "transform": self.transform(train), "seed": self.seed}
        try:
            if d.dataset.startswith("modelnet"):
                cls = ModelNet40 if d.dataset == "modelnet40" else ModelNet10
                ds = cls(d.root, split, sampling=d.sampling if train else "first", **common)
                self.category_names = list(ds.classes)
            elif d.dataset == "folder":
                ds = ShapeFolder(d.root, split, sampling=d.sampling if train else "first",
                                 test_fraction=d.test_fraction, split_file=self.split_file, **common)
                self.category_names = list(ds.classes)
            else:  # ShapeNet layouts store points in a fixed order: always draw a random subset
                cls = ShapeNetPart if d.dataset == "shapenet_part" else ShapeNetCore
                ds = cls(d.root, split, sampling="random", undersized=self.s.undersized, **common)
                self.category_names = (list(ds.category_names) if cls is ShapeNetCore
                                       else [c.name for c in SHAPENET_PART])
        except (LayoutNotFoundError, ValueError) as err:
            # ShapeNetCore re-raises a missing ShapeNetPart layout as a plain ValueError
            if not any(isinstance(e, LayoutNotFoundError) for e in (err, err.__context__)):
                raise
            raise missing_dataset(err, d.root) from None
        self.has_parts = d.dataset == "shapenet_part"
        if train and split == "train":
            self._train_set = ds
        return ds

    def model_args(self) -> dict:
        """Nothing in an autoencoder's config depends on the data."""
        return {}

    # --- steps ----------------------------------------------------------------------------

    def step(self, model, batch: dict, device) -> tuple[torch.Tensor, dict]:
        pos = batch["pos"].to(device, non_blocking=True)
        seeds = batch.get("noise_seed")
        ragged = lengths_arg(batch, device)  # padded clouds: lengths to the model and the loss
        points = model(pos, noise_seed=None if seeds is None else seeds.to(device), **ragged)["points"]
        return chamfer_distance(points.float(), pos.float(), y_lengths=ragged.get("lengths")), {}

    @torch.no_grad()
    def evaluate(self, model, loader, device, *, autocast) -> dict:
        """Chamfer distance, F-score and (part-labelled data) capsule purity over ``loader``;
        sums are reduced over processes, the drawn examples come from this process's shards.
        Recomputes the BatchNorm statistics first when the training split is open (module doc)."""
        if self._train_set is not None and self.s.bn_batches > 0:
            recalibrate_batchnorm(model, self._train_set, batches=self.s.bn_batches,
                                  batch_size=self.data.batch_size, seed=self.seed, device=device,
                                  autocast=autocast)
        model.eval()
        scores = ReconstructionMeter(self.category_names, threshold=self.s.fscore_threshold)
        purity = PurityMeter() if self.has_parts else None
        shapes, seen = [], 0  # only the best and worst task.examples shapes are kept
        for batch in loader:
            if "lengths" in batch:  # the scores' KNN and means would count the padding
                raise ValueError("reconstruction evaluation takes clouds of one size (the batch has "
                                 "lengths): set data.num_points to a number")
            pos = batch["pos"].to(device)
            with autocast():
                out = model(pos)
            points = out["points"].float()
            cd, fs = reconstruction_scores(points, pos.float(), threshold=self.s.fscore_threshold)
            scores.update(cd, fs, batch["category"] if "category" in batch else batch["label"])
            caps = out.get("capsule_index")  # None: a model without capsules (no purity)
            if purity is not None and caps is not None:
                purity.update(*capsule_purity(points, pos.float(), batch["part"].to(device), caps,
                                              num_parts=NUM_PARTS))
            index = torch.zeros(points.shape[1], dtype=torch.int64) if caps is None else caps.cpu()
            shapes += [{"cd": float(c), "input": p.cpu().numpy(), "output": q.cpu().numpy(), "index": index}
                       for c, p, q in zip(cd, pos, points)]
            seen += len(cd)
            shapes.sort(key=lambda e: e["cd"])
            if len(shapes) > 2 * self.s.examples:
                shapes = shapes[:self.s.examples] + shapes[len(shapes) - self.s.examples:]
        scores.all_reduce()
        n = min(self.s.examples, seen // 2)
        self._examples = [dict(e, kind="best") for e in shapes[:n]] + \
                         [dict(e, kind="worst") for e in shapes[::-1][:n]]
        out = scores.summary()
        if self.s.retrieval_pool:  # every process scores the same pool: no reduction needed
            if self._pool is None:
                self._pool = RetrievalPool(loader.dataset, self.s.retrieval_pool,
                                           batch_size=self.data.eval_batch_size)
            out.update(self._pool.score(model, device, autocast=autocast))
        model.train()
        if purity is not None and purity.table is not None:  # a capsule model on part-labelled data
            purity.all_reduce()
            out.update(purity.summary())
        return out

    # --- records --------------------------------------------------------------------------

    def state(self) -> dict:
        return {"category_names": list(self.category_names)}

    def check_restore(self, state: dict, where: str) -> None:
        """Any point clouds can be reconstructed: only the saved state's form is checked."""
        if not isinstance(state.get("category_names", []), list):
            raise ValueError(f"{where}: reconstruction state must hold a list 'category_names'")

    @staticmethod
    def summary(metrics: dict) -> str:
        text = (f"test Chamfer distance {metrics['chamfer'] * 1e3:.3f} x 1e-3 (squared L2), "
                f"F-score@{metrics['fscore_threshold']:g} {metrics['fscore']:.3f}")
        if "retrieval" in metrics:
            text += (f" (sampling floor {metrics['sampling_floor'] * 1e3:.3f}), retrieval "
                     f"{metrics['retrieval']:.3f} of {metrics['retrieval_pool']} (chance "
                     f"{metrics['retrieval_chance']:.3f}), specificity {metrics['specificity']:.2f}, "
                     f"diversity {metrics['diversity']:.2f}")
        if "purity" in metrics:
            text += f", capsule part purity {metrics['purity']:.3f}"
        if "retrieval" in metrics and not depends_on_input(metrics):
            text += f"; WARNING: {TEMPLATE_WARNING}"
        return text

    def curves(self) -> dict[str, list[str]]:
        return {"Chamfer distance (squared L2)": ["train_loss", "test_chamfer"], "F-score": ["test_fscore"]}

    def report(self, metrics: dict, out: Path) -> list[str]:
        lines = [f"- {metrics['samples']} test shapes, normalised to the unit sphere",
                 f"- **Chamfer distance {metrics['chamfer'] * 1e3:.3f} x 1e-3** (squared Euclidean "
                 "distances, mean per direction, directions summed; pytorch3d / 3D-PointCapsNet convention)",
                 f"- F-score at distance {metrics['fscore_threshold']:g} (unit-sphere radii): "
                 f"{metrics['fscore']:.3f}"]
        lines += retrieval_lines(metrics)
        if "purity" in metrics:
            lines.append(f"- capsule part purity {metrics['purity']:.3f} (decoded points take the part of "
                         "their nearest input point)")
        if self._examples:
            plot_reconstructions(self._examples, Path(out) / "reconstructions.png")
            lines += ["", "Best and worst reconstructions (input left, output right, coloured by capsule):",
                      "", "![reconstructions](reconstructions.png)"]
        rows = [f"| {name} | {'n/a' if v is None else f'{v * 1e3:.3f}'} |"
                for name, v in metrics["per_category_chamfer"].items() if v is not None]
        return [*lines, "", "| category | Chamfer x 1e-3 |", "|---|---:|", *rows]

