"""The KD-tree of one 3D cloud, compiled by numba: its flat layout and its construction.

One tree per cloud: median splits on the widest axis until a node holds at most ``leaf``
points. Nodes live in flat per-cloud arrays (``lo``/``hi`` range into ``perm``, split axis
and value, index of the left child, -1 for leaves; the right child is ``left + 1``), a batch's
trees in one :class:`KDTrees` (:func:`allocate_trees`). Leaf points are copied in tree order
into separate x / y / z arrays so a leaf scan is a contiguous, vectorisable loop. The queries
(:mod:`.kdtree`) and the FPS kernel (:mod:`.fps`) read this layout.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit, prange

__all__ = ["BIG", "KDTrees", "STACK", "allocate_trees", "build", "build_par", "max_nodes"]

STACK = 128  # DFS stacks: a query's grows by one entry per tree level
_MAX_DEPTH = STACK - 8  # deeper nodes stay leaves (median splits reach log2(N / leaf))
_FRONTIER = 16  # subtrees that build_par grows concurrently
BIG = 16384  # clouds this large, in batches smaller than 4, build their trees in parallel


@njit(cache=True)
def _tree_ids(n, leaf):
    """Node ids to reserve for a tree over ``n`` points with leaves of at most ``leaf``.

    Median splits give leaves of more than leaf // 2 points; splits moved to the edge of a
    run of equal coordinates (see :func:`_split`) can leave smaller ones, so this reserves
    twice that. A tree that would need more stops splitting (a larger leaf: slower, exact).
    """
    return 2 * (n // max(1, leaf // 4) + 1) + 1


@njit(cache=True)
def max_nodes(n, leaf):
    """Ids to allocate for one cloud: the node bound plus the gaps :func:`build_par` leaves
    (at most 31 top nodes and 3 ids of slack per block, 16 blocks)."""
    return _tree_ids(n, leaf) + 6 * _FRONTIER


@njit(cache=True, boundscheck=False)
def _select_rows(p, perm, lo, hi, axis, kth):
    """Quickselect on rows ``p[lo:hi]`` by column ``axis``, moving ``perm`` along."""
    while hi - lo > 1:
        a, b, c = p[lo, axis], p[(lo + hi - 1) // 2, axis], p[hi - 1, axis]
        piv = max(min(a, b), min(max(a, b), c))  # median of three
        i, j = lo, hi - 1
        while i <= j:  # Hoare partition: stops on equal keys, so duplicates stay O(n log n)
            while p[i, axis] < piv:
                i += 1
            while p[j, axis] > piv:
                j -= 1
            if i <= j:
                _swap(p, perm, i, j)
                i += 1
                j -= 1
        if kth <= j:
            hi = j + 1
        elif kth >= i:
            lo = i
        else:
            return


@njit(cache=True, boundscheck=False)
def _swap(p, perm, i, j):
    for d in range(3):
        p[i, d], p[j, d] = p[j, d], p[i, d]
    perm[i], perm[j] = perm[j], perm[i]


@njit(cache=True, boundscheck=False)
def _equal_run(p, perm, lo, mid, hi, axis):
    """After a quickselect at ``mid`` (rows before it <= v = p[mid, axis] <= rows after it),
    gather the rows equal to v into one run [s, e) around ``mid``; returns (s, e). When
    no row before ``mid`` equals v, the rows after it are left alone and e = mid + 1."""
    v = p[mid, axis]
    s = mid
    for t in range(mid - 1, lo - 1, -1):  # equal rows of the lower part to its end
        if p[t, axis] == v:
            s -= 1
            _swap(p, perm, t, s)
    e = mid + 1
    if s == mid:  # no run to the left (distinct coordinates): the cut stays at mid anyway
        return s, e
    for t in range(mid + 1, hi):  # equal rows of the upper part to its front
        if p[t, axis] == v:
            _swap(p, perm, t, e)
            e += 1
    return s, e


@njit(cache=True, boundscheck=False)
def _split(p, perm, node, leaf, lo_, hi_, dim_, val_, left, child):
    """Split ``node`` on its widest axis into ids ``child``, ``child + 1``; False for a leaf.

    The cut is the median, moved to the nearer edge of the run of coordinates equal to it
    when that run straddles the median, so equal coordinates never end up on both sides:
    a cluster of identical points stays in one subtree until it is a node of its own. A
    node whose points are all identical becomes one leaf whatever its size (``dim = 3``),
    its points in increasing index order, so a query takes the few it needs and stops.
    Other leaves have ``dim = -1``.
    """
    lo, hi = lo_[node], hi_[node]
    if hi - lo <= leaf:
        left[node], dim_[node] = -1, -1
        return False
    x0, y0, z0 = p[lo, 0], p[lo, 1], p[lo, 2]
    x1, y1, z1 = x0, y0, z0
    for t in range(lo + 1, hi):
        x0, x1 = min(x0, p[t, 0]), max(x1, p[t, 0])
        y0, y1 = min(y0, p[t, 1]), max(y1, p[t, 1])
        z0, z1 = min(z0, p[t, 2]), max(z1, p[t, 2])
    if x1 == x0 and y1 == y0 and z1 == z0:
        perm[lo:hi].sort()  # identical rows: reorder the indices alone
        left[node], dim_[node] = -1, 3
        return False
    axis = 0  # the widest axis, first on ties
    if y1 - y0 > x1 - x0:
        axis = 1
    if z1 - z0 > max(x1 - x0, y1 - y0):
        axis = 2
    mid = (lo + hi) // 2
    _select_rows(p, perm, lo, hi, axis, mid)
    s, e = _equal_run(p, perm, lo, mid, hi, axis)
    if s > lo and (e == hi or mid - s <= e - mid):
        cut = s  # left < v <= right
    else:
        cut = e  # left <= v < right (e < hi: the axis is not flat)
    dim_[node], val_[node] = axis, p[mid, axis]  # the run's value, v
    left[node] = child
    lo_[child], hi_[child], lo_[child + 1], hi_[child + 1] = lo, cut, cut, hi
    return True


@njit(cache=True, boundscheck=False)
def _grow(p, perm, root, depth0, next_id, limit, leaf, lo_, hi_, dim_, val_, left):
    """Split ``root`` (at depth ``depth0``) recursively, depth first, taking new ids from
    ``next_id`` up to ``limit``; a node past _MAX_DEPTH or out of ids stays a leaf."""
    stack = np.empty(STACK, np.int64)
    depth = np.empty(STACK, np.int64)
    stack[0], depth[0] = root, depth0
    sp = 1
    while sp > 0:
        sp -= 1
        node, dep = stack[sp], depth[sp]
        if dep >= _MAX_DEPTH or next_id + 2 > limit:
            left[node], dim_[node] = -1, -1
            continue
        if _split(p, perm, node, leaf, lo_, hi_, dim_, val_, left, next_id):
            stack[sp], stack[sp + 1] = next_id, next_id + 1
            depth[sp], depth[sp + 1] = dep + 1, dep + 1
            sp += 2
            next_id += 2
    return next_id


@njit(cache=True, boundscheck=False)
def _start(pts, n, perm, lo_, hi_, left):
    p = pts[:n].copy()  # rows in tree order: every pass over a node reads contiguous memory
    for t in range(n):
        perm[t] = t
    left[:] = -2  # ids never used (gaps between parallel blocks) stay -2
    lo_[0], hi_[0] = 0, n
    return p


@njit(cache=True, boundscheck=False)
def _finish(p, n, tx, ty, tz):
    for t in range(n):
        tx[t], ty[t], tz[t] = p[t, 0], p[t, 1], p[t, 2]


@njit(cache=True, boundscheck=False)
def build(pts, n, leaf, perm, lo_, hi_, dim_, val_, left, tx, ty, tz):
    """Build the tree of ``pts[:n]`` (N, 3) into preallocated arrays; returns ids used."""
    p = _start(pts, n, perm, lo_, hi_, left)
    count = _grow(p, perm, 0, 0, 1, left.shape[0], leaf, lo_, hi_, dim_, val_, left)
    _finish(p, n, tx, ty, tz)
    return count


@njit(cache=True, parallel=True, boundscheck=False)
def build_par(pts, n, leaf, perm, lo_, hi_, dim_, val_, left, tx, ty, tz):
    """:func:`build` for one big cloud: split breadth first into up to 16 subtrees, then
    grow those in parallel, each in its own block of ids (blocks may leave gaps)."""
    p = _start(pts, n, perm, lo_, hi_, left)
    frontier = np.empty(_FRONTIER, np.int64)
    frontier[0] = 0
    count, width, levels = 1, 1, 0
    while 2 * width <= _FRONTIER:
        grown = np.empty(_FRONTIER, np.int64)
        g = 0
        for i in range(width):
            if _split(p, perm, frontier[i], leaf, lo_, hi_, dim_, val_, left, count):
                grown[g], grown[g + 1] = count, count + 1
                g += 2
                count += 2
        if g == 0:  # every node of the frontier became a leaf
            _finish(p, n, tx, ty, tz)
            return count
        frontier[:g] = grown[:g]
        width = g
        levels += 1
    first = np.empty(width + 1, np.int64)
    first[0] = count
    for i in range(width):
        first[i + 1] = first[i] + _tree_ids(hi_[frontier[i]] - lo_[frontier[i]], leaf)
    for i in prange(width):
        _grow(p, perm, frontier[i], levels, first[i], first[i + 1], leaf, lo_, hi_, dim_, val_, left)
    _finish(p, n, tx, ty, tz)
    return first[width]


class KDTrees(NamedTuple):
    """The flat arrays of a batch of trees, one row per cloud (``allocate_trees``); inside the
    kernels also one cloud's rows (``_cloud_tree``). ``nodes`` = :func:`max_nodes`."""

    perm: np.ndarray  # (B, N) int64: point index at each tree position
    lo: np.ndarray  # (B, nodes) int64: a node's first tree position
    hi: np.ndarray  # (B, nodes) int64: one past its last
    dim: np.ndarray  # (B, nodes) int64: split axis 0..2; 3 on a leaf of identical points
    val: np.ndarray  # (B, nodes) point dtype: split value
    left: np.ndarray  # (B, nodes) int64: left child (the right one is left + 1); -1 leaf, -2 unused
    tx: np.ndarray  # (B, N) point dtype: x of the points in tree order
    ty: np.ndarray  # (B, N): y
    tz: np.ndarray  # (B, N): z


def allocate_trees(batch: int, n: int, leaf: int, dtype) -> KDTrees:
    """Uninitialised tree arrays for ``batch`` clouds of up to ``n`` points of ``dtype``."""
    nodes = max_nodes(n, leaf)
    i64 = np.int64
    return KDTrees(perm=np.empty((batch, n), i64), lo=np.empty((batch, nodes), i64),
                   hi=np.empty((batch, nodes), i64), dim=np.empty((batch, nodes), i64),
                   val=np.empty((batch, nodes), dtype), left=np.empty((batch, nodes), i64),
                   tx=np.empty((batch, n), dtype), ty=np.empty((batch, n), dtype),
                   tz=np.empty((batch, n), dtype))
