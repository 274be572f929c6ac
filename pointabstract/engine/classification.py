"""The classification task: datasets, augmentation, loss, evaluation (with optional votes)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .config import RunConfig
from .metrics import ConfusionMatrix

__all__ = ["ClassificationTask", "MissingDatasetError"]

AUGMENTATIONS = ("none", "scale_translate", "rotate_up")


class MissingDatasetError(FileNotFoundError):
    """The configured dataset root holds no layout the loader knows."""


class ClassificationTask:
    """Shape classification on ModelNet40 / ModelNet10 layouts (the synthetic set included).

    Args:
        cfg: the run configuration (``data.*`` picks dataset, root, points, augmentation).
    """

    name = "classification"
    metric = "overall_accuracy"  # what "best" means

    def __init__(self, cfg: RunConfig):
        if cfg.data.augment not in AUGMENTATIONS:
            raise ValueError(f"data.augment must be one of {list(AUGMENTATIONS)}, got {cfg.data.augment!r}")
        self.cfg = cfg
        self.class_names: list[str] = []

    # --- data -----------------------------------------------------------------------------

    def train_transform(self):
        from ..data import Compose, RandomRotate, RandomScale, RandomTranslate

        steps = {"none": [], "scale_translate": [RandomScale(2 / 3, 3 / 2), RandomTranslate(0.2)],
                 "rotate_up": [RandomRotate("y"), RandomScale(2 / 3, 3 / 2), RandomTranslate(0.2)]}
        chosen = steps[self.cfg.data.augment]
        return Compose(chosen) if chosen else None

    def dataset(self, split: str, *, train: bool):
        """The dataset of ``split``; training sets sample points at random and augment."""
        from ..data import LayoutNotFoundError, ModelNet10, ModelNet40

        d = self.cfg.data
        classes = {"modelnet40": ModelNet40, "modelnet10": ModelNet10}
        if d.dataset not in classes:
            raise ValueError(f"data.dataset must be one of {sorted(classes)}, got {d.dataset!r}")
        try:
            ds = classes[d.dataset](d.root, split, num_points=d.num_points,
                                    sampling=d.sampling if train else "first",
                                    transform=self.train_transform() if train else None,
                                    seed=self.cfg.seed, use_normals=d.use_normals)
        except LayoutNotFoundError as err:
            raise MissingDatasetError(
                f"{err}\nFor the built-in synthetic data run: pointabstract data synth --out {d.root}"
            ) from None
        self.class_names = list(ds.classes)
        return ds

    def model_args(self) -> dict:
        """Model config fields fixed by the data: class count and extra input channels."""
        return {"num_classes": len(self.class_names), "in_channels": 3 if self.cfg.data.use_normals else 0}

    # --- steps ----------------------------------------------------------------------------

    def forward(self, model, batch: dict, device) -> torch.Tensor:
        pos = batch["pos"].to(device, non_blocking=True)
        features = batch["normal"].to(device, non_blocking=True) if self.cfg.data.use_normals else None
        return model(pos, features=features)["logits"]

    def loss(self, logits: torch.Tensor, batch: dict) -> torch.Tensor:
        labels = batch["label"].to(logits.device)
        return F.cross_entropy(logits.float(), labels, label_smoothing=self.cfg.optim.label_smoothing)

    @torch.no_grad()
    def evaluate(self, model, loader, device, *, votes: int = 1, autocast=None) -> dict:
        """Accuracy metrics over ``loader``; with ``votes > 1`` the softmax is averaged over
        that many copies of each shape under the training augmentation (epochs 0..votes-1)."""
        model.eval()
        matrix = ConfusionMatrix(len(self.class_names))
        dataset = loader.dataset
        saved = dataset.transform
        passes = []
        for v in range(max(1, votes)):
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
        return matrix.summary(self.class_names)
