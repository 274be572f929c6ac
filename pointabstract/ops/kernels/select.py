"""Row-wise k-smallest selection over a dense distance matrix (feature-space KNN on CPU).

The caller computes approximate squared distances ``|q|^2 + |r|^2 - 2 q.r`` with one batched
matrix product (BLAS); per row this kernel quickselects the k smallest, recomputes those k
distances exactly as ``sum_c (q_c - r_c)^2`` and sorts them by ``(distance, index)``. The
returned distances are therefore exact; only which of two candidates whose distances differ
by less than the product's rounding (about 1e-6 relative) ends up inside the k can differ
from brute force.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .kdtree import _select


@njit(cache=True, boundscheck=False)
def _row(approx, q, r, n, k, dist, idx, buf):
    """k nearest of one query row: ``approx`` (N,), ``q`` (C,), ``r`` (N, C)."""
    kk = min(k, n)
    for j in range(n):
        buf[j] = j
    if kk < n:
        _select(approx, buf, 0, n, kk - 1)
    c_dim = q.shape[0]
    for s in range(kk):  # exact distances, then insertion sort by (distance, index)
        j = buf[s]
        d = (q[0] - r[j, 0]) * (q[0] - r[j, 0])
        for c in range(1, c_dim):
            t = q[c] - r[j, c]
            d += t * t
        p = s
        while p > 0 and (dist[p - 1] > d or (dist[p - 1] == d and idx[p - 1] > j)):
            dist[p] = dist[p - 1]
            idx[p] = idx[p - 1]
            p -= 1
        dist[p] = d
        idx[p] = j
    for s in range(kk, k):
        dist[s] = np.inf
        idx[s] = -1


@njit(cache=True)
def _rows(approx, query, query_len, ref, ref_len, k, dist, idx, b, i0, i1):
    buf = np.empty(ref.shape[1], np.int64)
    for i in range(i0, min(i1, query_len[b])):
        _row(approx[b, i], query[b, i], ref[b], ref_len[b], k, dist[b, i], idx[b, i], buf)


_ROWS = 64  # rows per work item


@njit(cache=True, parallel=True)
def topk_par(approx, query, query_len, ref, ref_len, k, dist, idx):
    """approx: (B, M, N); query: (B, M, C); ref: (B, N, C); dist, idx: (B, M, K) in place."""
    per = (approx.shape[1] + _ROWS - 1) // _ROWS
    for w in prange(approx.shape[0] * per):
        b, c = w // per, w % per
        _rows(approx, query, query_len, ref, ref_len, k, dist, idx, b, c * _ROWS, (c + 1) * _ROWS)


@njit(cache=True)
def topk_ser(approx, query, query_len, ref, ref_len, k, dist, idx):
    """Serial twin of :func:`topk_par`."""
    for b in range(approx.shape[0]):
        _rows(approx, query, query_len, ref, ref_len, k, dist, idx, b, 0, approx.shape[1])
