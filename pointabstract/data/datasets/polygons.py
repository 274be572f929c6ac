"""Polygons of any sizes as triangles, vectorised: the faces of PLY, OBJ and OFF readers.

Polygons are given flat: ``sizes[p]`` corners each, their vertex indices ``flat[first[p] :
first[p] + sizes[p]]``. A polygon of n >= 3 corners becomes the n - 2 fan triangles
``(i_1, i_k, i_{k+1})``, k = 2 .. n - 1, in polygon order.
"""

from __future__ import annotations

import numpy as np

__all__ = ["fan_triangles", "fan_triangles_naive", "gather_lists"]


def gather_lists(first: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """(sum(sizes),) int64 positions ``first[p] + j`` for j < sizes[p], polygon after polygon."""
    sizes = np.asarray(sizes, np.int64)
    total = int(sizes.sum())
    starts = np.cumsum(sizes) - sizes  # where each polygon begins in the output
    return np.repeat(np.asarray(first, np.int64) - starts, sizes) + np.arange(total, dtype=np.int64)


def fan_triangles(sizes: np.ndarray, flat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Fan-split polygons given as ``sizes`` (P,) and their indices back to back ``flat`` (sum(sizes),).

    Returns:
        triangles: (F, 3) int64, F = sum(sizes - 2), in polygon order.
        owner: (F,) int64 the polygon each triangle comes from.

    Every size must be >= 3 (the caller names the polygon that is not).
    """
    sizes = np.asarray(sizes, np.int64)
    first = np.cumsum(sizes) - sizes
    count = sizes - 2
    owner = np.repeat(np.arange(len(sizes), dtype=np.int64), count)
    k = np.arange(len(owner), dtype=np.int64) - np.repeat(np.cumsum(count) - count, count) + 1  # 1 .. n - 2
    start = first[owner]
    flat = np.asarray(flat, np.int64)
    triangles = np.stack([flat[start], flat[start + k], flat[start + k + 1]], axis=1)
    return triangles.reshape(-1, 3), owner


def fan_triangles_naive(polygons: list[list[int]]) -> np.ndarray:
    """The fans of a list of polygons, by a loop (the reference)."""
    triangles = [(p[0], p[k], p[k + 1]) for p in polygons for k in range(1, len(p) - 1)]
    return np.array(triangles, dtype=np.int64).reshape(-1, 3)
