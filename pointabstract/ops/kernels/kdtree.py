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
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

_STACK = 128  # DFS stack: tree depth is about log2(N / leaf), far below this


def max_nodes(n: int, leaf: int) -> int:
    """Upper bound on the node count of a tree over ``n`` points with leaves of <= ``leaf``."""
    return 2 * (n // max(1, leaf // 2) + 1) + 1


@njit(cache=True, boundscheck=False)
def _select(keys, idx, lo, hi, kth):
    """Quickselect: reorder ``idx[lo:hi]`` so ``keys[idx[kth]]`` is in sorted position."""
    while hi - lo > 1:
        a, b, c = keys[idx[lo]], keys[idx[(lo + hi - 1) // 2]], keys[idx[hi - 1]]
        p = max(min(a, b), min(max(a, b), c))  # median of three
        i, j = lo, hi - 1
        while i <= j:  # Hoare partition: stops on equal keys, so duplicates stay O(n log n)
            while keys[idx[i]] < p:
                i += 1
            while keys[idx[j]] > p:
                j -= 1
            if i <= j:
                idx[i], idx[j] = idx[j], idx[i]
                i += 1
                j -= 1
        if kth <= j:
            hi = j + 1
        elif kth >= i:
            lo = i
        else:
            return


@njit(cache=True, boundscheck=False)
def build(pts, n, leaf, perm, lo_, hi_, dim_, val_, left, tx, ty, tz):
    """Build the tree of ``pts[:n]`` (N, 3) into the preallocated arrays; returns node count."""
    for t in range(n):
        perm[t] = t
    keys = np.empty(n, pts.dtype)
    stack = np.empty(_STACK, np.int64)
    lo_[0], hi_[0] = 0, n
    count, sp = 1, 1
    stack[0] = 0
    while sp > 0:
        sp -= 1
        node = stack[sp]
        lo, hi = lo_[node], hi_[node]
        if hi - lo <= leaf:
            left[node] = -1
            continue
        axis, widest = 0, -1.0
        for d in range(3):
            mn, mx = np.inf, -np.inf
            for t in range(lo, hi):
                v = pts[perm[t], d]
                mn = min(mn, v)
                mx = max(mx, v)
            if mx - mn > widest:
                axis, widest = d, mx - mn
        for t in range(lo, hi):
            keys[perm[t]] = pts[perm[t], axis]
        mid = (lo + hi) // 2
        _select(keys, perm, lo, hi, mid)
        dim_[node], val_[node] = axis, keys[perm[mid]]
        left[node] = count
        lo_[count], hi_[count], lo_[count + 1], hi_[count + 1] = lo, mid, mid, hi
        stack[sp], stack[sp + 1] = count, count + 1
        sp += 2
        count += 2
    for t in range(n):
        p = perm[t]
        tx[t], ty[t], tz[t] = pts[p, 0], pts[p, 1], pts[p, 2]
    return count


@njit(cache=True, boundscheck=False, inline="always")
def _insert(dk, ik, d, p, k):
    """Insert ``(d, p)`` into the sorted ``dk``/``ik`` of length k if it beats the k-th."""
    last = k - 1
    if d > dk[last] or (d == dk[last] and p > ik[last]):
        return
    j = last
    while j > 0 and (dk[j - 1] > d or (dk[j - 1] == d and ik[j - 1] > p)):
        dk[j] = dk[j - 1]
        ik[j] = ik[j - 1]
        j -= 1
    dk[j] = d
    ik[j] = p


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
        if child < 0:
            for t in range(lo_[node], hi_[node]):
                dx = tx[t] - qx
                dy = ty[t] - qy
                dz = tz[t] - qz
                _insert(dk, ik, dx * dx + dy * dy + dz * dz, perm[t], k)
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


@njit(cache=True)
def _build_cloud(ref, ref_len, leaf, trees, b):
    perm, lo_, hi_, dim_, val_, left, tx, ty, tz = trees
    build(ref[b], ref_len[b], leaf, perm[b], lo_[b], hi_[b], dim_[b], val_[b], left[b],
          tx[b], ty[b], tz[b])


@njit(cache=True)
def _cloud_tree(trees, b):
    perm, lo_, hi_, dim_, val_, left, tx, ty, tz = trees
    return (perm[b], lo_[b], hi_[b], dim_[b], val_[b], left[b], tx[b], ty[b], tz[b])


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
    perm, tx, ty, tz = tree[0], tree[6], tree[7], tree[8]
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

    ``trees`` holds preallocated per-cloud arrays (see ``allocate_trees``).
    """
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


def allocate_trees(batch: int, n: int, leaf: int, dtype) -> tuple:
    """Per-cloud tree arrays for ``batch`` clouds of up to ``n`` points."""
    nodes = max_nodes(n, leaf)
    i64 = np.int64
    return (np.empty((batch, n), i64), np.empty((batch, nodes), i64), np.empty((batch, nodes), i64),
            np.empty((batch, nodes), i64), np.empty((batch, nodes), dtype),
            np.empty((batch, nodes), i64), np.empty((batch, n), dtype),
            np.empty((batch, n), dtype), np.empty((batch, n), dtype))
