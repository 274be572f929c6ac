"""Private helpers shared by the distance-based ops (knn, ball query, Chamfer, gathers, FPS).

- ``squared_norm``: squared distances summed in the order every kernel and reference uses;
- ``take_rows``: an unchecked batched row gather for the ops' inner loops;
- ``sort_exact``: exact distances of candidate neighbours, ordered by (distance, index);
- ``empty_result`` / ``to_input``: result buffers and the cast back to the input's dtype;
- ``overflowing`` / ``widen``: clouds whose squared distances would overflow their dtype, and
  the float64 (power-of-two scaled) copies the neighbour ops rank them in instead.
"""

from __future__ import annotations

import math

import torch

_CHUNK = 1 << 24  # elements per chunk of a temporary (64 MiB in float32)


def squared_norm(diff: torch.Tensor) -> torch.Tensor:
    """Sum of squares over the last dim; channel by channel (the kernels' order) for C <= 3."""
    sq = diff * diff
    if diff.shape[-1] > 3:
        return sq.sum(-1)
    out = sq[..., 0]
    for c in range(1, diff.shape[-1]):
        out = out + sq[..., c]
    return out


def take_rows(x: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    """``out[b, ...] = x[b, idx[b, ...]]`` without checks; -1 gathers row 0 (callers mask it).

    x: (B, N, C), idx: (B, ...) int64 -> (B, ..., C). No host round trip, unlike the checked
    public ``gather_points``.
    """
    batch, n, channels = x.shape
    offsets = torch.arange(batch, device=x.device).view(-1, *([1] * (idx.dim() - 1))) * n
    flat = (idx.clamp(min=0) + offsets).reshape(-1)
    rows = x.reshape(batch * n, channels)
    from .kernels import takes

    if rows.requires_grad and torch.is_grad_enabled() and takes(rows):
        return _TakeRows.apply(rows, flat).view(*idx.shape, channels)
    return rows.index_select(0, flat).view(*idx.shape, channels)


class _TakeRows(torch.autograd.Function):
    """``rows[flat]`` whose backward scatter-adds by the compiled kernel
    (:mod:`pointabstract.ops.kernels.scatter_rows`) instead of ``index_add_``."""

    @staticmethod
    def forward(ctx, rows, flat):
        ctx.save_for_backward(flat)
        ctx.count = rows.shape[0]
        return rows.index_select(0, flat)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad):
        from .kernels import run, scatter_rows

        (flat,) = ctx.saved_tensors
        grad = grad.contiguous()
        out = grad.new_zeros(ctx.count, grad.shape[1])
        parts = max(1, torch.get_num_threads())
        run(scatter_rows.scatter_add_rows, scatter_rows.scatter_add_rows_ser, grad.numpy(), flat.numpy(),
            out.numpy(), parts, work=grad.numel())
        return out, None


def sort_exact(q: torch.Tensor, r: torch.Tensor, idx: torch.Tensor):
    """Exact squared distances of candidate neighbours, sorted by (distance, index).

    q: (B, M, C) queries, r: (B, N, C) points (same dtype and device as ``idx``),
    idx: (B, M, K) int64 candidates, -1 for none. Returns (dist2, idx), both (B, M, K),
    -1 slots last at ``inf``; the distances use ``squared_norm``'s arithmetic.
    """
    batch, m, k = idx.shape
    step = max(1, _CHUNK // max(1, batch * k * q.shape[-1]))  # bound the (B, m', K, C) gather
    d = torch.cat([squared_norm(take_rows(r, idx[:, s : s + step]) - q[:, s : s + step, None])
                   for s in range(0, m, step)], 1)
    d = d.masked_fill(idx < 0, float("inf"))
    idx, order = torch.sort(idx, dim=-1)  # indices ascending (-1 first, at inf)...
    d = torch.gather(d, -1, order)
    d, order = torch.sort(d, dim=-1, stable=True)  # ...so a stable sort by distance breaks ties
    return d, torch.gather(idx, -1, order)


def work_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype distances are computed in: float16 / bfloat16 widen (exactly) to float32."""
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def empty_result(query: torch.Tensor, k: int):
    """CPU buffers (B, M, K): dist2 = inf in the work dtype, idx = -1."""
    batch, m = query.shape[:2]
    dist2 = torch.full((batch, m, k), float("inf"), dtype=work_dtype(query.dtype))
    idx = torch.full((batch, m, k), -1, dtype=torch.int64)
    return dist2, idx


def to_input(dist2: torch.Tensor, idx: torch.Tensor, like: torch.Tensor):
    """Move a result to ``like``'s device, dist2 in ``like``'s dtype."""
    return dist2.to(device=like.device, dtype=like.dtype), idx.to(like.device)


# --- clouds too large for their dtype ----------------------------------------------------------
#
# A squared distance (or a matmul term |q|^2, q.r of the feature-space search) overflows the
# dtype for coordinates beyond about sqrt(max / C) / 2: then every distance is inf and no
# neighbour can be told from another. Such clouds are ranked in float64 instead, scaled by a
# power of two (exact, unless it pushes differences below float64's normal range, which needs
# float64 inputs spanning ~600 orders of magnitude). The returned dist2 are the true values
# rounded to the input dtype: inf where they exceed it, but the indices are the real neighbours.


def limit(dtype: torch.dtype, channels: int) -> float:
    """Largest |coordinate| whose squared distances and matmul terms stay finite."""
    return math.sqrt(torch.finfo(work_dtype(dtype)).max / max(1, channels)) / 4


def overflowing(*clouds: torch.Tensor, extent: float | None = None) -> torch.Tensor | None:
    """(B,) bool: clouds (same B, C, dtype) with a coordinate beyond :func:`limit`; None if none.

    ``extent``: the largest |coordinate| of all of them when the caller knows it already
    (``_validate.finite_extent``); otherwise one min / max pass over each input.
    """
    bound = limit(clouds[0].dtype, clouds[0].shape[-1])
    if extent is None:
        extent = max(_extent(c) for c in {id(c): c for c in clouds}.values())
    if extent <= bound:
        return None
    big = sum(c.detach().abs().amax(dim=(1, 2)) > bound for c in clouds)
    return big > 0


def _extent(x: torch.Tensor) -> float:
    if x.device.type == "cpu" and x.dtype in (torch.float32, torch.float64):
        a = x.detach().numpy()  # numpy's reductions cost a few us where torch's cost ~0.5 ms
        return max(-float(a.min()), float(a.max()))
    from .._validate import min_max

    lo, hi = min_max(x.detach())  # one copy to the host
    return max(-float(lo), float(hi))


def widen(*clouds: torch.Tensor):
    """float64 copies of ``clouds`` (same B, C, dtype), each cloud scaled by a power of two.

    float64 clouds are scaled into :func:`limit`'s range, narrower ones (whose float64
    squares cannot overflow) to coordinates within [-1, 1], which also suits libraries that
    compute in float32. Returns ``(copies, scale)`` with ``scale`` (B,) float64: a copy's
    squared distances divided by ``scale[b] ** 2`` are the original's. Power-of-two scaling
    is exact while it keeps numbers normal: always for float32 sources (2^-277 at worst).
    """
    wide = [c.detach().double() for c in clouds]
    top = torch.stack([c.abs().amax(dim=(1, 2)) for c in wide]).amax(0)  # (B,)
    bound = limit(torch.float64, clouds[0].shape[-1]) if clouds[0].dtype == torch.float64 else 1.0
    shift = torch.ceil(torch.log2(top / bound)).clamp(min=0)
    scale = torch.exp2(-shift)  # (B,) exact powers of two
    return [c * scale.view(-1, 1, 1) for c in wide], scale
