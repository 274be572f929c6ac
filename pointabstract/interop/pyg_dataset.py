"""Our datasets as PyTorch Geometric datasets and back, and the one transform adapter.

- :class:`PygView`: any of our datasets (sample dicts) as a dataset of PyG ``Data`` objects,
  which ``torch_geometric.loader.DataLoader`` batches into a ``Batch`` (clouds of any sizes).
- :class:`FromPyg`: any indexable of ``Data`` (a PyG dataset, a list) as one of our datasets
  (sample dicts, our transforms with their per-sample generator, :func:`~pointabstract.data.collate`).
- :func:`adapt_transform`: a PyG transform (``NormalizeScale``, ``SamplePoints``,
  ``FixedPoints``, ``RandomJitter``, ...) becomes one of ours, ``(sample, rng) -> sample``, and
  one of ours becomes a PyG transform, ``(data) -> data``.

Fields map as in :mod:`pointabstract.interop.pyg_data` (``label`` <-> ``y`` or ``part`` <-> ``y``
with ``target="part"``; ``normal`` <-> ``normal`` or ``x``); a sample's ``face`` (F, 3) int
array becomes ``Data.face`` (3, F), so ``SamplePoints`` can sample a mesh. Needs torch_geometric.
"""

from __future__ import annotations

import numpy as np
import torch

from ..data.datasets.base import PointDataset
from ..data.transforms.base import as_generator
from .pyg_data import from_pyg_data, to_pyg_data

__all__ = ["FromPyg", "PygView", "adapt_transform"]


def _to_data(sample: dict, target: str, normal_key: str):
    face = sample.get("face")
    data = to_pyg_data({k: v for k, v in sample.items() if k != "face"}, target=target, normal_key=normal_key)
    if face is not None:
        data.face = torch.as_tensor(np.asarray(face), dtype=torch.int64).t().contiguous()  # (3, F)
    return data


class PygView(torch.utils.data.Dataset):
    """``dataset[i]`` (one of ours) as a PyG ``Data``; ``set_epoch`` reaches the dataset.

    Args:
        dataset: any of our datasets (``__getitem__`` gives sample dicts).
        target, normal_key: as in :func:`~pointabstract.interop.pyg_data.to_pyg_data`.
    """

    def __init__(self, dataset, *, target: str = "label", normal_key: str = "normal"):
        self.dataset, self.target, self.normal_key = dataset, target, normal_key

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, index: int):
        return _to_data(self.dataset[index], self.target, self.normal_key)

    def set_epoch(self, epoch: int) -> None:
        """The epoch whose randomness the wrapped dataset draws (if it has epochs)."""
        if hasattr(self.dataset, "set_epoch"):
            self.dataset.set_epoch(epoch)


class FromPyg(PointDataset):
    """An indexable of PyG ``Data`` (``torch_geometric.datasets.ModelNet``, a list, ...) as our
    dataset: sample dicts (:func:`~pointabstract.interop.pyg_data.from_pyg_data`), ``transform``
    called as every dataset of ours calls it, with the generator of (seed, epoch, index).

    Args:
        data: the ``Data`` objects (``len`` and ``[i]``).
        transform, seed: as :class:`~pointabstract.data.datasets.base.PointDataset`.
        target, normal_key: as in :func:`~pointabstract.interop.pyg_data.from_pyg_data`.
    """

    def __init__(self, data, *, transform=None, seed: int = 0, target: str = "label",
                 normal_key: str = "normal"):
        super().__init__(transform=transform, seed=seed)
        self.data, self.target, self.normal_key = data, target, normal_key

    def __len__(self) -> int:
        return len(self.data)

    def load(self, index: int, rng: np.random.Generator) -> dict:
        return from_pyg_data(self.data[index], target=self.target, normal_key=self.normal_key)


def adapt_transform(transform, *, target: str = "label", normal_key: str = "normal", seed: int = 0):
    """The one adapter between PyG's transforms and ours, in whichever direction applies.

    - A ``torch_geometric.transforms.BaseTransform`` becomes ``(sample, rng) -> sample``: the
      sample goes to a ``Data``, through the transform, and back. PyG's transforms draw from
      torch's global generator; the adapter seeds it from ``rng`` inside ``torch.random.fork_rng``,
      so the result depends only on ``rng`` (as every transform of ours) and torch's global
      state is left as it was.
    - Any other callable ``(sample, rng) -> sample`` (ours: ``Compose``, ``RandomJitter``, ...)
      becomes ``(data) -> data``, drawing from its own numpy generator seeded with ``seed``
      (PyG calls a transform with the data alone).

    Args:
        transform: a PyG transform or one of ours.
        target, normal_key: the field mapping (:mod:`pointabstract.interop.pyg_data`).
        seed: the seed of an adapted transform of ours.
    """
    from torch_geometric.transforms import BaseTransform

    if isinstance(transform, BaseTransform):
        return _PygOnSample(transform, target, normal_key)
    if not callable(transform):
        raise TypeError(f"transform must be a torch_geometric BaseTransform or a callable (sample, rng) -> "
                        f"sample, got {type(transform).__name__}")
    return _OursOnData(transform, target, normal_key, seed)


class _PygOnSample:
    random = True  # draws (through torch's generator, seeded from rng): Compose's protocol

    def __init__(self, transform, target, normal_key):
        self.transform, self.target, self.normal_key = transform, target, normal_key

    def __call__(self, sample: dict, rng=None) -> dict:
        rng = as_generator(rng, required=True, who=repr(self))
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(rng.integers(0, 2**63 - 1)))
            data = self.transform(_to_data(sample, self.target, self.normal_key))
        return from_pyg_data(data, target=self.target, normal_key=self.normal_key)

    def __repr__(self) -> str:
        return f"adapt_transform({self.transform!r})"


class _OursOnData:
    def __init__(self, transform, target, normal_key, seed):
        self.transform, self.target, self.normal_key = transform, target, normal_key
        self.rng = np.random.default_rng(seed)

    def __call__(self, data):
        sample = self.transform(from_pyg_data(data, target=self.target, normal_key=self.normal_key), self.rng)
        return _to_data(sample, self.target, self.normal_key)

    def __repr__(self) -> str:
        return f"adapt_transform({self.transform!r})"
