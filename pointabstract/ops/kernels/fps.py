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

from .kdtree_build import BIG, build, build_par, max_nodes


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


# --- exact FPS with spatial pruning, for large clouds ------------------------------------------
#
# The points sit in a KD-tree (kdtree_build.build). Every node keeps its bounding box and the largest
# distance-to-the-selected-set among its points (with that point's index, lowest index on
# ties). After picking a point p, a subtree whose box is at least its own maximum away from p
# cannot change (every point in it is already at least that close to the set), so only the
# neighbourhood of p is visited and the next pick is the root's maximum. Rounding is monotone,
# so the float box distance never exceeds a float point distance: the result is exactly the
# plain loop's (QuickFPS, Han et al. 2023, is the same idea).

_LEAF = 64


@njit(cache=True, boundscheck=False)
def _better(v1, i1, v2, i2):
    return v1 > v2 or (v1 == v2 and i1 < i2)


@njit(cache=True, boundscheck=False)
def _node_boxes(lo_, hi_, left, tx, ty, tz, count, box):
    """box[node] = (xmin, ymin, zmin, xmax, ymax, zmax); children come after their parent."""
    for node in range(count - 1, -1, -1):
        c = left[node]
        if c == -2:  # an id build_par left unused
            continue
        if c < 0:
            box[node, 0:3] = np.inf
            box[node, 3:6] = -np.inf
            for t in range(lo_[node], hi_[node]):
                box[node, 0] = min(box[node, 0], tx[t])
                box[node, 1] = min(box[node, 1], ty[t])
                box[node, 2] = min(box[node, 2], tz[t])
                box[node, 3] = max(box[node, 3], tx[t])
                box[node, 4] = max(box[node, 4], ty[t])
                box[node, 5] = max(box[node, 5], tz[t])
        else:
            for a in range(3):
                box[node, a] = min(box[c, a], box[c + 1, a])
                box[node, 3 + a] = max(box[c, 3 + a], box[c + 1, 3 + a])


@njit(cache=True, boundscheck=False)
def _box_dist(box, node, x, y, z):
    """Squared distance from (x, y, z) to the node's box, summed x, y, z like a point's."""
    gx = max(box[node, 0] - x, x - box[node, 3], 0.0)
    gy = max(box[node, 1] - y, y - box[node, 4], 0.0)
    gz = max(box[node, 2] - z, z - box[node, 5], 0.0)
    return gx * gx + gy * gy + gz * gz


@njit(cache=True, boundscheck=False)
def _fps_tree_cloud(pts, n, m, start, out):
    """Exact FPS over ``pts[:n]`` (N, 3) with a pruned KD-tree; same picks as _fps_xyz_cloud."""
    tree = _alloc_tree(n, pts.dtype)
    count = build(pts, n, _LEAF, *tree)
    _fps_on_tree(n, m, start, out, count, *tree)


@njit(cache=True)
def _fps_tree_cloud_par(pts, n, m, start, out):
    """:func:`_fps_tree_cloud` with the tree built by all threads (one big cloud)."""
    tree = _alloc_tree(n, pts.dtype)
    count = build_par(pts, n, _LEAF, *tree)
    _fps_on_tree(n, m, start, out, count, *tree)


@njit(cache=True)
def _alloc_tree(n, dtype):
    nodes = max_nodes(n, _LEAF)
    return (np.empty(n, np.int64), np.empty(nodes, np.int64), np.empty(nodes, np.int64),
            np.empty(nodes, np.int64), np.empty(nodes, dtype), np.empty(nodes, np.int64),
            np.empty(n, dtype), np.empty(n, dtype), np.empty(n, dtype))


@njit(cache=True, boundscheck=False)
def _fps_on_tree(n, m, start, out, count, perm, lo_, hi_, dim_, val_, left, tx, ty, tz):
    box = np.empty((count, 6), tx.dtype)
    _node_boxes(lo_, hi_, left, tx, ty, tz, count, box)
    pos_of = np.empty(n, np.int64)  # tree position of every original index
    for t in range(n):
        pos_of[perm[t]] = t
    mind = np.full(n, np.inf, tx.dtype)  # in tree order
    best_v = np.full(count, np.inf, tx.dtype)  # per node: largest mind below it ...
    best_t = np.zeros(count, np.int64)  # ... and the tree position holding it
    stack = np.empty(256, np.int64)
    last = pos_of[start]
    for s in range(min(m, n)):
        out[s] = perm[last]
        lx, ly, lz = tx[last], ty[last], tz[last]
        stack[0] = 0
        sp = 1
        while sp > 0:  # DFS; a node id pushed as -1 - node means "children done: merge"
            sp -= 1
            node = stack[sp]
            if node < 0:
                node = -1 - node
                c = left[node]
                if _better(best_v[c], perm[best_t[c]], best_v[c + 1], perm[best_t[c + 1]]):
                    best_v[node], best_t[node] = best_v[c], best_t[c]
                else:
                    best_v[node], best_t[node] = best_v[c + 1], best_t[c + 1]
                continue
            if _box_dist(box, node, lx, ly, lz) >= best_v[node]:
                continue  # nothing below can get closer to the set
            c = left[node]
            if c < 0 and dim_[node] == 3:  # identical points (index order): one shared value,
                t = lo_[node]  # kept at the first, which also wins their ties
                dx = tx[t] - lx
                dy = ty[t] - ly
                dz = tz[t] - lz
                mind[t] = min(mind[t], dx * dx + dy * dy + dz * dz)
                best_v[node], best_t[node] = mind[t], t
                continue
            if c < 0:
                for t in range(lo_[node], hi_[node]):  # vectorised update
                    dx = tx[t] - lx
                    dy = ty[t] - ly
                    dz = tz[t] - lz
                    mind[t] = min(mind[t], dx * dx + dy * dy + dz * dz)
                bt = lo_[node]
                for t in range(bt + 1, hi_[node]):
                    if mind[t] > mind[bt] or (mind[t] == mind[bt] and perm[t] < perm[bt]):
                        bt = t
                best_v[node], best_t[node] = mind[bt], bt
                continue
            stack[sp] = -1 - node
            stack[sp + 1] = c
            stack[sp + 2] = c + 1
            sp += 3
        last = best_t[0]
    for s in range(n, m):
        out[s] = -1


_TREE_FROM = 1536  # from this many points the pruned tree variant wins (measured: 1024 ties)


@njit(cache=True)
def _fps_one(pts, lengths, m, starts, out, b):
    if pts.shape[2] != 3:
        _fps_generic_cloud(pts[b], lengths[b], m, starts[b], out[b])
    elif lengths[b] >= _TREE_FROM:
        _fps_tree_cloud(pts[b], lengths[b], m, starts[b], out[b])
    else:
        _fps_xyz_cloud(pts[b], lengths[b], m, starts[b], out[b])


@njit(cache=True, parallel=True)
def fps_par(pts, lengths, m, starts, out):
    """pts: (B, N, C); lengths, starts: (B,) int64; out: (B, M) int64, filled in place."""
    if pts.shape[0] < 4 and pts.shape[1] >= BIG and pts.shape[2] == 3:
        for b in range(pts.shape[0]):  # few big clouds: parallelise inside each one
            _fps_tree_cloud_par(pts[b], lengths[b], m, starts[b], out[b])
        return
    for b in prange(pts.shape[0]):
        _fps_one(pts, lengths, m, starts, out, b)


@njit(cache=True)
def fps_ser(pts, lengths, m, starts, out):
    """Serial twin of :func:`fps_par`."""
    for b in range(pts.shape[0]):
        _fps_one(pts, lengths, m, starts, out, b)
