"""Ball query: up to k reference points within a radius of each query (PointNet++ grouping)."""

from __future__ import annotations

import numpy as np
import torch

from . import _validate as V
from ._backend import resolve
from .kernels import to_numpy
from .knn import _back, _empty_result, squared_norm

__all__ = ["ball_query", "ball_query_naive"]


def ball_query(query: torch.Tensor, ref: torch.Tensor, radius: float, k: int, *,
               query_lengths: torch.Tensor | None = None,
               ref_lengths: torch.Tensor | None = None, pad: str = "first",
               backend: str = "auto") -> tuple[torch.Tensor, torch.Tensor]:
    """The first ``k`` reference points (lowest indices) within ``radius`` of each query.

    The PointNet++ / pytorch3d convention: neighbours are the lowest-index points with
    ``dist2 <= radius**2``, listed in increasing index order (not by distance).

    Padding when fewer than ``k`` points are inside the ball:

    - ``pad="first"`` (PointNet++ grouping): the empty slots repeat the first neighbour, so
      every slot is a valid index and max-pooling over K is unaffected;
    - ``pad="invalid"`` (pytorch3d): the empty slots are ``idx = -1``, ``dist2 = inf``.

    A query with no point inside its ball gets ``idx = -1`` and ``dist2 = inf`` in every slot
    in both modes (it cannot happen when the queries are a subset of ``ref``).

    Args:
        query: (B, M, 3) ball centres.
        ref: (B, N, 3) points to search.
        radius: ball radius (> 0), in the units of the coordinates.
        k: at most this many neighbours per query, 1 <= k <= N.
        query_lengths / ref_lengths: (B,) int64 valid points per cloud.
        pad: ``"first"`` or ``"invalid"``, see above.
        backend: ``"auto"``, ``"numba"``, ``"scipy"`` or ``"torch"``.

    Returns:
        dist2: (B, M, K) squared distances of the listed neighbours.
        idx: (B, M, K) int64 indices into ``ref[b]``.
    """
    V.check_cloud("query", query)
    V.check_cloud("ref", ref)
    V.check_same_batch("query", query, "ref", ref)
    batch, m, _ = query.shape
    k = V.check_count("k", k, ref.shape[1])
    if isinstance(radius, bool) or not isinstance(radius, (int, float)) or not radius > 0 \
            or not np.isfinite(radius):
        raise ValueError(f"radius must be a positive finite number, got {radius!r}")
    V.check_choice("pad", pad, ("first", "invalid"))
    qlen = V.check_lengths("query_lengths", query_lengths, batch, m, query.device)
    rlen = V.check_lengths("ref_lengths", ref_lengths, batch, ref.shape[1], ref.device)
    self_query = query is ref and query_lengths is ref_lengths
    name = resolve("ball_query", backend, query.device)
    dist2, idx = _BACKENDS[name](query.detach(), ref.detach(), float(radius), k, qlen, rlen,
                                 self_query)
    if pad == "first":
        empty = idx < 0
        idx = torch.where(empty, idx[..., :1], idx)
        dist2 = torch.where(empty, dist2[..., :1], dist2)
    return dist2, idx


def ball_query_naive(query, ref, radius, k, *, query_lengths=None, ref_lengths=None):
    """Reference (tests only) with ``pad="invalid"`` semantics."""
    batch, m, _ = query.shape
    qlen = [m] * batch if query_lengths is None else query_lengths.tolist()
    rlen = [ref.shape[1]] * batch if ref_lengths is None else ref_lengths.tolist()
    dist2 = torch.full((batch, m, k), float("inf"), dtype=query.dtype)
    idx = torch.full((batch, m, k), -1, dtype=torch.int64)
    r2 = torch.tensor(radius, dtype=query.dtype) ** 2  # the test is done in the input dtype
    for b in range(batch):
        d = squared_norm(query[b, : qlen[b], None].cpu() - ref[b, None, : rlen[b]].cpu())
        for i in range(qlen[b]):
            inside = torch.nonzero(d[i] <= r2).flatten()[:k]  # lowest indices first
            idx[b, i, : len(inside)] = inside
            dist2[b, i, : len(inside)] = d[i, inside]
    return dist2, idx


def _ball_numba(query, ref, radius, k, qlen, rlen, self_query):
    from .kernels import kdtree, run
    from .knn import _LEAF

    dist2, idx = _empty_result(query, k)
    r_np = to_numpy(ref)
    r2 = r_np.dtype.type(radius) * r_np.dtype.type(radius)  # the radius test in the input dtype
    trees = kdtree.allocate_trees(ref.shape[0], ref.shape[1], _LEAF, r_np.dtype)
    run(kdtree.query_par, kdtree.query_ser, to_numpy(query), qlen.cpu().numpy(), r_np,
        rlen.cpu().numpy(), _LEAF, self_query, 1, k, r2, trees, dist2.numpy(), idx.numpy(),
        work=query.shape[0] * query.shape[1] * (k + _LEAF) * 8)
    return _back(dist2, idx, query)


def _ball_scipy(query, ref, radius, k, qlen, rlen, self_query):
    from scipy.spatial import cKDTree

    dist2, idx = _empty_result(query, k)
    q_np, r_np = to_numpy(query), to_numpy(ref)
    r2 = torch.tensor(radius, dtype=dist2.dtype) ** 2
    for b, (mb, nb) in enumerate(zip(qlen.tolist(), rlen.tolist())):
        # scipy's test is on the Euclidean distance in float64: widen a little, then apply
        # the exact dist2 <= radius**2 test in the input dtype below
        lists = cKDTree(r_np[b, :nb]).query_ball_point(q_np[b, :mb], radius * (1 + 1e-6),
                                                       return_sorted=True)
        for i, found in enumerate(lists):
            found = torch.as_tensor(found, dtype=torch.int64)
            d = squared_norm(ref[b, found].cpu() - query[b, i].cpu())
            keep = found[d <= r2][:k]
            idx[b, i, : len(keep)] = keep
            dist2[b, i, : len(keep)] = d[d <= r2][:k].to(dist2.dtype)
    return _back(dist2, idx, query)


def _ball_torch(query, ref, radius, k, qlen, rlen, self_query):
    """Dense, chunked over queries; CPU and CUDA."""
    batch, m, _ = query.shape
    n = ref.shape[1]
    dev = query.device
    ref_valid = torch.arange(n, device=dev) < rlen[:, None]
    r2 = torch.tensor(radius, dtype=query.dtype, device=dev) ** 2
    step = max(1, (1 << 24) // max(1, batch * n * 3))
    dists, idxs = [], []
    for s in range(0, m, step):
        d = squared_norm(query[:, s : s + step, None] - ref[:, None])  # (B, m', N)
        inside = (d <= r2) & ref_valid[:, None, :]
        # the k lowest indices inside: sort the keys "index if inside else N + index"
        key = torch.arange(n, device=dev) + (~inside).long() * n
        first = torch.topk(key, min(k, n), dim=-1, largest=False, sorted=True).indices
        ok = torch.gather(inside, -1, first)
        idxs.append(torch.where(ok, first, -1))
        dists.append(torch.where(ok, torch.gather(d, -1, first), torch.inf))
    idx = torch.cat(idxs, 1)
    dist2 = torch.cat(dists, 1)
    rows_off = torch.arange(m, device=dev) >= qlen[:, None]
    idx = idx.masked_fill(rows_off[..., None], -1)
    dist2 = dist2.masked_fill(rows_off[..., None], float("inf"))
    return dist2, idx


_BACKENDS = {"numba": _ball_numba, "scipy": _ball_scipy, "torch": _ball_torch}
