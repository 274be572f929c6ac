"""Exact farthest point sampling, compiled by numba.

Selection rule (shared with ``farthest_point_sample_naive``, torch-cluster with
``random_start=False`` and pytorch3d's ``sample_farthest_points``): start at ``start[b]``;
each step takes the point whose squared distance to the selected set is largest, the lowest
index winning ties. Squared distances are summed channel by channel in the input dtype, in
the same order as the reference, so both pick the same points.

A cloud with fewer than ``m`` distinct points yields every distinct point first (their
distance to the set is positive), then repeats of index ``start`` (all distances are 0).
Slots ``m >= lengths[b]`` are filled with -1.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(cache=True, boundscheck=False)
def _fps_xyz_cloud(pts, n, m, start, out):
    """FPS over ``pts[:n]`` (N, 3) into ``out`` (M,); the 3 channels are kept apart (SoA)."""
    x = np.ascontiguousarray(pts[:n, 0])
    y = np.ascontiguousarray(pts[:n, 1])
    z = np.ascontiguousarray(pts[:n, 2])
    mind = np.full(n, np.inf, pts.dtype)
    last = start
    for s in range(min(m, n)):
        out[s] = last
        lx, ly, lz = x[last], y[last], z[last]
        for i in range(n):  # vectorised by LLVM: no loop-carried dependency
            dx = x[i] - lx
            dy = y[i] - ly
            dz = z[i] - lz
            d = dx * dx + dy * dy + dz * dz
            if d < mind[i]:
                mind[i] = d
        best = mind[0]
        last = 0
        for i in range(1, n):
            if mind[i] > best:
                best = mind[i]
                last = i
    for s in range(n, m):
        out[s] = -1


@njit(cache=True, boundscheck=False)
def _fps_generic_cloud(pts, n, m, start, out):
    """FPS over ``pts[:n]`` (N, C) for any C, channels summed in order 0..C-1."""
    c_dim = pts.shape[1]
    xt = np.ascontiguousarray(pts[:n].T)  # (C, N)
    mind = np.full(n, np.inf, pts.dtype)
    d = np.empty(n, pts.dtype)
    last = start
    for s in range(min(m, n)):
        out[s] = last
        for i in range(n):
            t = xt[0, i] - xt[0, last]
            d[i] = t * t
        for c in range(1, c_dim):
            lc = xt[c, last]
            for i in range(n):
                t = xt[c, i] - lc
                d[i] += t * t
        best = -1.0
        for i in range(n):
            if d[i] < mind[i]:
                mind[i] = d[i]
            if mind[i] > best:
                best = mind[i]
                last = i
    for s in range(n, m):
        out[s] = -1


@njit(cache=True)
def _fps_one(pts, lengths, m, starts, out, b):
    if pts.shape[2] == 3:
        _fps_xyz_cloud(pts[b], lengths[b], m, starts[b], out[b])
    else:
        _fps_generic_cloud(pts[b], lengths[b], m, starts[b], out[b])


@njit(cache=True, parallel=True)
def fps_par(pts, lengths, m, starts, out):
    """pts: (B, N, C); lengths, starts: (B,) int64; out: (B, M) int64, filled in place."""
    for b in prange(pts.shape[0]):
        _fps_one(pts, lengths, m, starts, out, b)


@njit(cache=True)
def fps_ser(pts, lengths, m, starts, out):
    """Serial twin of :func:`fps_par`."""
    for b in range(pts.shape[0]):
        _fps_one(pts, lengths, m, starts, out, b)
