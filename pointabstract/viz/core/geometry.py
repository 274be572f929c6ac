"""Open3D point clouds from (M, 3) points and their colours, checked: the drawable every task's
scenes are built of (classification, capsules, segmentation, the ContextPool view)."""

from __future__ import annotations

import numpy as np
import torch

from .colors import GREY

__all__ = ["float_points", "point_cloud", "rgb_colors"]


def point_cloud(pos, colors=GREY):
    """An Open3D point cloud. pos: (M, 3); colors: one RGB colour or (M, 3) in [0, 1]."""
    import open3d as o3d

    xyz = float_points("pos", pos, channels=3).double().numpy()
    cloud = o3d.geometry.PointCloud(o3d.utility.Vector3dVector(xyz))
    cloud.colors = o3d.utility.Vector3dVector(np.ascontiguousarray(rgb_colors("colors", colors, len(xyz))))
    return cloud


def float_points(name: str, x, *, channels: int | None = None) -> torch.Tensor:
    """``x`` (M, C) as a float32 tensor on the CPU; a ValueError / TypeError naming ``name`` if it
    is not floats of that shape (M >= 1, C = ``channels`` when given) or is not finite."""
    t = torch.as_tensor(x.detach().cpu() if isinstance(x, torch.Tensor) else np.asarray(x))
    if not t.is_floating_point():
        raise TypeError(f"{name} must hold floats, got dtype {t.dtype}")
    if t.dim() != 2 or t.shape[0] == 0 or (channels is not None and t.shape[1] != channels):
        want = f"(M, {channels})" if channels is not None else "(M, C)"
        raise ValueError(f"{name} must have shape {want} with M >= 1, got {tuple(t.shape)}")
    if not torch.isfinite(t).all():
        raise ValueError(f"{name} holds NaN or Inf values")
    return t.float()


def rgb_colors(name: str, colors, m: int) -> np.ndarray:
    """``colors`` (one RGB colour or (m, 3) in [0, 1]) as (m, 3) float64; a ValueError naming ``name``."""
    c = np.asarray(colors, dtype=np.float64)
    if c.shape == (3,):
        c = np.broadcast_to(c, (m, 3))
    if c.shape != (m, 3):
        raise ValueError(f"{name} must be one RGB colour or shape ({m}, 3), got shape {c.shape}")
    if not np.isfinite(c).all() or c.min() < 0 or c.max() > 1:
        raise ValueError(f"{name} must lie in [0, 1]")
    return c
