"""Datasets in their published layouts, transforms, collation, and the built-in synthetic set.

Subpackages: :mod:`.datasets` (loaders and file readers), :mod:`.transforms`, :mod:`.synthetic`
(procedural shapes, the generator and its baseline); :mod:`.files` reads a user's own shape
files of any supported format; :mod:`.categories` holds every class
table and the one resolver, :mod:`.collate` batches samples, :mod:`.cli` is ``pointabstract
data``. Code outside this package imports from here.

Names are loaded on first use (:mod:`pointabstract._lazy`), so importing one submodule (e.g.
:mod:`pointabstract.data.files`) does not import the others and their dependencies.
"""

import sys
import types

from .._lazy import lazy_exports

_EXPORTS = {
    "MODELNET10": "categories", "MODELNET40": "categories", "NUM_PARTS": "categories",
    "SHAPENET_CORE": "categories", "SHAPENET_CORE13": "categories", "SHAPENET_PART": "categories",
    "PartCategory": "categories", "part_range": "categories", "resolve_categories": "categories",
    "resolve_category": "categories", "PART_PAD": "collate", "collate": "collate", "ARCHIVES": "datasets",
    "MODELNET_LAYOUTS": "datasets", "SAMPLE_KEYS": "datasets", "LayoutNotFoundError": "datasets",
    "ModelNet10": "datasets", "ModelNet40": "datasets", "PointDataset": "datasets",
    "ShapeFolder": "datasets", "ShapeNetCore": "datasets", "ShapeNetPart": "datasets",
    "detect_layout": "datasets", "detect_part_layout": "datasets", "file_md5": "datasets",
    "point_indices": "datasets", "prepare_off_cache": "datasets", "read_off": "datasets",
    "read_ply_points": "datasets", "sample_rng": "datasets", "verify_md5": "datasets",
    "write_off": "datasets", "SUPPORTED_SUFFIXES": "files", "ShapeFile": "files",
    "ShapeFileError": "files", "find_shape_files": "files", "read_shape": "files", "sample_shape": "files",
    "SYNTHETIC_CLASSES": "synthetic:CLASS_NAMES", "SYNTHETIC_HARD_CLASSES": "synthetic:HARD_CLASS_NAMES",
    "SYNTHETIC_LEVELS": "synthetic:LEVELS", "Nuisances": "synthetic", "build_shape": "synthetic",
    "evaluate_baseline": "synthetic", "sample_surface": "synthetic",
    "generate_synthetic": "synthetic:generate", "Compose": "transforms", "Jitter": "transforms",
    "NormalizeUnitCube": "transforms", "NormalizeUnitSphere": "transforms", "RandomDropout": "transforms",
    "RandomRotate": "transforms", "RandomScale": "transforms", "RandomSO3Rotation": "transforms",
    "RandomTranslate": "transforms", "Resample": "transforms", "Shuffle": "transforms",
    "Transform": "transforms",
}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())


class _Package(types.ModuleType):
    """This package, keeping ``collate`` the function: importing the submodule of the same name
    (``pointabstract.data.collate``) would otherwise set the package's ``collate`` to the module, as
    the eager ``from .collate import collate`` used to undo."""

    def __setattr__(self, name, value):
        if name in _SHADOWED and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


_SHADOWED = ("collate",)  # names the package exports that are also the names of its submodules
sys.modules[__name__].__class__ = _Package
