"""What every dataset shares: the sample dict, per-sample seeding, the transform call.

A sample is a dict of numpy arrays with the keys every dataset, model, task and viewer uses:

=============  ==================  ===========================================
key            shape / type        meaning
=============  ==================  ===========================================
``pos``        (N, 3) float32      point coordinates
``normal``     (N, 3) float32      unit normals (when the layout has them)
``label``      int                 class index (classification sets)
``part``       (N,) int64          global part id per point (segmentation sets)
``category``   int                 ShapeNetPart category index (segmentation sets)
=============  ==================  ===========================================

Randomness: ``sample_rng(seed, epoch, index)`` gives the generator for one sample, so a
sample depends only on (seed, epoch, index) and never on the number of DataLoader workers or
the order in which they ask; call ``set_epoch`` once per epoch.
"""

from __future__ import annotations

import numpy as np
import torch

SAMPLE_KEYS = ("pos", "normal", "label", "part", "category")


class LayoutNotFoundError(FileNotFoundError, ValueError):
    """No layout a loader knows under the given root (the message lists what it looked for)."""


def sample_rng(seed: int, epoch: int, index: int) -> np.random.Generator:
    """The generator for sample ``index`` in ``epoch`` of a dataset seeded with ``seed``."""
    return np.random.default_rng(np.random.SeedSequence([seed, epoch, index]))


class PointDataset(torch.utils.data.Dataset):
    """Base class: subclasses implement ``__len__`` and ``load(index, rng) -> sample``.

    ``load`` returns the validated sample (resampled to the requested number of points with
    ``rng`` where it draws at random); the base class then applies ``transform(sample, rng)``
    with the same generator.

    Args:
        transform: callable ``(sample, rng) -> sample`` (see :mod:`pointabstract.data.transforms`).
        seed: base seed of every per-sample generator.
    """

    def __init__(self, *, transform=None, seed: int = 0):
        self.transform = transform
        self.seed = seed
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        """Select the epoch whose randomness ``__getitem__`` draws (augmentation, resampling)."""
        self.epoch = int(epoch)

    def load(self, index: int, rng: np.random.Generator) -> dict:
        raise NotImplementedError

    def __getitem__(self, index: int) -> dict:
        if not 0 <= index < len(self):
            raise IndexError(f"index {index} out of range for {type(self).__name__} of length {len(self)}")
        rng = sample_rng(self.seed, self.epoch, index)
        sample = self.load(index, rng)
        return self.transform(sample, rng) if self.transform is not None else sample


def check_samples(dataset: PointDataset) -> list[str]:
    """Load every sample of ``dataset`` (without its transform) and return the problems found,
    one message per unreadable sample (each names the file and line or sample): what
    ``pointabstract data info ROOT --check`` reports. Costs one pass over the data: microseconds
    per sample for the layouts held in memory, one file read per sample for the others."""
    problems = []
    for index in range(len(dataset)):
        try:
            dataset.load(index, sample_rng(dataset.seed, 0, index))
        except (ValueError, OSError) as err:
            problems.append(" ".join(str(err).split()))
    return problems


def reads_files(dataset: PointDataset) -> bool:
    """True when ``dataset`` reads a file per sample (text, PLY or mesh layouts) rather than
    holding every sample in memory from construction (HDF5 layouts and caches, which are
    checked as they are read)."""
    inner = getattr(dataset, "_part", None)  # ShapeNetCore over a ShapeNetPart layout
    if isinstance(inner, PointDataset):
        return reads_files(inner)
    return getattr(dataset, "_pos", None) is None
