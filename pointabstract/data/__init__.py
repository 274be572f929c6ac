"""Datasets in their published layouts, transforms, collation, and the built-in synthetic set.

Subpackages: :mod:`.datasets` (loaders and file readers), :mod:`.transforms`, :mod:`.synthetic`
(procedural shapes, the generator and its baseline); :mod:`.files` reads a user's own shape
files of any supported format; :mod:`.categories` holds every class
table and the one resolver, :mod:`.collate` batches samples, :mod:`.cli` is ``pointabstract
data``. Code outside this package imports from here.
"""

from .categories import (
    MODELNET10,
    MODELNET40,
    NUM_PARTS,
    SHAPENET_CORE,
    SHAPENET_CORE13,
    SHAPENET_PART,
    PartCategory,
    part_range,
    resolve_categories,
    resolve_category,
)
from .collate import PART_PAD, collate
from .datasets import (
    ARCHIVES,
    MODELNET_LAYOUTS,
    SAMPLE_KEYS,
    LayoutNotFoundError,
    ModelNet10,
    ModelNet40,
    PointDataset,
    ShapeFolder,
    ShapeNetCore,
    ShapeNetPart,
    detect_layout,
    detect_part_layout,
    file_md5,
    point_indices,
    prepare_off_cache,
    read_off,
    read_ply_points,
    sample_rng,
    verify_md5,
    write_off,
)
from .files import SUPPORTED_SUFFIXES, ShapeFile, ShapeFileError, find_shape_files, read_shape, sample_shape
from .synthetic import CLASS_NAMES as SYNTHETIC_CLASSES
from .synthetic import HARD_CLASS_NAMES as SYNTHETIC_HARD_CLASSES
from .synthetic import LEVELS as SYNTHETIC_LEVELS
from .synthetic import Nuisances, build_shape, evaluate_baseline, sample_surface
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
    "ARCHIVES", "MODELNET10", "MODELNET40", "MODELNET_LAYOUTS", "NUM_PARTS", "PART_PAD", "SAMPLE_KEYS",
    "SHAPENET_CORE", "SHAPENET_CORE13", "SHAPENET_PART", "SUPPORTED_SUFFIXES", "ShapeFile", "ShapeFileError",
    "find_shape_files", "read_shape", "sample_shape", "SYNTHETIC_CLASSES", "SYNTHETIC_HARD_CLASSES",
    "SYNTHETIC_LEVELS", "Nuisances", "build_shape", "evaluate_baseline", "generate_synthetic", "Compose",
    "Jitter", "LayoutNotFoundError", "ModelNet10", "ModelNet40", "NormalizeUnitCube", "NormalizeUnitSphere",
    "PartCategory", "PointDataset", "RandomDropout", "RandomRotate", "RandomSO3Rotation", "RandomScale",
    "RandomTranslate", "Resample", "ShapeFolder", "ShapeNetCore", "ShapeNetPart", "Shuffle", "Transform",
    "collate",
    "detect_layout", "detect_part_layout", "file_md5", "part_range", "point_indices", "prepare_off_cache",
    "read_off", "read_ply_points", "resolve_categories", "resolve_category", "sample_rng", "sample_surface",
    "verify_md5", "write_off",
]
