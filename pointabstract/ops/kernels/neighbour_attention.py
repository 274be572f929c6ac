"""Fused neighbour attention products on CPU (numba): no (B, M, K, C) tensor is formed.

With ``kv`` (B, N, 2 H D) holding every point's keys (channels [0, H D)) then values, and
``idx`` (B, M, K) the inputs each query attends to:

- ``dot``:  ``logits[b, m, k, h] = sum_d q[b, m, h, d] * key[b, idx[b, m, k], h, d]``
- ``sum``:  ``out[b, m, h, d] = sum_k w[b, m, k, h] * value[b, idx[b, m, k], h, d]``

and their backward passes. A negative index (``-1``, the padding of ``knn`` / ``ball_query``)
is a missing neighbour: its logit is 0, it adds nothing to ``out`` and receives no gradient
(numba would otherwise wrap it around to the last row). Forward work items are (cloud, query
chunk); backward passes that scatter into ``kv`` split work by (cloud, head), whose channel
slices never overlap, so no two threads write the same memory.
"""

from __future__ import annotations

from numba import njit, prange

_CHUNK = 64


@njit(cache=True, boundscheck=False)
def _dot_rows(q, kv, idx, out, b, m0, m1):
    heads, dim = q.shape[2], q.shape[3]
    kvb, qb, ib, ob = kv[b], q[b], idx[b], out[b]  # one cloud's views: no per-element 3-D indexing
    for m in range(m0, m1):
        for k in range(ib.shape[1]):
            row = ib[m, k]
            if row < 0:
                for h in range(heads):
                    ob[m, k, h] = 0
                continue
            krow = kvb[row]
            for h in range(heads):
                qv = qb[m, h]
                base = h * dim
                s = qv[0] * 0
                for d in range(dim):
                    s += qv[d] * krow[base + d]
                ob[m, k, h] = s


@njit(cache=True, boundscheck=False)
def _sum_rows(w, kv, idx, out, b, m0, m1, offset):
    heads, dim = out.shape[2], out.shape[3]
    kvb, wb, ib, ob = kv[b], w[b], idx[b], out[b]
    for m in range(m0, m1):
        om = ob[m]
        for h in range(heads):
            for d in range(dim):
                om[h, d] = 0
        for k in range(ib.shape[1]):
            row = ib[m, k]
            if row < 0:
                continue
            vrow = kvb[row]
            for h in range(heads):
                wk = wb[m, k, h]
                oh = om[h]
                base = offset + h * dim
                for d in range(dim):
                    oh[d] += wk * vrow[base + d]


@njit(cache=True, parallel=True)
def dot_forward(q, kv, idx, out):
    """q: (B, M, H, D), kv: (B, N, 2 H D), idx: (B, M, K) -> out (B, M, K, H), in place."""
    per = (q.shape[1] + _CHUNK - 1) // _CHUNK
    for w in prange(q.shape[0] * per):
        b, c = w // per, w % per
        _dot_rows(q, kv, idx, out, b, c * _CHUNK, min(q.shape[1], (c + 1) * _CHUNK))


@njit(cache=True, parallel=True)
def sum_forward(w, kv, idx, out):
    """w: (B, M, K, H), kv: (B, N, 2 H D), idx: (B, M, K) -> out (B, M, H, D), in place."""
    offset = out.shape[2] * out.shape[3]  # values start after the keys
    per = (w.shape[1] + _CHUNK - 1) // _CHUNK
    for i in prange(w.shape[0] * per):
        b, c = i // per, i % per
        _sum_rows(w, kv, idx, out, b, c * _CHUNK, min(w.shape[1], (c + 1) * _CHUNK), offset)


@njit(cache=True, parallel=True)
def dot_backward(grad, q, kv, idx, grad_q, grad_kv):
    """d logits -> d q (B, M, H, D) and d keys (into grad_kv[..., :H D], accumulated)."""
    batch, m_count, heads, dim = q.shape
    for i in prange(batch * heads):
        b, h = i // heads, i % heads
        base = h * dim
        kvb, gkvb, qb, gqb, ib, gb = kv[b], grad_kv[b], q[b], grad_q[b], idx[b], grad[b]
        for m in range(m_count):
            qv, gq = qb[m, h], gqb[m, h]
            for d in range(dim):
                gq[d] = 0
            for k in range(ib.shape[1]):
                row = ib[m, k]
                if row < 0:
                    continue
                g = gb[m, k, h]
                krow, grow = kvb[row, base:base + dim], gkvb[row, base:base + dim]
                for d in range(dim):
                    gq[d] += g * krow[d]
                    grow[d] += g * qv[d]


@njit(cache=True, parallel=True)
def sum_backward(grad, w, kv, idx, grad_w, grad_kv):
    """d out -> d w (B, M, K, H) and d values (into grad_kv[..., H D:], accumulated)."""
    batch, m_count, heads, dim = grad.shape
    offset = heads * dim
    for i in prange(batch * heads):
        b, h = i // heads, i % heads
        base = offset + h * dim
        kvb, gkvb, wb, gwb, ib, gb = kv[b], grad_kv[b], w[b], grad_w[b], idx[b], grad[b]
        for m in range(m_count):
            go = gb[m, h]
            for k in range(ib.shape[1]):
                row = ib[m, k]
                if row < 0:
                    gwb[m, k, h] = 0
                    continue
                wk = wb[m, k, h]
                vrow, grow = kvb[row, base:base + dim], gkvb[row, base:base + dim]
                s = go[0] * 0
                for d in range(dim):
                    s += go[d] * vrow[d]
                    grow[d] += wk * go[d]
                gwb[m, k, h] = s


# Serial twins for one-thread contexts (see kernels.run); compiled on demand, not cached, so
# their cache entries never mix with the parallel versions'.
dot_forward_ser = njit(dot_forward.py_func)
sum_forward_ser = njit(sum_forward.py_func)
dot_backward_ser = njit(dot_backward.py_func)
sum_backward_ser = njit(sum_backward.py_func)
