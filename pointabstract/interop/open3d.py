"""Sample dicts <-> ``open3d.geometry.PointCloud`` (points, normals, colours).

Open3D keeps float64 coordinates; pointabstract's samples are float32 (the conversion back
rounds). Needs open3d (extra ``viz``).
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["from_open3d", "to_open3d"]


def _rows(name: str, value, n: int | None) -> np.ndarray:
    """(N, 3) finite float64 array from a numpy array or tensor; N must equal ``n`` when set."""
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    if not isinstance(value, np.ndarray):
        raise TypeError(f"{name} must be a numpy array or torch.Tensor, got {type(value).__name__}")
    if value.ndim != 2 or value.shape[1] != 3 or (n is not None and len(value) != n):
        want = "(N, 3)" if n is None else f"(N, 3) with N = {n}"
        raise ValueError(f"{name} must have shape {want}, got {value.shape}")
    if not np.isfinite(value).all():
        raise ValueError(f"{name} holds NaN or Inf values")
    return np.ascontiguousarray(value, dtype=np.float64)


def to_open3d(pos, *, normal=None, color=None):
    """Points (and normals, colours) -> ``open3d.geometry.PointCloud``.

    Args:
        pos: (N, 3) coordinates (numpy or torch; a sample's ``pos``).
        normal: (N, 3) normals, optional.
        color: (N, 3) RGB in [0, 1], optional.

    Returns:
        PointCloud with ``points`` (and ``normals``, ``colors``) as float64.
    """
    import open3d as o3d

    points = _rows("pos", pos, None)
    cloud = o3d.geometry.PointCloud(o3d.utility.Vector3dVector(points))
    if normal is not None:
        cloud.normals = o3d.utility.Vector3dVector(_rows("normal", normal, len(points)))
    if color is not None:
        rgb = _rows("color", color, len(points))
        if rgb.size and (rgb.min() < 0 or rgb.max() > 1):
            raise ValueError(f"color must lie in [0, 1], got values in [{rgb.min()}, {rgb.max()}]")
        cloud.colors = o3d.utility.Vector3dVector(rgb)
    return cloud


def from_open3d(cloud) -> dict:
    """``open3d.geometry.PointCloud`` -> a sample dict.

    Returns:
        ``pos`` (N, 3) float32 and, when the cloud has them, ``normal`` (N, 3) float32 and
        ``color`` (N, 3) float32 in [0, 1].
    """
    import open3d as o3d

    if not isinstance(cloud, o3d.geometry.PointCloud):
        raise TypeError(f"cloud must be an open3d.geometry.PointCloud, got {type(cloud).__name__}")
    sample = {"pos": np.asarray(cloud.points, dtype=np.float32)}
    if cloud.has_normals():
        sample["normal"] = np.asarray(cloud.normals, dtype=np.float32)
    if cloud.has_colors():
        sample["color"] = np.asarray(cloud.colors, dtype=np.float32)
    return sample
