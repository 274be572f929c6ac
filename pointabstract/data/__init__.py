"""Datasets in their published layouts, transforms, collation, and the built-in synthetic set."""

from .base import SAMPLE_KEYS, LayoutNotFoundError, PointDataset, sample_rng
from .baseline import evaluate_baseline
from .categories import MODELNET10, MODELNET40, SHAPENET_PART, PartCategory, part_range
from .checksums import ARCHIVES, file_md5, verify_md5
from .collate import PART_PAD, collate
from .modelnet import ModelNet10, ModelNet40, detect_layout, point_indices
from .off import prepare_off_cache, read_off, write_off
from .shapenet_core import SHAPENET_CORE13, ShapeNetCore, read_ply_points
from .shapenet_part import ShapeNetPart, detect_part_layout
from .shapes import build_shape
from .surface import sample_surface
from .synthetic import CLASS_NAMES as SYNTHETIC_CLASSES
from .synthetic import generate as generate_synthetic
from .transforms import (
                         Compose,
                         Jitter,
                         NormalizeUnitCube,
                         NormalizeUnitSphere,
                         RandomDropout,
                         RandomRotate,
                         RandomScale,
                         RandomSO3Rotation,
                         RandomTranslate,
                         Resample,
                         Shuffle,
                         Transform,
)

__all__ = [
    "ARCHIVES", "LayoutNotFoundError",
    "MODELNET10", "MODELNET40", "PART_PAD", "SAMPLE_KEYS", "SHAPENET_CORE13", "SHAPENET_PART",
    "SYNTHETIC_CLASSES", "build_shape", "evaluate_baseline", "generate_synthetic",
    "Compose", "Jitter", "ModelNet10", "ModelNet40", "NormalizeUnitCube", "NormalizeUnitSphere",
    "PartCategory", "PointDataset", "RandomDropout", "RandomRotate", "RandomSO3Rotation", "RandomScale",
    "RandomTranslate", "Resample", "ShapeNetCore", "ShapeNetPart", "Shuffle", "Transform", "collate",
    "detect_layout", "detect_part_layout", "file_md5", "part_range", "point_indices",
    "prepare_off_cache", "read_off", "read_ply_points", "sample_rng", "sample_surface", "verify_md5",
    "write_off",
]
