"""Datasets in their published layouts, transforms, collation, and the built-in synthetic set."""

from .base import SAMPLE_KEYS, PointDataset, sample_rng
from .categories import MODELNET10, MODELNET40, SHAPENET_PART, PartCategory, part_range
from .surface import sample_surface

__all__ = [
    "MODELNET10",
    "MODELNET40",
    "SAMPLE_KEYS",
    "SHAPENET_PART",
    "PartCategory",
    "PointDataset",
    "part_range",
    "sample_rng",
    "sample_surface",
]
