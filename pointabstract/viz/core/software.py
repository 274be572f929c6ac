"""The last-resort renderer: a software point splatter written with numpy only.

It draws what the native backends draw (point clouds as square splats of ``point_size``
pixels, triangle meshes as flat-coloured triangles, unlit, with a depth buffer) through the
same pinhole camera, so a PNG can always be produced, also where Open3D's renderers are
missing, crash or hang. It cannot hang: it is a fixed number of numpy operations.

Items are the plain dicts the render worker receives (see :func:`pointabstract.viz.core.render`):
``{"kind": "points", "points": (P, 3), "colors": (P, 3) | (0, 3), "point_size": float}`` or
``{"kind": "mesh", "vertices": (V, 3), "triangles": (F, 3), "colors": (V, 3) | (0, 3), ...}``.
Depth ties go to the fragment drawn last (a later item, then a later point), as with a
``<=`` depth test: a block's point drawn over the identical input point of its context shows.
"""

from __future__ import annotations

import numpy as np

from ... import _validate as V

__all__ = ["splat", "splat_naive"]

_NEAR = 1e-6  # points closer to the camera plane than this are not drawn
_DEFAULT_COLOR = (0.5, 0.5, 0.5)  # items without colours (as Open3D draws them, roughly)


def splat(items: list[dict], intrinsic, extrinsic, background, width: int, height: int) -> np.ndarray:
    """Render ``items`` with a depth buffer.

    Args:
        items: plain point-cloud / mesh dicts (module docstring).
        intrinsic: (3, 3) pinhole matrix; pixel ``(row v, column u)`` has its centre at ``(u, v)``.
        extrinsic: (4, 4) world -> camera (camera x right, y down, z forward).
        background: RGB in [0, 1].
        width, height: image size in pixels.

    Returns:
        (height, width, 3) uint8 RGB.
    """
    _check(intrinsic, extrinsic, width, height)
    pix, depth, rgb = [], [], []
    for item in items:
        p, d, c = _points_fragments(item, intrinsic, extrinsic, width, height) if item["kind"] == "points" \
            else _mesh_fragments(item, intrinsic, extrinsic, width, height)
        pix.append(p)
        depth.append(d)
        rgb.append(c)
    image = np.empty((height * width, 3))
    image[:] = np.asarray(background, float)
    if pix:
        pix, depth, rgb = np.concatenate(pix), np.concatenate(depth), np.concatenate(rgb)
        later = -np.arange(len(pix))  # on equal depth the later fragment comes first
        order = np.lexsort((later, depth, pix))  # by pixel, then nearest, then latest
        pix, rgb = pix[order], rgb[order]
        first = np.ones(len(pix), bool)
        first[1:] = pix[1:] != pix[:-1]
        image[pix[first]] = rgb[first]
    return _to_uint8(image.reshape(height, width, 3))


def splat_naive(items: list[dict], intrinsic, extrinsic, background, width: int, height: int) -> np.ndarray:
    """:func:`splat` with plain loops over points, splat pixels, triangles and their pixels (tests)."""
    _check(intrinsic, extrinsic, width, height)
    image = np.empty((height, width, 3))
    image[:] = np.asarray(background, float)
    zbuf = np.full((height, width), np.inf)
    for item in items:
        if item["kind"] == "points":
            uv, z, colors = _project(item["points"], item["colors"], intrinsic, extrinsic)
            for (u, v), zi, color in zip(uv, z, colors):
                if zi <= _NEAR:
                    continue
                for du, dv in _footprint(item["point_size"]):
                    col, row = int(np.rint(u)) + du, int(np.rint(v)) + dv
                    if 0 <= col < width and 0 <= row < height and zi <= zbuf[row, col]:
                        zbuf[row, col], image[row, col] = zi, color
        else:
            uv, z, colors = _project(item["vertices"], item["colors"], intrinsic, extrinsic)
            for tri in np.asarray(item["triangles"], np.int64).reshape(-1, 3):
                if (z[tri] <= _NEAR).any():
                    continue
                for row in range(height):
                    for col in range(width):
                        w = _barycentric(uv[tri], col, row)
                        if w is not None and float(w @ z[tri]) <= zbuf[row, col]:
                            zi = float(w @ z[tri])
                            zbuf[row, col], image[row, col] = zi, colors[tri].mean(0)
    return _to_uint8(image)


def _check(intrinsic, extrinsic, width, height) -> None:
    if np.asarray(intrinsic).shape != (3, 3) or np.asarray(extrinsic).shape != (4, 4):
        raise ValueError(f"intrinsic must be (3, 3) and extrinsic (4, 4), got {np.asarray(intrinsic).shape} "
                         f"and {np.asarray(extrinsic).shape}")
    V.check_int("width", width, low=1)
    V.check_int("height", height, low=1)


def _to_uint8(image: np.ndarray) -> np.ndarray:
    return np.floor(np.clip(image, 0.0, 1.0) * 255 + 0.5).astype(np.uint8)


def _project(xyz, colors, intrinsic, extrinsic):
    """(P, 3) world points -> pixel coordinates (P, 2), camera depth (P,), colours (P, 3)."""
    xyz = np.asarray(xyz, float).reshape(-1, 3)
    cam = xyz @ np.asarray(extrinsic, float)[:3, :3].T + np.asarray(extrinsic, float)[:3, 3]
    z = cam[:, 2]
    with np.errstate(divide="ignore", invalid="ignore"):
        uvw = cam @ np.asarray(intrinsic, float).T
        uv = uvw[:, :2] / uvw[:, 2:3]
    colors = np.asarray(colors, float).reshape(-1, 3)
    if len(colors) != len(xyz):
        colors = np.broadcast_to(np.asarray(_DEFAULT_COLOR), (len(xyz), 3))
    return uv, z, colors


def _footprint(point_size: float) -> list[tuple[int, int]]:
    """Integer pixel offsets of a square splat ``point_size`` pixels wide (odd, at least 1), as
    Filament draws points."""
    span = int(np.floor((max(float(point_size), 1.0) - 1) / 2 + 1e-9))
    return [(du, dv) for dv in range(-span, span + 1) for du in range(-span, span + 1)]


def _points_fragments(item, intrinsic, extrinsic, width, height):
    uv, z, colors = _project(item["points"], item["colors"], intrinsic, extrinsic)
    keep = z > _NEAR
    centre = np.rint(uv[keep]).astype(np.int64)  # (P', 2) column, row
    offsets = np.array(_footprint(item["point_size"]), np.int64)  # (S, 2)
    cols = (centre[:, None, 0] + offsets[None, :, 0]).reshape(-1)  # (P' * S,) point-major order
    rows = (centre[:, None, 1] + offsets[None, :, 1]).reshape(-1)
    depth = np.repeat(z[keep], len(offsets))
    rgb = np.repeat(colors[keep], len(offsets), axis=0)
    inside = (cols >= 0) & (cols < width) & (rows >= 0) & (rows < height)
    return rows[inside] * width + cols[inside], depth[inside], rgb[inside]


def _barycentric(tri_uv: np.ndarray, col: float, row: float) -> np.ndarray | None:
    """Barycentric weights (3,) of pixel centre (col, row) in a projected triangle, None outside."""
    (x0, y0), (x1, y1), (x2, y2) = tri_uv
    area = (x1 - x0) * (y2 - y0) - (x2 - x0) * (y1 - y0)
    if abs(area) < 1e-12:
        return None
    w1 = ((col - x0) * (y2 - y0) - (x2 - x0) * (row - y0)) / area
    w2 = ((x1 - x0) * (row - y0) - (col - x0) * (y1 - y0)) / area
    w = np.array([1 - w1 - w2, w1, w2])
    return w if (w >= -1e-9).all() else None


def _mesh_fragments(item, intrinsic, extrinsic, width, height):
    uv, z, colors = _project(item["vertices"], item["colors"], intrinsic, extrinsic)
    pix, depth, rgb = [], [], []
    for tri in np.asarray(item["triangles"], np.int64).reshape(-1, 3):
        if (z[tri] <= _NEAR).any():
            continue
        t = uv[tri]
        lo = np.maximum(np.ceil(t.min(0) - 1e-9), 0).astype(np.int64)
        hi = np.minimum(np.floor(t.max(0) + 1e-9), [width - 1, height - 1]).astype(np.int64)
        if (hi < lo).any():
            continue
        cols, rows = np.meshgrid(np.arange(lo[0], hi[0] + 1), np.arange(lo[1], hi[1] + 1))
        cols, rows = cols.reshape(-1), rows.reshape(-1)
        (x0, y0), (x1, y1), (x2, y2) = t
        area = (x1 - x0) * (y2 - y0) - (x2 - x0) * (y1 - y0)
        if abs(area) < 1e-12:
            continue
        w1 = ((cols - x0) * (y2 - y0) - (x2 - x0) * (rows - y0)) / area
        w2 = ((x1 - x0) * (rows - y0) - (cols - x0) * (y1 - y0)) / area
        w = np.stack([1 - w1 - w2, w1, w2], 1)  # (Q, 3)
        inside = (w >= -1e-9).all(1)
        pix.append(rows[inside] * width + cols[inside])
        depth.append(w[inside] @ z[tri])
        rgb.append(np.broadcast_to(colors[tri].mean(0), (int(inside.sum()), 3)))
    if not pix:
        return np.zeros(0, np.int64), np.zeros(0), np.zeros((0, 3))
    return np.concatenate(pix), np.concatenate(depth), np.concatenate(rgb)
