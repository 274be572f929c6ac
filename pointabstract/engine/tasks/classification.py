"""The classification task: ModelNet layouts (the synthetic set included) or a folder of the
user's own shapes (``data.dataset=folder``, as many classes as class folders), cross-entropy,
accuracy metrics, optional test-time votes, a confusion matrix in the report."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from ... import _validate as V
from ..metrics import ConfusionMatrix
from ..plots import plot_confusion
from .base import (
    check_dataset,
    check_same_labels,
    check_settings_type,
    dataset_points,
    lengths_arg,
    missing_dataset,
)

__all__ = ["ClassificationSettings", "ClassificationTask"]

AUGMENTATIONS = ("none", "scale_translate", "rotate_up")


@dataclass
class ClassificationSettings:
    augment: str = "scale_translate"  # none | scale_translate | rotate_up (+ scale/translate)
    label_smoothing: float = 0.0  # cross-entropy label smoothing
    votes: int = 1  # evaluation: average the softmax over this many augmented copies


class ClassificationTask:
    """Shape classification on ModelNet40 / ModelNet10 layouts (the synthetic set included) or a
    folder of class folders (``data.dataset=folder``); the model gets one output per class.

    Args:
        data: the run's ``data.*`` keys (dataset, root, points, normals).
        seed: seeds the training sampling and augmentation.
        settings: the ``task.*`` keys (None: the defaults).
    """

    name = "classification"
    settings = ClassificationSettings
    metric = "overall_accuracy"
    mode = "max"
    datasets = ("modelnet40", "modelnet10", "folder")
    eval_options = ("votes",)
    figures = ("neighbourhoods", "viewer")
    split_file = None  # a run's recorded split (split.json) to reuse: set by the trainer / restore

    def __init__(self, data, *, seed: int = 0, settings: ClassificationSettings | None = None):
        s = check_settings_type(type(self), data, settings)
        V.check_choice("task.augment", s.augment, AUGMENTATIONS)
        V.check_int("task.votes", s.votes, low=1)
        V.check_float("task.label_smoothing", s.label_smoothing, low=0.0, high=1.0, high_open=True)
        self.data, self.seed, self.s = data, seed, s
        self.class_names: list[str] = []

    # --- data -----------------------------------------------------------------------------

    def train_transform(self):
        from ...data import Compose, RandomRotate, RandomScale, RandomTranslate

        steps = {"none": [], "scale_translate": [RandomScale(2 / 3, 3 / 2), RandomTranslate(0.2)],
                 "rotate_up": [RandomRotate("y"), RandomScale(2 / 3, 3 / 2), RandomTranslate(0.2)]}
        chosen = steps[self.s.augment]
        return Compose(chosen) if chosen else None

    def dataset(self, split: str, *, train: bool):
        """The dataset of ``split``; training sets sample points at random and augment."""
        from ...data import LayoutNotFoundError, ModelNet10, ModelNet40
        from ...data.datasets.folder import ShapeFolder

        d = self.data
        check_dataset(self.name, self.datasets, d.dataset)
        classes = {"modelnet40": ModelNet40, "modelnet10": ModelNet10, "folder": ShapeFolder}
        folder = d.dataset == "folder"
        extra = {"test_fraction": d.test_fraction, "split_file": self.split_file} if folder else {}
        try:
            ds = classes[d.dataset](d.root, split, num_points=dataset_points(d),
                                    sampling=d.sampling if train else "first",
                                    transform=self.train_transform() if train else None,
                                    seed=self.seed, use_normals=d.use_normals, **extra)
        except LayoutNotFoundError as err:
            raise missing_dataset(err, d.root) from None
        self.class_names = list(ds.classes)
        return ds

    def model_args(self) -> dict:
        """Model config fields fixed by the data: class count and extra input channels."""
        return {"num_classes": len(self.class_names), "in_channels": 3 if self.data.use_normals else 0}

    # --- steps ----------------------------------------------------------------------------

    def forward(self, model, batch: dict, device) -> torch.Tensor:
        """Logits (B, classes) of one collated batch."""
        pos = batch["pos"].to(device, non_blocking=True)
        features = batch["normal"].to(device, non_blocking=True) if self.data.use_normals else None
        return model(pos, features=features, **lengths_arg(batch, device))["logits"]

    def step(self, model, batch: dict, device) -> tuple[torch.Tensor, dict]:
        logits = self.forward(model, batch, device)
        labels = batch["label"].to(logits.device)
        loss = F.cross_entropy(logits.float(), labels, label_smoothing=self.s.label_smoothing)
        accuracy = (logits.detach().argmax(-1) == labels).float().mean().item()
        return loss, {"accuracy": accuracy}

    @torch.no_grad()
    def evaluate(self, model, loader, device, *, autocast) -> dict:
        """Accuracy metrics over ``loader``; with ``task.votes > 1`` the softmax is averaged over
        that many copies of each shape under the training augmentation (epochs 0..votes-1)."""
        model.eval()
        matrix = ConfusionMatrix(len(self.class_names))
        dataset, votes = loader.dataset, self.s.votes
        saved = dataset.transform
        passes = []
        for v in range(votes):
            if votes > 1:
                dataset.transform = self.train_transform()
                dataset.set_epoch(v)
            probs, labels = [], []
            for batch in loader:
                with autocast():
                    probs.append(self.forward(model, batch, device).float().softmax(-1).cpu())
                labels.append(batch["label"])
            passes.append(torch.cat(probs))
        dataset.transform = saved
        matrix.update(torch.stack(passes).mean(0), torch.cat(labels))
        matrix.all_reduce()
        model.train()
        return {**matrix.summary(self.class_names), "votes": votes}

    # --- records --------------------------------------------------------------------------

    def state(self) -> dict:
        return {"class_names": list(self.class_names)}

    def check_restore(self, state: dict, where: str) -> None:
        saved = list(state.get("class_names", self.class_names))
        check_same_labels(where, "classes", saved, self.class_names, f"the data at {self.data.root} has")

    @staticmethod
    def summary(metrics: dict) -> str:
        return (f"test overall accuracy {metrics['overall_accuracy']:.4f}, mean class accuracy "
                f"{metrics['mean_class_accuracy']:.4f}")

    def curves(self) -> dict[str, list[str]]:
        return {"accuracy": ["train_accuracy", "test_overall_accuracy", "test_mean_class_accuracy"]}

    def report(self, metrics: dict, out: Path) -> list[str]:
        title = f"{metrics.get('model', '')}: overall accuracy {metrics['overall_accuracy']:.3f}"
        plot_confusion(metrics["confusion"], metrics["class_names"], out / "confusion.png", title=title)
        rows = [f"| {name} | {'n/a' if acc is None else f'{acc:.3f}'} |"
                for name, acc in metrics["per_class_accuracy"].items()]
        return [f"- {metrics['samples']} test shapes, {metrics.get('votes', 1)} vote(s)",
                f"- **overall accuracy {metrics['overall_accuracy']:.4f}**, "
                f"mean class accuracy {metrics['mean_class_accuracy']:.4f}", "",
                "![confusion matrix](confusion.png)", "", "| class | accuracy |", "|---|---:|", *rows]
