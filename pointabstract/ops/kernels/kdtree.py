"""KD-tree k-nearest-neighbour and ball queries in 3D, compiled by numba, over the trees of
:mod:`.kdtree_build` (one per cloud, built here before the queries run).

Results are exact and deterministic: candidates are ordered by ``(squared distance, index)``
and a node is pruned only when its lower bound is strictly larger than the current k-th
distance, so ties resolve to the lowest index exactly as the brute-force reference does.
Squared distances are ``dx*dx + dy*dy + dz*dz`` in the input dtype, the reference's order.
Missing neighbours (a cloud shorter than k, an empty ball) are ``idx = -1``, ``dist2 = inf``.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .kdtree_build import BIG, STACK, KDTrees, allocate_trees, build, build_par

__all__ = ["allocate_trees", "query_par", "query_ser"]


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
    nstack = np.empty(STACK, np.int64)
    bstack = np.empty(STACK, dist.dtype)
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
    if ref.shape[0] < 4 and ref.shape[1] >= BIG:
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
