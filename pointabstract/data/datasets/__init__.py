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

Names are loaded on first use, so the file readers import without the loaders' h5py / torch.
"""

from ..._lazy import lazy_exports

_EXPORTS = {
    "SAMPLE_KEYS": "base", "LayoutNotFoundError": "base", "PointDataset": "base", "sample_rng": "base",
    "ARCHIVES": "checksums", "file_md5": "checksums", "verify_md5": "checksums", "ShapeFolder": "folder",
    "MODELNET_LAYOUTS": "modelnet:LAYOUTS", "ModelNet10": "modelnet", "ModelNet40": "modelnet",
    "detect_layout": "modelnet", "point_indices": "modelnet", "read_off": "off", "write_off": "off",
    "prepare_off_cache": "off_cache", "read_ply": "ply", "read_ply_points": "ply",
    "ShapeNetCore": "shapenet_core", "ShapeNetPart": "shapenet_part",
    "detect_part_layout": "shapenet_part",
}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
