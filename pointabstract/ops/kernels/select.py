"""Row-wise k-smallest selection over a dense distance matrix (feature-space KNN on CPU).

The caller computes approximate squared distances ``|q|^2 + |r|^2 - 2 q.r`` with one batched
matrix product (BLAS) and, per query, a bound ``slack`` on their error. Per row this kernel
keeps the k smallest approximate distances (a sampled threshold and a branch-free filter
first, then a quickselect over the few survivors), computes those k distances exactly as
``sum_c (q_c - r_c)^2`` and sorts them by ``(distance, index)``. Then every other point whose
approximate distance is within ``slack`` of the exact k-th distance (a near-tie, or a whole
row when the points are far from the origin and the product has lost its digits) is checked
exactly and taken when it beats the k-th. So the result is brute force's, up to the order in
which channels are summed (the sum is vectorised).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(cache=True, boundscheck=False)
def _filter(a, n, thr, buf):
    """Indices j (ascending) with ``a[j] <= thr`` into ``buf``, branch-free; returns count."""
    count = 0
    for j in range(n):
        buf[count] = j
        count += a[j] <= thr
    return count


@njit(cache=True, boundscheck=False)
def _candidates(a, n, k, buf):
    """Indices j (ascending) with ``a[j] <= t`` for a threshold t keeping at least k of them;
    returns (count, t): every index left out has ``a[j] > t``.

    t comes from 64 evenly spaced samples: first the rank expected to keep about 1.25 k
    entries, then (if that kept fewer than k) about 2.5 k, then everything.
    """
    if n < 128 or n <= 4 * k:
        return _filter(a, n, np.inf, buf), np.inf
    stride = n // 64
    r1 = min(63, (5 * k * 64) // (4 * n) + 2)
    r2 = min(63, (5 * k * 64) // (2 * n) + 2)
    best = np.full(r2, np.inf, a.dtype)  # the r2 smallest samples, sorted
    for s in range(64):
        v = a[s * stride]
        if v < best[r2 - 1]:
            j = r2 - 1
            while j > 0 and best[j - 1] > v:
                best[j] = best[j - 1]
                j -= 1
            best[j] = v
    t = best[r1 - 1]
    count = _filter(a, n, t, buf)
    if count < k:
        t = best[r2 - 1]
        count = _filter(a, n, t, buf)
    if count < k:
        t = np.inf
        count = _filter(a, n, t, buf)
    return count, t


@njit(cache=True, boundscheck=False)
def _select_pairs(v, idx, lo, hi, kth):
    """Quickselect on values ``v[lo:hi]`` moving ``idx`` along (direct, not indirect, keys)."""
    while hi - lo > 1:
        a, b, c = v[lo], v[(lo + hi - 1) // 2], v[hi - 1]
        p = max(min(a, b), min(max(a, b), c))
        i, j = lo, hi - 1
        while i <= j:
            while v[i] < p:
                i += 1
            while v[j] > p:
                j -= 1
            if i <= j:
                v[i], v[j] = v[j], v[i]
                idx[i], idx[j] = idx[j], idx[i]
                i += 1
                j -= 1
        if kth <= j:
            hi = j + 1
        elif kth >= i:
            lo = i
        else:
            return


@njit(cache=True, boundscheck=False, fastmath={"reassoc", "contract"})
def _exact(q, rj):
    """sum_c (q_c - r_c)^2, reassociated so it vectorises (C > 3 has no reference order)."""
    d = q[0] * 0  # zero in the input dtype
    for c in range(q.shape[0]):
        t = q[c] - rj[c]
        d += t * t
    return d


@njit(cache=True, boundscheck=False)
def _insert(d, j, k, dist, idx):
    """Put (d, j) into the sorted k best ``dist`` / ``idx`` if it beats the last one."""
    if d > dist[k - 1] or (d == dist[k - 1] and j > idx[k - 1]):
        return
    p = k - 1
    while p > 0 and (dist[p - 1] > d or (dist[p - 1] == d and idx[p - 1] > j)):
        dist[p] = dist[p - 1]
        idx[p] = idx[p - 1]
        p -= 1
    dist[p] = d
    idx[p] = j


@njit(cache=True, boundscheck=False)
def _row(approx, slack, q, r, n, k, dist, idx, buf, taken):
    """k nearest of one query row: ``approx`` (N,), ``q`` (C,), ``r`` (N, C).

    ``taken`` (N,) is all False on entry and on exit.
    """
    count, t = _candidates(approx, n, k, buf)
    kk = min(k, n)
    if kk < count:  # the kk smallest candidates (unordered) into buf[:kk], the rest after
        vals = np.empty(count, approx.dtype)
        for s in range(count):
            vals[s] = approx[buf[s]]
        _select_pairs(vals, buf, 0, count, kk - 1)
    dist[kk:] = np.inf
    idx[kk:] = -1
    for s in range(kk):  # exact distances, insertion-sorted by (distance, index)
        j = buf[s]
        d = _exact(q, r[j])
        p = s
        while p > 0 and (dist[p - 1] > d or (dist[p - 1] == d and idx[p - 1] > j)):
            dist[p] = dist[p - 1]
            idx[p] = idx[p - 1]
            p -= 1
        dist[p] = d
        idx[p] = j
    if kk == n:
        return
    # points left out that may still be nearer or tied: approx within slack of the k-th
    thr = dist[k - 1] + slack
    if t > thr:  # only other candidates can be (the rest have approx > t)
        for s in range(kk, count):
            j = buf[s]
            if approx[j] <= thr:
                _insert(_exact(q, r[j]), j, k, dist, idx)
        return
    for s in range(kk):  # a wide bound (points far from the origin): scan the whole row
        taken[buf[s]] = True
    cand = buf[:kk].copy()
    count = _filter(approx, n, thr, buf)
    for s in range(count):
        j = buf[s]
        if not taken[j]:
            _insert(_exact(q, r[j]), j, k, dist, idx)
    for j in cand:
        taken[j] = False


@njit(cache=True)
def _rows(approx, slack, query, query_len, ref, ref_len, k, dist, idx, b, i0, i1):
    buf = np.empty(ref.shape[1], np.int64)
    taken = np.zeros(ref.shape[1], np.bool_)
    for i in range(i0, min(i1, query_len[b])):
        _row(approx[b, i], slack[b, i], query[b, i], ref[b], ref_len[b], k, dist[b, i],
             idx[b, i], buf, taken)


_ROWS = 64  # rows per work item


@njit(cache=True, parallel=True)
def topk_par(approx, slack, query, query_len, ref, ref_len, k, dist, idx):
    """approx: (B, M, N); slack: (B, M) its error bound; query: (B, M, C); ref: (B, N, C);
    dist, idx: (B, M, K), filled in place."""
    per = (approx.shape[1] + _ROWS - 1) // _ROWS
    for w in prange(approx.shape[0] * per):
        b, c = w // per, w % per
        _rows(approx, slack, query, query_len, ref, ref_len, k, dist, idx, b, c * _ROWS,
              (c + 1) * _ROWS)


@njit(cache=True)
def topk_ser(approx, slack, query, query_len, ref, ref_len, k, dist, idx):
    """Serial twin of :func:`topk_par`."""
    for b in range(approx.shape[0]):
        _rows(approx, slack, query, query_len, ref, ref_len, k, dist, idx, b, 0, approx.shape[1])
