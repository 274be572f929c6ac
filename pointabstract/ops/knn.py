"""K nearest neighbours in xyz (C = 3) and in feature space (any C)."""

from __future__ import annotations

import numpy as np
import torch

from .. import _validate as V
from ._backend import resolve
from ._dist import empty_result, overflowing, sort_exact, squared_norm, take_rows, to_input, widen, work_dtype
from ._knn_dense import approx_dist2, approx_error, knn_torch, sq_norms
from .kernels import to_numpy

__all__ = ["knn", "knn_naive"]

LEAF = 32  # KD-tree leaf size (numba backend, shared with ball_query); 16-32 measured equally fast


def knn(query: torch.Tensor, ref: torch.Tensor, k: int, *,
        query_lengths: torch.Tensor | None = None, ref_lengths: torch.Tensor | None = None,
        backend: str = "auto") -> tuple[torch.Tensor, torch.Tensor]:
    """The ``k`` nearest ``ref`` points of every ``query`` point, sorted by distance.

    Brute-force semantics: neighbours are ordered by ``(squared distance, index)``, so equal
    distances go to the lower index, as in :func:`knn_naive`. The ``"numba"`` and ``"torch"``
    backends return exactly that; library backends find the same distances but may order an
    exact tie differently. In xyz (C = 3) distances are summed x, y, z like the reference's,
    so results match it bit for bit. In feature space (C != 3) the channels may be summed in
    another order than the reference's: distances agree to a few ulps, and two neighbours
    whose distances tie within that rounding may swap places; matrix-product distances are
    only a filter there, every neighbour is confirmed with its own exact distance.

    The KD-tree keeps identical points in one leaf and reads only as many of them as a
    query needs, so duplicate-heavy clouds cost about what distinct ones do. Pass the same
    tensor as ``query`` and ``ref`` for a self-KNN: each point is its own first neighbour
    unless a lower-index point sits at the same spot. Clouds whose squared distances would
    overflow the dtype (coordinates beyond ``sqrt(dtype max / C) / 4``: 2.7e18 in float32
    for C = 3) are ranked in float64, scaled by a power of two if needed: the indices are
    the true neighbours, and ``dist2`` holds the true squared distances rounded to the
    dtype (``inf`` where they exceed it).

    Args:
        query: (B, M, C) query points or features.
        ref: (B, N, C) reference points or features, same B, C, dtype and device.
        k: neighbours per query, 1 <= k <= N.
        query_lengths: (B,) int64 valid queries per cloud; rows past it are -1 / inf.
        ref_lengths: (B,) int64 valid reference points per cloud; when ``ref_lengths[b] < k``
            the missing neighbours are ``idx = -1`` and ``dist2 = inf``.
        backend: ``"auto"``, ``"numba"`` (KD-tree for C = 3, BLAS distances plus compiled
            selection otherwise), ``"pykdtree"``, ``"scipy"``, ``"open3d"``,
            ``"torch_cluster"`` or ``"torch"`` (matmul distances with an exactness check,
            CPU and CUDA).

    Returns:
        dist2: (B, M, K) squared Euclidean distances, ascending along K; differentiable
            with respect to ``query`` and ``ref`` (recomputed from the gathered points).
        idx: (B, M, K) int64; ``idx[b, m, k]`` indexes ``ref[b]``.
    """
    V.check_cloud("query", query, dim=None, finite=False)
    extent = V.finite_extent("query", query)
    V.check_cloud("ref", ref, dim=None, finite=False)
    extent = extent if ref is query else max(extent, V.finite_extent("ref", ref))
    V.check_same_batch("query", query, "ref", ref)
    batch, m, channels = query.shape
    n = ref.shape[1]
    k = V.check_count("k", k, n)
    qlen = V.check_lengths("query_lengths", query_lengths, batch, m, query.device)
    self_query = query is ref and query_lengths is ref_lengths
    rlen = V.check_lengths("ref_lengths", ref_lengths, batch, n, ref.device)
    search = _BACKENDS[resolve("knn", backend, query.device, channels=channels)]
    huge = overflowing(query, ref, extent=extent)
    q = query.detach()
    r = q if ref is query else ref.detach()
    if huge is not None:  # blanked here, ranked in float64 below: their distances overflow
        q, r = (x.masked_fill(huge.view(-1, 1, 1), 0) for x in (q, r))
    dist2, idx = search(q, r, k, qlen, rlen, self_query)
    if huge is not None:
        hb = huge.nonzero().flatten()
        (q, r), scale = widen(query[hb], ref[hb])
        d, i = search(q, r, k, qlen[hb], rlen[hb], self_query)
        dist2, idx = dist2.clone(), idx.clone()
        dist2[hb] = (d / scale.to(d.device).view(-1, 1, 1) ** 2).to(dist2.dtype)
        idx[hb] = i
    if query.requires_grad or ref.requires_grad:
        dist2 = _differentiable_dist2(query, ref, idx, dist2)
    return dist2, idx


def knn_naive(query: torch.Tensor, ref: torch.Tensor, k: int, *,
              query_lengths: torch.Tensor | None = None,
              ref_lengths: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Reference KNN (tests only): every distance, then a stable full sort of each row."""
    batch, m, _ = query.shape
    n = ref.shape[1]
    qlen = [m] * batch if query_lengths is None else query_lengths.tolist()
    rlen = [n] * batch if ref_lengths is None else ref_lengths.tolist()
    dist2 = torch.full((batch, m, k), float("inf"), dtype=query.dtype)
    idx = torch.full((batch, m, k), -1, dtype=torch.int64)
    for b in range(batch):
        q, r = query[b, : qlen[b]].cpu(), ref[b, : rlen[b]].cpu()
        scale = 1.0
        if overflowing(query[b : b + 1], ref[b : b + 1]) is not None:  # see ops._dist
            (q, r), scale = widen(q[None], r[None])
            q, r, scale = q[0], r[0], float(scale[0])
        d = squared_norm(q[:, None, :] - r[None, :, :])  # (M, N)
        d_sorted, order = torch.sort(d, dim=1, stable=True)  # equal distances: lower index first
        kk = min(k, rlen[b])
        dist2[b, : qlen[b], :kk] = d_sorted[:, :kk] / scale**2
        idx[b, : qlen[b], :kk] = order[:, :kk]
    return dist2.to(query.device), idx.to(query.device)


def _differentiable_dist2(query, ref, idx, dist2):
    """Recompute dist2 from gathered points so gradients reach query and ref."""
    d = squared_norm(query.unsqueeze(2) - take_rows(ref, idx))  # (B, M, K)
    return torch.where(idx >= 0, d, dist2)


# --- backends: (query, ref, k, query_lengths, ref_lengths, self_query) -> (dist2, idx) ------


def _knn_numba(query, ref, k, qlen, rlen, self_query):
    from .kernels import kdtree, run, select

    dist2, idx = empty_result(query, k)
    d_np, i_np = dist2.numpy(), idx.numpy()
    q_np, r_np = to_numpy(query), to_numpy(ref)
    ql_np, rl_np = qlen.cpu().numpy(), rlen.cpu().numpy()
    if query.shape[-1] == 3:
        trees = kdtree.allocate_trees(ref.shape[0], ref.shape[1], LEAF, r_np.dtype)
        run(kdtree.query_par, kdtree.query_ser, q_np, ql_np, r_np, rl_np, LEAF, self_query,
            0, k, 0.0, trees, d_np, i_np, work=q_np.shape[0] * q_np.shape[1] * (k + LEAF) * 8)
    else:  # matmul distances filter, the kernel checks exactly (see _knn_dense)
        q, r = torch.from_numpy(q_np), torch.from_numpy(r_np)
        qq = sq_norms(q)
        rr = qq if query is ref else sq_norms(r)
        approx = approx_dist2(q, r, qq, rr).numpy()
        slack = approx_error(q, qq, rr, torch.arange(r.shape[1]) < rlen.cpu()[:, None]).numpy()
        run(select.topk_par, select.topk_ser, approx, slack, q_np, ql_np, r_np, rl_np, k,
            d_np, i_np, work=approx.size)
    return to_input(dist2, idx, query)


def _knn_per_cloud(query, ref, k, qlen, rlen, search):
    """Run ``search(ref_np, query_np, kk) -> idx (M, kk)`` per cloud; distances recomputed."""
    _, idx = empty_result(query, k)
    q_np, r_np = to_numpy(query), to_numpy(ref)
    for b, (mb, nb) in enumerate(zip(qlen.tolist(), rlen.tolist())):
        kk = min(k, nb)
        found = np.asarray(search(r_np[b, :nb], q_np[b, :mb], kk), dtype=np.int64).reshape(mb, kk)
        idx[b, :mb, :kk] = torch.from_numpy(found)
    return _sorted_exact(query, ref, idx)


def _sorted_exact(query, ref, idx):
    """Libraries return indices only: exact distances and (distance, index) order by us."""
    work = work_dtype(query.dtype)
    dist2, idx = sort_exact(query.to(idx.device, work), ref.to(idx.device, work), idx)
    return to_input(dist2, idx, query)


def _knn_pykdtree(query, ref, k, qlen, rlen, self_query):
    from pykdtree.kdtree import KDTree

    def search(r, q, kk):
        return KDTree(r, leafsize=16).query(q, k=kk, sqr_dists=True)[1]

    return _knn_per_cloud(query, ref, k, qlen, rlen, search)


def _knn_scipy(query, ref, k, qlen, rlen, self_query):
    from scipy.spatial import cKDTree

    def search(r, q, kk):
        return cKDTree(r).query(q, k=kk, workers=torch.get_num_threads())[1]

    return _knn_per_cloud(query, ref, k, qlen, rlen, search)


def _knn_open3d(query, ref, k, qlen, rlen, self_query):
    import open3d as o3d

    def search(r, q, kk):
        tree = o3d.geometry.KDTreeFlann(np.asarray(r, dtype=np.float64).T)
        return [list(tree.search_knn_vector_xd(p.astype(np.float64), kk)[1]) for p in q]

    return _knn_per_cloud(query, ref, k, qlen, rlen, search)


def _knn_torch_cluster(query, ref, k, qlen, rlen, self_query):
    import torch_cluster

    _, idx = empty_result(query, k)
    idx = idx.to(query.device)
    for b, (mb, nb) in enumerate(zip(qlen.tolist(), rlen.tolist())):
        kk = min(k, nb)
        row, col = torch_cluster.knn(ref[b, :nb], query[b, :mb], kk)  # row: query, col: ref
        idx[b, :mb, :kk] = col.view(mb, kk)
    return _sorted_exact(query, ref, idx)


_BACKENDS = {"numba": _knn_numba, "pykdtree": _knn_pykdtree, "scipy": _knn_scipy,
             "open3d": _knn_open3d, "torch_cluster": _knn_torch_cluster, "torch": knn_torch}
