"""Ball query: up to k reference points within a radius of each query (PointNet++ grouping)."""

from __future__ import annotations

import numpy as np
import torch

from .. import _validate as V
from ._backend import resolve
from ._dist import empty_result, overflowing, squared_norm, to_input, widen
from .kernels import to_numpy
from .knn import LEAF

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
    V.check_cloud("query", query, finite=False)
    extent = V.finite_extent("query", query)
    V.check_cloud("ref", ref, finite=False)
    extent = extent if ref is query else max(extent, V.finite_extent("ref", ref))
    V.check_same_batch("query", query, "ref", ref)
    batch, m, _ = query.shape
    k = V.check_count("k", k, ref.shape[1])
    radius = V.check_positive("radius", radius)
    V.check_choice("pad", pad, ("first", "invalid"))
    qlen = V.check_lengths("query_lengths", query_lengths, batch, m, query.device)
    rlen = V.check_lengths("ref_lengths", ref_lengths, batch, ref.shape[1], ref.device)
    self_query = query is ref and query_lengths is ref_lengths
    search = _BACKENDS[resolve("ball_query", backend, query.device)]
    huge = overflowing(query, ref, extent=extent)
    q, r = query.detach(), ref.detach()
    if huge is not None:  # blanked here, tested in float64 below: their distances overflow
        q, r = (x.masked_fill(huge.view(-1, 1, 1), 0) for x in (q, r))
    dist2, idx = search(q, r, radius, k, qlen, rlen, self_query)
    if huge is not None:
        dist2, idx = dist2.clone(), idx.clone()
        for b in huge.nonzero().flatten().tolist():
            (q, r), scale = widen(query[b : b + 1], ref[b : b + 1])
            d, i = search(q, r, _wide_radius(radius, query.dtype, scale), k, qlen[b : b + 1],
                          rlen[b : b + 1], self_query)
            dist2[b], idx[b] = (d[0] / float(scale[0]) ** 2).to(dist2.dtype), i[0]
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
    for b in range(batch):
        q, r, r2 = query[b, : qlen[b]].cpu(), ref[b, : rlen[b]].cpu(), radius
        scale = 1.0
        if overflowing(query[b : b + 1], ref[b : b + 1]) is not None:  # see ops._dist
            (q, r), scale = widen(q[None], r[None])
            q, r, r2 = q[0], r[0], _wide_radius(radius, query.dtype, scale)
            scale = float(scale[0])
        r2 = torch.tensor(r2, dtype=q.dtype) ** 2  # the test is done in the input dtype
        d = squared_norm(q[:, None] - r[None])
        for i in range(qlen[b]):
            inside = torch.nonzero(d[i] <= r2).flatten()[:k]  # lowest indices first
            idx[b, i, : len(inside)] = inside
            dist2[b, i, : len(inside)] = d[i, inside] / scale**2
    return dist2, idx


def _wide_radius(radius: float, dtype: torch.dtype, scale: torch.Tensor) -> float:
    """The radius rounded to the input dtype, scaled like :func:`ops._dist.widen`'s clouds."""
    return float(torch.tensor(radius, dtype=dtype).double() * scale[0])


def _ball_numba(query, ref, radius, k, qlen, rlen, self_query):
    from .kernels import kdtree, run

    dist2, idx = empty_result(query, k)
    r_np = to_numpy(ref)
    with np.errstate(over="ignore"):  # a radius beyond sqrt(dtype max) holds everything: inf
        r2 = r_np.dtype.type(radius) * r_np.dtype.type(radius)  # the test in the input dtype
    trees = kdtree.allocate_trees(ref.shape[0], ref.shape[1], LEAF, r_np.dtype)
    run(kdtree.query_par, kdtree.query_ser, to_numpy(query), qlen.cpu().numpy(), r_np,
        rlen.cpu().numpy(), LEAF, self_query, 1, k, r2, trees, dist2.numpy(), idx.numpy(),
        work=query.shape[0] * query.shape[1] * (k + LEAF) * 8)
    return to_input(dist2, idx, query)


def _ball_scipy(query, ref, radius, k, qlen, rlen, self_query):
    from scipy.spatial import cKDTree

    dist2, idx = empty_result(query, k)
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
    return to_input(dist2, idx, query)


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
