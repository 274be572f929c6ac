"""Loaders for the published layouts of ModelNet, ShapeNetPart and ShapeNetCore, and their file readers.

=====================  ==========================================================
module                 what
=====================  ==========================================================
``base``               the sample dict, per-sample seeding, ``PointDataset``
``modelnet``           ModelNet40 / ModelNet10 (HDF5, resampled, OFF) + point sampling
``folder``             a folder of the user's own shapes in class folders (``folder_cache``: its samples)
``shapenet_part``      ShapeNetPart part segmentation (normal, v0, HDF5)
``shapenet_core``      ShapeNetCore point clouds for reconstruction (PLY or a ShapeNetPart layout)
``off`` / ``ply``      mesh (OFF) and point-cloud or mesh (PLY) readers
``obj`` / ``stl``      mesh readers (OBJ, STL) for :mod:`pointabstract.data.files`
``pcd``                PCD point clouds; ``point_table``: x y z [nx ny nz] text tables
``off_cache``          the OFF -> HDF5 point cache (every mesh sampled once)
``checksums``          archive md5s and the array checks every reader shares
=====================  ==========================================================
"""

from .base import SAMPLE_KEYS, LayoutNotFoundError, PointDataset, sample_rng
from .checksums import ARCHIVES, file_md5, verify_md5
from .folder import ShapeFolder
from .modelnet import LAYOUTS as MODELNET_LAYOUTS
from .modelnet import ModelNet10, ModelNet40, detect_layout, point_indices
from .off import read_off, write_off
from .off_cache import prepare_off_cache
from .ply import read_ply, read_ply_points
from .shapenet_core import ShapeNetCore
from .shapenet_part import ShapeNetPart, detect_part_layout

__all__ = [
    "ARCHIVES", "MODELNET_LAYOUTS", "SAMPLE_KEYS", "LayoutNotFoundError", "ModelNet10", "ModelNet40",
    "PointDataset", "ShapeFolder", "ShapeNetCore", "ShapeNetPart", "detect_layout", "detect_part_layout",
    "file_md5", "point_indices",
    "prepare_off_cache", "read_off", "read_ply", "read_ply_points", "sample_rng", "verify_md5", "write_off",
]
