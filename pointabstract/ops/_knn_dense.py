"""Exact KNN from matrix-product distances: the ``"torch"`` backend of ``knn`` and the error
bound that the numba feature-space search shares.

``|q|^2 + |r|^2 - 2 q.r`` costs one batched matrix product but carries a rounding error that
grows with the magnitude of the points, not with their distance. Both users therefore treat
it only as a filter: a point whose approximate distance, less the error bound, exceeds the
exact k-th distance cannot be a neighbour (nor tie with one); every other point is checked
with its exact distance. Results equal brute force, ties to the lowest index.
"""

from __future__ import annotations

import torch

from ._dist import _CHUNK, sort_exact, squared_norm, work_dtype


def sq_norms(x: torch.Tensor) -> torch.Tensor:
    """(B, N) ``|x|^2`` of every row of x (B, N, C)."""
    return (x * x).sum(-1)


def approx_dist2(q: torch.Tensor, r: torch.Tensor, qq: torch.Tensor, rr: torch.Tensor) -> torch.Tensor:
    """(B, M, N) ``|q|^2 + |r|^2 - 2 q.r`` for q (B, M, C), r (B, N, C) and their squared
    norms qq (B, M), rr (B, N): one batched matmul, in the dtype of q and r also under autocast
    (whose bfloat16 matmul would break :func:`approx_error`'s bound, and the numpy view on CPU)."""
    with torch.autocast(q.device.type, enabled=False):
        return torch.baddbmm(qq.unsqueeze(2) + rr.unsqueeze(1), q, r.transpose(1, 2), alpha=-2.0)


def approx_error(q: torch.Tensor, qq: torch.Tensor, rr: torch.Tensor,
                 ref_valid: torch.Tensor) -> torch.Tensor:
    """(B, M) bound on |approximate - exact| squared distance for every query.

    Rounding of |q|^2, |r|^2 and q.r in a C-term sum is at most about C * eps times
    |q|^2 + |r|^2 + 2 |q||r|; a factor 4 covers the final additions and blocked matmuls.
    eps follows the matmul precision torch is set to use (TF32 / bf16 when allowed).
    """
    eps = torch.finfo(q.dtype).eps
    if q.dtype == torch.float32:
        precision = torch.get_float32_matmul_precision()
        if q.is_cuda and torch.backends.cuda.matmul.allow_tf32 or precision == "high":
            eps = 2.0 ** -10
        if precision == "medium":
            eps = 2.0 ** -7
    rr = rr.masked_fill(~ref_valid, 0).amax(-1, keepdim=True)  # (B, 1)
    return 4.0 * (q.shape[-1] + 2) * eps * (qq + rr + 2 * (qq * rr).sqrt())


def knn_torch(query, ref, k, qlen, rlen, self_query):
    """Exact KNN in plain torch (CPU and CUDA): matmul distances pick candidates, then check.

    1. Approximate distances (one batched matmul per chunk of queries) select the
       ``k + slack`` nearest candidates of every query.
    2. Their exact distances are sorted by (distance, index).
    3. A query is proven done when the smallest approximate distance left out, minus the
       error bound, exceeds its exact k-th distance: then no excluded point can be nearer or
       tied. The few queries that fail the check are redone by exact brute force.
    """
    batch, m, _ = query.shape
    n = ref.shape[1]
    dev = query.device
    work = work_dtype(query.dtype)
    q, r = query.to(work), ref.to(work)
    ref_valid = torch.arange(n, device=dev) < rlen[:, None]  # (B, N)
    cand = min(n, k + max(8, k // 2))
    step = max(1, _CHUNK // max(1, batch * n))
    qq, rr = sq_norms(q), sq_norms(r)
    idxs, lasts = [], []
    for s in range(0, m, step):
        a = approx_dist2(q[:, s : s + step], r, qq[:, s : s + step], rr)
        a = a.masked_fill_(~ref_valid[:, None, :], float("inf"))
        a_c, i_c = torch.topk(a, cand, dim=-1, largest=False, sorted=True)
        idxs.append(i_c.masked_fill(torch.isinf(a_c), -1))
        lasts.append(a_c[..., -1])
    idx = torch.cat(idxs, 1)  # (B, M, cand), -1 where the ref point is padding
    dist2, idx = sort_exact(q, r, idx)
    dist2, idx = dist2[..., :k], idx[..., :k]
    q_valid = torch.arange(m, device=dev) < qlen[:, None]  # (B, M)
    if cand < n:  # some valid points may have been left out: prove they are farther
        excluded = torch.cat(lasts, 1)  # smallest approximate distance left out (lower bound)
        bound = approx_error(q, qq, rr, ref_valid)
        unproven = q_valid & (cand < rlen[:, None]) & ~(excluded - bound > dist2[..., -1])
        if bool(unproven.any()):
            bb, mm = unproven.nonzero(as_tuple=True)
            dist2[bb, mm], idx[bb, mm] = _rows_exact(q, r, ref_valid, bb, mm, k)
    idx = idx.masked_fill(~q_valid[..., None], -1)
    dist2 = dist2.masked_fill(idx < 0, float("inf"))
    return dist2.to(query.dtype), idx


def _rows_exact(q, r, ref_valid, bb, mm, k):
    """Brute force for the queries (bb[i], mm[i]): (P, k) distances and indices."""
    out_d, out_i = [], []
    n = r.shape[1]
    step = max(1, _CHUNK // max(1, n * q.shape[-1]))
    for s in range(0, bb.numel(), step):
        b, i = bb[s : s + step], mm[s : s + step]
        d = squared_norm(r[b] - q[b, i][:, None, :]).masked_fill(~ref_valid[b], float("inf"))
        d, order = torch.sort(d, dim=-1, stable=True)  # ties: lower index first
        out_d.append(d[:, :k])
        out_i.append(order[:, :k].masked_fill(torch.isinf(d[:, :k]), -1))
    return torch.cat(out_d), torch.cat(out_i)
