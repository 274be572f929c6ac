"""KD-tree k-nearest-neighbour and ball queries in 3D, compiled by numba.

One tree per cloud: median splits on the widest axis until a node holds at most ``leaf``
points. Nodes live in flat per-cloud arrays (``lo``/``hi`` range into ``perm``, split axis
and value, index of the left child, -1 for leaves; the right child is ``left + 1``). Leaf
points are copied in tree order into separate x / y / z arrays so a leaf scan is a
contiguous, vectorisable loop.

Results are exact and deterministic: candidates are ordered by ``(squared distance, index)``
and a node is pruned only when its lower bound is strictly larger than the current k-th
distance, so ties resolve to the lowest index exactly as the brute-force reference does.
Squared distances are ``dx*dx + dy*dy + dz*dz`` in the input dtype, the reference's order.
Missing neighbours (a cloud shorter than k, an empty ball) are ``idx = -1``, ``dist2 = inf``.

One file on purpose (about 470 lines): the build and the two queries are one data structure,
written against the same flat node layout and stack bounds above, and neither half can be read
or changed without the other.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit, prange

__all__ = ["KDTrees", "allocate_trees", "build", "build_par", "max_nodes", "query_par", "query_ser"]

_STACK = 128  # DFS stacks: a query's grows by one entry per tree level
_MAX_DEPTH = _STACK - 8  # deeper nodes stay leaves (median splits reach log2(N / leaf))
_FRONTIER = 16  # subtrees that build_par grows concurrently


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
    stack = np.empty(_STACK, np.int64)
    depth = np.empty(_STACK, np.int64)
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


@njit(cache=True, boundscheck=False)
def _knn_one(qx, qy, qz, tree, k, dk, ik, nstack, bstack):
    """The k nearest tree points of ``(qx, qy, qz)`` into ``dk`` / ``ik`` (sorted)."""
    perm, lo_, hi_, dim_, val_, left, tx, ty, tz = tree
    dk[:] = np.inf
    ik[:] = -1
    nstack[0], bstack[0] = 0, 0.0
    sp = 1
    while sp > 0:
        sp -= 1
        node, bound = nstack[sp], bstack[sp]
        if bound > dk[k - 1]:
            continue
        child = left[node]
        if child < 0 and dim_[node] == 3:  # identical points in index order: take the first
            t = lo_[node]  # ones that fit, then stop (the later ones have larger indices)
            dx = tx[t] - qx
            dy = ty[t] - qy
            dz = tz[t] - qz
            d = dx * dx + dy * dy + dz * dz
            for t in range(lo_[node], hi_[node]):
                p = perm[t]
                if d > dk[k - 1] or (d == dk[k - 1] and p > ik[k - 1]):
                    break
                j = k - 1
                while j > 0 and (dk[j - 1] > d or (dk[j - 1] == d and ik[j - 1] > p)):
                    dk[j] = dk[j - 1]
                    ik[j] = ik[j - 1]
                    j -= 1
                dk[j] = d
                ik[j] = p
            continue
        if child < 0:
            for t in range(lo_[node], hi_[node]):
                dx = tx[t] - qx
                dy = ty[t] - qy
                dz = tz[t] - qz
                d = dx * dx + dy * dy + dz * dz
                if d <= dk[k - 1]:  # insert (d, p) into the sorted k best; written out
                    p = perm[t]  # here because a helper call costs 3x in this loop
                    if d == dk[k - 1] and p > ik[k - 1]:
                        continue
                    j = k - 1
                    while j > 0 and (dk[j - 1] > d or (dk[j - 1] == d and ik[j - 1] > p)):
                        dk[j] = dk[j - 1]
                        ik[j] = ik[j - 1]
                        j -= 1
                    dk[j] = d
                    ik[j] = p
            continue
        axis = dim_[node]
        diff = (qx if axis == 0 else (qy if axis == 1 else qz)) - val_[node]
        near, far = (child, child + 1) if diff < 0 else (child + 1, child)
        nstack[sp], bstack[sp] = far, max(bound, diff * diff)  # pushed first, visited last
        nstack[sp + 1], bstack[sp + 1] = near, bound
        sp += 2


@njit(cache=True, boundscheck=False)
def _ball_one(qx, qy, qz, tree, r2, k, dk, ik, nstack):
    """The k lowest-index tree points within squared radius ``r2``, in index order."""
    perm, lo_, hi_, dim_, val_, left, tx, ty, tz = tree
    dk[:] = np.inf
    ik[:] = -1
    found = 0
    nstack[0] = 0
    sp = 1
    while sp > 0:
        sp -= 1
        node = nstack[sp]
        child = left[node]
        if child < 0 and dim_[node] == 3:  # identical points in index order: take the first
            t = lo_[node]  # ones that fit, then stop (the later ones have larger indices)
            dx = tx[t] - qx
            dy = ty[t] - qy
            dz = tz[t] - qz
            d = dx * dx + dy * dy + dz * dz
            if d <= r2:
                for t in range(lo_[node], hi_[node]):
                    p = perm[t]
                    if found >= k and p > ik[k - 1]:
                        break
                    j = min(found, k - 1)
                    while j > 0 and ik[j - 1] > p:
                        ik[j] = ik[j - 1]
                        dk[j] = dk[j - 1]
                        j -= 1
                    ik[j] = p
                    dk[j] = d
                    found += 1
            continue
        if child < 0:
            for t in range(lo_[node], hi_[node]):
                dx = tx[t] - qx
                dy = ty[t] - qy
                dz = tz[t] - qz
                d = dx * dx + dy * dy + dz * dz
                p = perm[t]
                if d <= r2 and (found < k or p < ik[k - 1]):
                    j = min(found, k - 1)
                    while j > 0 and ik[j - 1] > p:
                        ik[j] = ik[j - 1]
                        dk[j] = dk[j - 1]
                        j -= 1
                    ik[j] = p
                    dk[j] = d
                    found += 1
            continue
        axis = dim_[node]
        diff = (qx if axis == 0 else (qy if axis == 1 else qz)) - val_[node]
        nstack[sp] = child if diff < 0 else child + 1
        sp += 1
        if diff * diff <= r2:
            nstack[sp] = child + 1 if diff < 0 else child
            sp += 1


# --- drivers: build one tree per cloud, then answer query chunks (the unit of parallel work) --

_CHUNK = 128  # queries per work item


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


@njit(cache=True)
def _cloud_tree(trees, b):
    """Cloud ``b``'s rows of a :class:`KDTrees`."""
    return KDTrees(trees.perm[b], trees.lo[b], trees.hi[b], trees.dim[b], trees.val[b], trees.left[b],
                   trees.tx[b], trees.ty[b], trees.tz[b])


@njit(cache=True)
def _build_cloud(ref, ref_len, leaf, trees, b):
    t = _cloud_tree(trees, b)
    build(ref[b], ref_len[b], leaf, t.perm, t.lo, t.hi, t.dim, t.val, t.left, t.tx, t.ty, t.tz)


@njit(cache=True)
def _build_cloud_par(ref, ref_len, leaf, trees, b):
    t = _cloud_tree(trees, b)
    build_par(ref[b], ref_len[b], leaf, t.perm, t.lo, t.hi, t.dim, t.val, t.left, t.tx, t.ty, t.tz)


_BIG = 16384  # clouds this large, in batches smaller than 4, build their trees in parallel


@njit(cache=True)
def _work_items(query_len):
    """(cloud, first query) of every chunk of at most _CHUNK queries."""
    total = 0
    for b in range(query_len.shape[0]):
        total += (query_len[b] + _CHUNK - 1) // _CHUNK
    items = np.empty((total, 2), np.int64)
    i = 0
    for b in range(query_len.shape[0]):
        for start in range(0, query_len[b], _CHUNK):
            items[i, 0], items[i, 1] = b, start
            i += 1
    return items


@njit(cache=True)
def _answer_chunk(query, query_len, trees, self_query, mode, k, r2, dist, idx, item):
    """Answer one chunk: ``mode`` 0 = k nearest, 1 = ball query of squared radius ``r2``.

    With ``self_query`` the queries are the tree's own points, taken in tree order so
    consecutive queries share the same leaves (warm caches, tight early bounds).
    """
    b, start = item[0], item[1]
    tree = _cloud_tree(trees, b)
    perm, tx, ty, tz = tree.perm, tree.tx, tree.ty, tree.tz
    dk = np.empty(k, dist.dtype)
    ik = np.empty(k, np.int64)
    nstack = np.empty(_STACK, np.int64)
    bstack = np.empty(_STACK, dist.dtype)
    for t in range(start, min(start + _CHUNK, query_len[b])):
        if self_query:
            q, qx, qy, qz = perm[t], tx[t], ty[t], tz[t]
        else:
            q, qx, qy, qz = t, query[b, t, 0], query[b, t, 1], query[b, t, 2]
        if mode == 0:
            _knn_one(qx, qy, qz, tree, k, dk, ik, nstack, bstack)
        else:
            _ball_one(qx, qy, qz, tree, r2, k, dk, ik, nstack)
        dist[b, q, :] = dk
        idx[b, q, :] = ik


@njit(cache=True, parallel=True)
def query_par(query, query_len, ref, ref_len, leaf, self_query, mode, k, r2, trees, dist, idx):
    """Build every cloud's tree, then answer all queries; ``dist``/``idx`` (B, M, K) in place.

    ``trees``: the preallocated :class:`KDTrees` of ``allocate_trees``.
    """
    if ref.shape[0] < 4 and ref.shape[1] >= _BIG:
        for b in range(ref.shape[0]):
            _build_cloud_par(ref, ref_len, leaf, trees, b)
    else:
        for b in prange(ref.shape[0]):
            _build_cloud(ref, ref_len, leaf, trees, b)
    items = _work_items(query_len)
    for i in prange(items.shape[0]):
        _answer_chunk(query, query_len, trees, self_query, mode, k, r2, dist, idx, items[i])


@njit(cache=True)
def query_ser(query, query_len, ref, ref_len, leaf, self_query, mode, k, r2, trees, dist, idx):
    """Serial twin of :func:`query_par`."""
    for b in range(ref.shape[0]):
        _build_cloud(ref, ref_len, leaf, trees, b)
    items = _work_items(query_len)
    for i in range(items.shape[0]):
        _answer_chunk(query, query_len, trees, self_query, mode, k, r2, dist, idx, items[i])


def allocate_trees(batch: int, n: int, leaf: int, dtype) -> KDTrees:
    """Uninitialised tree arrays for ``batch`` clouds of up to ``n`` points of ``dtype``."""
    nodes = max_nodes(n, leaf)
    i64 = np.int64
    return KDTrees(perm=np.empty((batch, n), i64), lo=np.empty((batch, nodes), i64),
                   hi=np.empty((batch, nodes), i64), dim=np.empty((batch, nodes), i64),
                   val=np.empty((batch, nodes), dtype), left=np.empty((batch, nodes), i64),
                   tx=np.empty((batch, n), dtype), ty=np.empty((batch, n), dtype),
                   tz=np.empty((batch, n), dtype))
