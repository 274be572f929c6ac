"""Drop-ins for ``torch_geometric.nn``'s ``fps``, ``knn``, ``knn_graph``, ``radius``, ``radius_graph``.

PyTorch Geometric 2.8 runs these through pyg-lib (``torch.ops.pyg.*``), which has no wheel for
many machines; the functions here have PyG's signatures and conventions and run on
:mod:`pointabstract.ops` (CPU and CUDA, no compiled extension). They need only torch, not
torch_geometric. To make PyG's own layers (``DynamicEdgeConv``, ``XConv``, ``knn_interpolate``,
``torch_geometric.nn.fps`` ...) use them, see :func:`pointabstract.interop.pyg_ops.register_pyg_ops`.

PyG's layout: the nodes of all clouds concatenated, ``x: (N, C)``, with ``batch: (N,)`` the
sorted cloud id of every node (``None``: one cloud). Edge lists are ``(2, E)`` int64 of flat
node indices. Where PyG leaves an order to its implementation, these drop-ins fix one:

- ``knn``: edges grouped by ``y`` node in increasing order, each node's neighbours nearest
  first, equal distances to the lower index.
- ``radius``: a neighbour is strictly inside the ball (``dist2 < r * r``, as pyg-lib); with more
  than ``max_num_neighbors`` of them the lowest indices are kept (pyg-lib's CUDA order; its CPU
  order follows its KD-tree and is documented there as biased), listed in increasing index.
- ``fps``: as torch_cluster, also with ``ptr=`` (CSR pointers of the clouds) and a tensor
  ``ratio`` (0-d or one per cloud); picks are the farthest node, equal distances to the lower
  index (torch's ``argmax``, as pyg-lib and torch_cluster), so ``random_start=False`` gives
  their exact indices. ``random_start=True`` draws each start uniformly from torch's global
  generator (``torch.manual_seed`` makes it reproducible; pyg-lib's and torch_cluster's CPU
  kernels use C ``rand()``, so the random starts, not the rule, differ). An empty input gives
  an empty (0,) index.
- ``radius(..., ignore_same_index=True)``: torch_cluster's option, the ``x`` node with the
  ``y`` node's flat index is not its neighbour.
- ``num_workers`` is accepted and ignored: the ops use torch's thread count.

One module on purpose (about 410 lines): the five drop-ins share their ragged-batch checks and
edge builders, and ``fps_naive`` / ``knn_naive`` / ``radius_naive`` (the plain-loop references
the tests compare them with) sit beside them, as in :mod:`pointabstract.ops`.
"""

from __future__ import annotations

import math

import torch

from .. import _validate as V
from ..ops import ball_query, farthest_point_sample
from ..ops import knn as _ops_knn
from ..ops.knn import squared_norm
from ._ragged import check_nodes, cloud_sizes, pad, ptr_sizes

__all__ = ["fps", "fps_naive", "knn", "knn_graph", "knn_naive", "radius", "radius_graph",
           "radius_naive"]

_FLOWS = ("source_to_target", "target_to_source")


def fps(x: torch.Tensor, batch: torch.Tensor | None = None, ratio: float | torch.Tensor | None = 0.5,
        random_start: bool = True, batch_size: int | None = None,
        ptr: torch.Tensor | list[int] | None = None) -> torch.Tensor:
    """Farthest point sampling per cloud, like ``torch_geometric.nn.fps`` / ``torch_cluster.fps``.

    Args:
        x: (N, C) node positions or features (more trailing dims are flattened); N may be 0.
        batch: (N,) sorted cloud id of every node; ``None``: one cloud (or the clouds of ``ptr``).
        ratio: share of each cloud to keep, in (0, 1]: a number, a 0-d tensor, or a (B,) tensor
            of one ratio per cloud (a (1,) tensor applies to every cloud); ``None``: 0.5 (as
            torch_cluster). Cloud b keeps ``ceil(N_b * ratio_b)`` nodes, computed as
            torch_cluster does (``float32(N_b) * ratio`` under torch's type promotion: float32
            for a number or a 0-d tensor, the tensor's dtype for a (B,) float64 tensor).
        random_start: start each cloud at a random node instead of its first.
        batch_size: number of clouds B (default: inferred from ``batch`` or ``ptr``).
        ptr: (B + 1,) CSR pointers of the clouds, an integer tensor or a list of ints (cloud b
            is nodes ``ptr[b]:ptr[b + 1]``; torch_cluster's ``ptr``). With ``batch`` as well,
            both must describe the same clouds.

    Returns:
        idx: (M,) int64 flat indices into ``x``: cloud by cloud, each in pick order; (0,) when
        there is nothing to sample.
    """
    x = check_nodes("x", x, flatten=True)
    counts = _fps_sizes(x, batch, batch_size, ptr)
    r = _check_ratio(ratio, counts.numel(), x.device)
    picks = torch.ceil(counts.to(torch.float32) * r).long()
    keep = counts > 0
    if not bool(keep.any()):
        return torch.empty(0, dtype=torch.int64, device=x.device)
    clouds = pad(x, counts).select(keep)
    picks = picks[keep]
    if random_start:
        u = torch.rand(clouds.lengths.shape, dtype=torch.float64)
        start = (u * clouds.lengths.cpu()).long().minimum(clouds.lengths.cpu() - 1).to(x.device)
    else:
        start = torch.zeros_like(clouds.lengths)
    idx = farthest_point_sample(clouds.pos, int(picks.max()), lengths=clouds.lengths, start=start)
    taken = torch.arange(idx.shape[1], device=x.device) < picks[:, None]  # (B, M)
    return (idx + clouds.starts[:, None])[taken]


def knn(x: torch.Tensor, y: torch.Tensor, k: int, batch_x: torch.Tensor | None = None,
        batch_y: torch.Tensor | None = None, cosine: bool = False, num_workers: int = 1,
        batch_size: int | None = None) -> torch.Tensor:
    """For every node of ``y``, its ``k`` nearest nodes of ``x`` in the same cloud (PyG ``knn``).

    Args:
        x: (N, C) reference nodes.
        y: (M, C) query nodes.
        k: neighbours per query; a cloud of ``x`` with fewer nodes gives all it has.
        batch_x / batch_y: (N,) / (M,) sorted cloud ids; ``None``: one cloud.
        cosine: rank by cosine distance ``1 - cos(x, y)`` instead of Euclidean distance
            (zero vectors are treated as having norm ``1e-12``).
        num_workers: ignored (kept for PyG's signature).
        batch_size: number of clouds B (default: inferred from the batch vectors).

    Returns:
        assign_index: (2, E) int64; ``assign_index[0]`` indexes ``y``, ``assign_index[1]``
        indexes ``x``, grouped by ``y`` node, nearest first.
    """
    x, y = check_nodes("x", x), check_nodes("y", y)
    _check_pair(x, y)
    k = V.check_int("k", k, low=1)
    cx, cy = cloud_sizes([("batch_x", batch_x, x), ("batch_y", batch_y, y)], batch_size)
    return _knn_edges(x, y, k, cx, cy, cosine=bool(cosine), same=False)


def knn_graph(x: torch.Tensor, k: int, batch: torch.Tensor | None = None, loop: bool = False,
              flow: str = "source_to_target", cosine: bool = False, num_workers: int = 1,
              batch_size: int | None = None) -> torch.Tensor:
    """The k-nearest-neighbour graph of the nodes (PyG ``knn_graph``).

    As PyG: ``knn(x, x, k if loop else k + 1)`` and, without ``loop``, the self-edges removed
    afterwards; so a node whose self-match is pushed out of the k + 1 by duplicates of it
    (more than k + 1 nodes at one position) keeps k + 1 neighbours.

    Args:
        x: (N, C) nodes.
        k: neighbours per node.
        batch: (N,) sorted cloud ids; ``None``: one cloud.
        loop: keep self-edges ``(i, i)`` (each node is then its own first neighbour).
        flow: ``"source_to_target"``: ``edge_index[0]`` are the neighbours, ``[1]`` the centres
            (messages flow from neighbours to centres); ``"target_to_source"``: rows swapped.
        cosine / num_workers / batch_size: as in :func:`knn`.

    Returns:
        edge_index: (2, E) int64, grouped by centre in increasing order, nearest first.
    """
    x = check_nodes("x", x)
    k = V.check_int("k", k, low=1)
    V.check_choice("flow", flow, _FLOWS)
    (counts,) = cloud_sizes([("batch", batch, x)], batch_size)
    edges = _knn_edges(x, x, k if loop else k + 1, counts, counts, cosine=bool(cosine), same=True)
    if not loop:
        edges = edges[:, edges[0] != edges[1]]
    return edges.flip(0) if flow == "source_to_target" else edges


def radius(x: torch.Tensor, y: torch.Tensor, r: float, batch_x: torch.Tensor | None = None,
           batch_y: torch.Tensor | None = None, max_num_neighbors: int | None = 32,
           num_workers: int = 1, batch_size: int | None = None,
           ignore_same_index: bool = False) -> torch.Tensor:
    """For every node of ``y``, the nodes of ``x`` in its cloud closer than ``r`` (PyG ``radius``,
    torch_cluster ``radius``).

    Args:
        x: (N, C) reference nodes.
        y: (M, C) query nodes (ball centres).
        r: radius (> 0); a node at distance exactly ``r`` is outside.
        batch_x / batch_y: (N,) / (M,) sorted cloud ids; ``None``: one cloud.
        max_num_neighbors: at most this many per query, the lowest indices; ``None``: all.
        num_workers: ignored (kept for PyG's signature).
        batch_size: number of clouds B (default: inferred from the batch vectors).
        ignore_same_index: skip, for ``y`` node ``i``, the ``x`` node of the same flat index
            ``i`` (torch_cluster's meaning: for ``y`` = ``x`` it drops the self-match, before
            the ``max_num_neighbors`` are counted, as :func:`radius_graph` without ``loop``).

    Returns:
        assign_index: (2, E) int64; row 0 indexes ``y``, row 1 indexes ``x``, grouped by
        ``y`` node, each group in increasing ``x`` index.
    """
    x, y = check_nodes("x", x), check_nodes("y", y)
    _check_pair(x, y)
    r = V.check_positive("r", r)
    limit = V.check_int("max_num_neighbors", max_num_neighbors, low=1, allow_none=True)
    cx, cy = cloud_sizes([("batch_x", batch_x, x), ("batch_y", batch_y, y)], batch_size)
    if not isinstance(ignore_same_index, (bool, int)):
        raise TypeError(f"ignore_same_index must be a bool, got {type(ignore_same_index).__name__}")
    return _radius_edges(x, y, r, cx, cy, limit, ignore_same_index=bool(ignore_same_index), same=False)


def radius_graph(x: torch.Tensor, r: float, batch: torch.Tensor | None = None, loop: bool = False,
                 max_num_neighbors: int | None = 32, flow: str = "source_to_target",
                 num_workers: int = 1, batch_size: int | None = None) -> torch.Tensor:
    """The graph joining nodes of a cloud closer than ``r`` (PyG ``radius_graph``).

    Without ``loop`` the self-edge is skipped before counting, so a node still gets up to
    ``max_num_neighbors`` other nodes (as pyg-lib's ``ignore_same_index``).

    Args:
        x: (N, C) nodes.
        r: radius (> 0); pairs at distance exactly ``r`` are not joined.
        batch: (N,) sorted cloud ids; ``None``: one cloud.
        loop: keep self-edges.
        max_num_neighbors: at most this many neighbours per node, the lowest indices.
        flow: as in :func:`knn_graph`.
        num_workers / batch_size: as in :func:`radius`.

    Returns:
        edge_index: (2, E) int64, grouped by centre, each group in increasing index.
    """
    x = check_nodes("x", x)
    r = V.check_positive("r", r)
    V.check_choice("flow", flow, _FLOWS)
    limit = V.check_int("max_num_neighbors", max_num_neighbors, low=1, allow_none=True)
    (counts,) = cloud_sizes([("batch", batch, x)], batch_size)
    edges = _radius_edges(x, x, r, counts, counts, limit, ignore_same_index=not loop, same=True)
    return edges.flip(0) if flow == "source_to_target" else edges


# --- shared work ------------------------------------------------------------------------------


def _check_pair(x, y):
    if x.shape[1] != y.shape[1] or x.dtype != y.dtype or x.device != y.device:
        raise ValueError(f"x and y must share C, dtype and device, got x {tuple(x.shape)} {x.dtype} "
                         f"{x.device} and y {tuple(y.shape)} {y.dtype} {y.device}")


def _fps_sizes(x, batch, batch_size, ptr) -> torch.Tensor:
    """(B,) nodes per cloud from ``batch`` or ``ptr`` (both: they must agree)."""
    if ptr is None:
        return cloud_sizes([("batch", batch, x)], batch_size)[0]
    counts = ptr_sizes("ptr", ptr, x, batch_size)
    if batch is not None:
        (from_batch,) = cloud_sizes([("batch", batch, x)], None)
        if from_batch.numel() > counts.numel() or not torch.equal(
                counts, torch.cat([from_batch, from_batch.new_zeros(counts.numel() - from_batch.numel())])):
            raise ValueError(f"batch and ptr describe different clouds: sizes {from_batch.tolist()[:12]} "
                             f"and {counts.tolist()[:12]}")
    return counts


def _check_ratio(ratio, clouds: int, device):
    """``ratio`` as a number or a tensor broadcastable to the (B,) clouds, every value in (0, 1]."""
    if ratio is None:
        return 0.5
    if isinstance(ratio, torch.Tensor):
        if ratio.dtype.is_complex or ratio.dtype == torch.bool:
            raise TypeError(f"ratio must be a real tensor, got dtype {ratio.dtype}")
        if ratio.dim() > 1 or (ratio.dim() == 1 and ratio.numel() not in (1, clouds)):
            raise ValueError(f"ratio must be a number, a 0-d tensor or one value per cloud (B = {clouds}), "
                             f"got shape {tuple(ratio.shape)}")
        bad = ~((ratio > 0) & (ratio <= 1))  # NaN is bad too
        if bool(bad.any()):
            raise ValueError(f"ratio values must lie in (0, 1], got {ratio[bad].flatten()[0].item()!r}")
        return ratio.to(device)
    V.check_float("ratio", ratio, low=0.0, high=1.0, low_open=True)
    return ratio





def _unit(x: torch.Tensor) -> torch.Tensor:
    return x / x.norm(dim=1, keepdim=True).clamp_min(1e-12)


def _no_edges(device) -> torch.Tensor:
    return torch.empty(2, 0, dtype=torch.int64, device=device)


def _clouds(x, y, cx, cy, same):
    keep = (cx > 0) & (cy > 0)
    px = pad(x, cx).select(keep)
    return keep, px, (px if same else pad(y, cy).select(keep))


def _knn_edges(x, y, k, cx, cy, *, cosine, same):
    if cosine:
        x = _unit(x)
        y = x if same else _unit(y)
    keep, px, py = _clouds(x, y, cx, cy, same)
    if not bool(keep.any()):
        return _no_edges(x.device)
    kk = min(k, px.pos.shape[1])
    # outside 3D the numba kernel may break an exact tie at the k-th place either way (its
    # quickselect); the torch backend keeps the lower index, the order documented above
    backend = "auto" if x.shape[1] == 3 else "torch"
    _, idx = _ops_knn(py.pos, px.pos, kk, query_lengths=py.lengths, ref_lengths=px.lengths,
                      backend=backend)
    valid = idx >= 0  # (B, M_max, K): padding queries and missing neighbours are -1
    row = (torch.arange(idx.shape[1], device=x.device) + py.starts[:, None])[..., None].expand_as(idx)
    col = idx + px.starts[:, None, None]
    return torch.stack([row[valid], col[valid]])


def _radius_edges(x, y, r, cx, cy, limit, *, ignore_same_index, same):
    """Edges (y node, x node) with dist2 < r * r, the lowest ``limit`` x indices per y node."""
    keep, px, py = _clouds(x, y, cx, cy, same)
    if not bool(keep.any()):
        return _no_edges(x.device)
    n = px.pos.shape[1]
    limit = n if limit is None else min(limit, n)
    r2 = torch.tensor(r * r, dtype=x.dtype, device=x.device)  # pyg-lib: (scalar_t)(r * r)
    slots = min(n, limit + int(ignore_same_index))  # the same index may take one slot
    rows = torch.arange(py.pos.shape[1], device=x.device) + py.starts[:, None]  # (B, M) flat y index
    if x.shape[1] == 3:
        # a ball a little wider than r (a superset in any rounding), then PyG's strict test
        wide = r * (1 + 16 * torch.finfo(x.dtype).eps)
        dist2, idx = ball_query(py.pos, px.pos, wide, slots, query_lengths=py.lengths,
                                ref_lengths=px.lengths, pad="invalid")
        cols = idx + px.starts[:, None, None]
        ok = (idx >= 0) & (dist2 < r2)
        if ignore_same_index:
            ok &= cols != rows[..., None]
        # a row that filled every slot, left points of its cloud unexamined and lost entries
        # to the strict test may hide further neighbours: redo it exactly
        unexamined = (idx[..., -1] >= 0) & (slots < px.lengths[:, None])
        redo = unexamined & (ok.sum(-1) < limit)
        ok &= ~redo[..., None]
    else:
        redo = torch.arange(py.pos.shape[1], device=x.device) < py.lengths[:, None]
        cols = ok = None
    ok_rows, ok_cols = [], []
    if ok is not None:
        ok &= ok.long().cumsum(-1) <= limit
        ok_rows.append(rows[..., None].expand_as(cols)[ok])
        ok_cols.append(cols[ok])
    if bool(redo.any()):
        bb, mm = redo.nonzero(as_tuple=True)
        found = _radius_dense(px, py.pos[bb, mm], bb, rows[bb, mm] if ignore_same_index else None,
                              r2, limit)  # (R, limit)
        got = found >= 0
        ok_rows.append(rows[bb, mm][:, None].expand_as(found)[got])
        ok_cols.append(found[got])
    row, col = torch.cat(ok_rows), torch.cat(ok_cols)
    if len(ok_rows) > 1:  # merge the redone rows in: grouped by y node, x index ascending
        order = torch.argsort(row * (x.shape[0] + 1) + col)
        row, col = row[order], col[order]
    return torch.stack([row, col])


def _radius_dense(px, queries, clouds, same_index, r2, limit):
    """Exact radius search for R queries (R, C) of clouds (R,): (R, limit) flat x indices, -1 pad."""
    n = px.pos.shape[1]
    ar = torch.arange(n, device=queries.device)
    out = []
    step = max(1, (1 << 22) // max(1, n * queries.shape[1]))
    for s in range(0, queries.shape[0], step):
        b = clouds[s : s + step]
        d = squared_norm(px.pos[b] - queries[s : s + step, None, :])  # (R', N)
        inside = (d < r2) & (ar < px.lengths[b, None])
        flat = ar + px.starts[b, None]
        if same_index is not None:
            inside &= flat != same_index[s : s + step, None]
        key = ar + (~inside).long() * n  # the lowest indices inside sort first
        first = torch.topk(key, limit, dim=-1, largest=False, sorted=True).indices
        out.append(torch.where(torch.gather(inside, 1, first), torch.gather(flat, 1, first), -1))
    return torch.cat(out)


# --- references (tests only): PyG's rules in plain loops over flat nodes -------------------


def _ids(batch, n):
    return [0] * n if batch is None else batch.tolist()


def fps_naive(x, batch=None, ratio=0.5, starts=None):
    """Reference ``fps`` (torch_cluster's CPU kernel in loops); ``ratio``: a number or a list of
    one per non-empty cloud; ``starts`` lists each cloud's start (local index; default 0)."""
    ids = _ids(batch, x.shape[0])
    out = []
    for c, b in enumerate(sorted(set(ids))):
        nodes = [i for i in range(len(ids)) if ids[i] == b]
        share = ratio[c] if isinstance(ratio, (list, tuple)) else ratio
        take = int(torch.ceil(torch.tensor(float(len(nodes))) * share))  # float32, as PyG
        pts = x[nodes].reshape(len(nodes), -1)
        last = 0 if starts is None else int(starts[c])
        mind = torch.full((len(nodes),), math.inf, dtype=x.dtype)
        for _ in range(take):
            out.append(nodes[last])
            mind = torch.minimum(mind, squared_norm(pts - pts[last]))
            last = int(torch.argmax(mind))
    return torch.tensor(out, dtype=torch.int64)


def knn_naive(x, y, k, batch_x=None, batch_y=None, cosine=False):
    """Reference ``knn``: every distance in the cloud, stably sorted, first k."""
    bx, by = _ids(batch_x, x.shape[0]), _ids(batch_y, y.shape[0])
    if cosine:
        x, y = _unit(x), _unit(y)
    edges = []
    for i in range(y.shape[0]):
        cand = [j for j in range(x.shape[0]) if bx[j] == by[i]]
        d = [float(squared_norm(x[j] - y[i])) for j in cand]
        ranked = sorted(range(len(cand)), key=lambda t: (d[t], cand[t]))
        edges += [(i, cand[t]) for t in ranked[:k]]
    return torch.tensor(edges, dtype=torch.int64).reshape(-1, 2).t()


def radius_naive(x, y, r, batch_x=None, batch_y=None, max_num_neighbors=32, ignore_same_index=False):
    """Reference ``radius``: nodes with dist2 < r * r, lowest indices first, at most the limit."""
    bx, by = _ids(batch_x, x.shape[0]), _ids(batch_y, y.shape[0])
    r2 = torch.tensor(r * r, dtype=x.dtype)
    limit = math.inf if max_num_neighbors is None else max_num_neighbors
    edges = []
    for i in range(y.shape[0]):
        found = [j for j in range(x.shape[0]) if bx[j] == by[i] and squared_norm(x[j] - y[i]) < r2
                 and not (ignore_same_index and j == i)]
        edges += [(i, j) for j in found[: int(min(limit, len(found)))]]
    return torch.tensor(edges, dtype=torch.int64).reshape(-1, 2).t()
