"""Multi-head attention over all points or over each point's K nearest neighbours: the one
attention of the package's softmax layers (self-attention blocks, centroid attention and the
dense softmax baseline of the Sequoia models)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .. import _validate as V
from ..ops import gather_points, knn
from .ragged import all_index

__all__ = ["NORMALIZE", "MultiHeadSelfAttention", "attend", "attend_naive"]


NORMALIZE = ("inputs", "centroids")


def attend(q: torch.Tensor, kv: torch.Tensor, idx: torch.Tensor | None = None,
           *, normalize: str = "inputs",
           need_weights: bool = True) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Scaled dot-product attention of M queries over N inputs, optionally over neighbours only.

    Args:
        q: (B, M, H, D) queries.
        kv: (B, N, 2 H D) keys of every head, then values of every head (one linear layer's
            output), so that neighbours are gathered once.
        idx: (B, M, K) int64 inputs each query may attend to (``knn`` output), or ``None`` for
            all N. With idx the cost is O(B M K H D) and no (B, M, N) matrix is formed.
            ``-1`` marks a padded (missing) neighbour: it gets weight 0 and adds nothing.
        normalize: ``"inputs"``: softmax over each query's inputs (transformer attention);
            ``"centroids"``: each input's weights are normalised over the queries it is connected
            to (the soft k-means gradient of Centroid Transformers, eq. 4).
        need_weights: return the weights. Without idx, with ``normalize="inputs"`` and no
            weights asked for, the dense product runs as torch's fused
            ``scaled_dot_product_attention`` (no (B, M, N, H) tensor kept for the caller);
            otherwise as einsums that form the weights.

    Returns:
        out: (B, M, H, D) weighted sums of values; 0 for a query whose K neighbours are all
            padding (it has nothing to attend to).
        weights: (B, M, K, H) attention weights (K = N without idx); 0 at padded neighbours;
            None when ``need_weights`` is False.

    On CPU (float32 / float64, numba available) the neighbour products run as compiled kernels
    (:mod:`pointabstract.ops.kernels.neighbour_attention`) that never form a (B, M, K, C) tensor;
    elsewhere keys and values are gathered. Both give the same result as :func:`attend_naive`.
    """
    _check_attend(q, kv, idx, normalize, need_weights)
    batch, m, heads, dim = q.shape
    n = kv.shape[1]
    scale = 1.0 / math.sqrt(dim)
    if idx is None:  # dense: every query sees all N inputs
        k, v = kv.view(batch, n, 2, heads, dim).unbind(2)  # (B, N, H, D) each
        if normalize == "inputs" and not need_weights:
            out = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
            return out.transpose(1, 2), None  # (B, M, H, D)
        logits = torch.einsum("bmhd,bnhd->bmnh", q, k) * scale  # (B, M, N, H)
        weights = logits.softmax(dim=2 if normalize == "inputs" else 1)
        return torch.einsum("bmnh,bnhd->bmhd", weights, v), weights if need_weights else None
    nbrs = _FusedNeighbours(kv, idx) if _fused_ok(q, kv) else _GatheredNeighbours(kv, idx, heads)
    logits = nbrs.dot(q) * scale  # (B, M, K, H)
    pad = (idx < 0).unsqueeze(-1)  # (B, M, K, 1)
    # no padding (the usual case): no masks to apply; on a GPU the masks (a no-op then) cost less
    # than asking the host (a sync)
    if pad.device.type == "cpu" and not bool(pad.any()):
        pad = None
    if normalize == "inputs":
        weights = logits.softmax(dim=2) if pad is None else _softmax_per_query(logits, pad)
    else:
        weights = _softmax_per_input(logits, idx, n)
    if pad is not None:
        weights = weights.masked_fill(pad, 0.0)  # padded neighbours: exactly zero weight
    return nbrs.sum(weights), weights if need_weights else None


def attend_naive(q: torch.Tensor, kv: torch.Tensor, idx: torch.Tensor | None = None,
                 *, normalize: str = "inputs") -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`attend` in plain loops over clouds, heads and softmax groups (tests only)."""
    _check_attend(q, kv, idx, normalize)
    batch, m, heads, dim = q.shape
    n = kv.shape[1]
    if idx is None:
        idx = torch.arange(n, device=q.device).expand(batch, m, n)
    keys, values = kv.view(batch, n, 2, heads, dim).unbind(2)  # (B, N, H, D) each
    query_of = torch.arange(m, device=idx.device).unsqueeze(1).expand(m, idx.shape[2])  # (M, K)
    zero = q.new_zeros(())
    weights, out = [], []
    for b in range(batch):
        # softmax groups: the (query, slot) pairs of one query, or those that share one input
        owner = query_of if normalize == "inputs" else idx[b]
        real = idx[b] >= 0
        for h in range(heads):
            w = {}  # (query, slot) -> weight; padded slots are absent, i.e. 0
            for group in owner[real].unique().tolist():
                slots = ((owner == group) & real).nonzero().tolist()
                logits = torch.stack([q[b, i, h] @ keys[b, idx[b, i, s], h] for i, s in slots])
                w.update(zip(map(tuple, slots), (logits / math.sqrt(dim)).softmax(0)))
            weights.append(torch.stack([torch.stack([w.get((i, s), zero) for s in range(idx.shape[2])])
                                        for i in range(m)]))  # (M, K)
            out.append(torch.stack([sum((w[i, s] * values[b, idx[b, i, s], h] for s in range(idx.shape[2])
                                         if (i, s) in w), q.new_zeros(dim)) for i in range(m)]))  # (M, D)
    weights = torch.stack(weights).view(batch, heads, m, -1).permute(0, 2, 3, 1)  # (B, M, K, H)
    return torch.stack(out).view(batch, heads, m, dim).transpose(1, 2), weights


def _check_attend(q, kv, idx, normalize, need_weights=True) -> None:
    """The arguments of :func:`attend` and :func:`attend_naive` (one check for both)."""
    V.check_bool("need_weights", need_weights)
    V.check_choice("normalize", normalize, NORMALIZE)
    for name, value in (("q", q), ("kv", kv)):
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    if q.dim() != 4:
        raise ValueError(f"q must have shape (B, M, H, D), got {tuple(q.shape)}")
    batch, m, heads, dim = q.shape
    if kv.dim() != 3 or kv.shape[0] != batch or kv.shape[2] != 2 * heads * dim:
        raise ValueError(f"kv must have shape (B, N, 2 H D) = ({batch}, N, {2 * heads * dim}), "
                         f"got {tuple(kv.shape)}")
    if idx is None:
        return
    if isinstance(idx, torch.Tensor) and (idx.dim() != 3 or idx.shape[:2] != (batch, m)):
        raise ValueError(f"idx must have shape (B, M, K) = ({batch}, {m}, K), got {tuple(idx.shape)}")
    V.check_index("idx", idx, batch, kv.shape[1], kv.device)  # -1: padding


def _softmax_per_query(logits: torch.Tensor, pad: torch.Tensor) -> torch.Tensor:
    """Softmax of (B, M, K, H) logits over each query's K entries, padded ones (pad: (B, M, K, 1))
    excluded. A query with only padded entries keeps its (ignored) finite logits, so its
    softmax is finite and the caller's mask zeroes it: no NaN, forward or backward."""
    dead = pad.all(2, keepdim=True)  # (B, M, 1, 1)
    return logits.masked_fill(pad & ~dead, -torch.inf).softmax(dim=2)


def _softmax_per_input(logits: torch.Tensor, idx: torch.Tensor, n: int) -> torch.Tensor:
    """Softmax of (B, M, K, H) logits over the entries that share the same input idx[b, m, k].

    Padded entries (idx < 0) form one extra group of their own, which the caller zeroes."""
    batch, m, kk, heads = logits.shape
    slot = idx.masked_fill(idx < 0, n)  # padding -> input slot n, outside [0, N)
    index = slot.reshape(batch, m * kk, 1).expand(-1, -1, heads)  # (B, M K, H)
    flat = logits.reshape(batch, m * kk, heads)
    peak = flat.new_full((batch, n + 1, heads), -torch.inf).scatter_reduce(
        1, index, flat.detach(), "amax", include_self=True)  # per-input max, for stability
    e = (flat - peak.gather(1, index)).exp()
    total = e.new_zeros(batch, n + 1, heads).scatter_add(1, index, e)
    return (e / total.gather(1, index)).view(batch, m, kk, heads)


def _fused_ok(q: torch.Tensor, kv: torch.Tensor) -> bool:
    from ..ops import kernels

    return kernels.takes(q, kv)


class _GatheredNeighbours:
    """Neighbour products by one gather of keys and values, (B, M, K, 2 H D): any device."""

    def __init__(self, kv: torch.Tensor, idx: torch.Tensor, heads: int):
        nb = gather_points(kv, idx)  # padded (-1) neighbours gather a zero row
        batch, m, kk, _ = nb.shape
        self.keys, self.values = nb.view(batch, m, kk, 2, heads, -1).unbind(3)  # (B, M, K, H, D)

    def dot(self, q: torch.Tensor) -> torch.Tensor:
        """(B, M, H, D) queries -> (B, M, K, H) dot products with their neighbours' keys."""
        return (q.unsqueeze(2) * self.keys).sum(-1)

    def sum(self, w: torch.Tensor) -> torch.Tensor:
        """(B, M, K, H) weights -> (B, M, H, D) weighted sums of the neighbours' values."""
        return (w.unsqueeze(-1) * self.values).sum(2)


class _FusedNeighbours:
    """The same products by the compiled CPU kernels: no (B, M, K, C) tensor at all."""

    def __init__(self, kv: torch.Tensor, idx: torch.Tensor):
        self.kv, self.idx = kv, idx

    def dot(self, q: torch.Tensor) -> torch.Tensor:
        return _NeighbourDot.apply(q, self.kv, self.idx)

    def sum(self, w: torch.Tensor) -> torch.Tensor:
        return _NeighbourSum.apply(w, self.kv, self.idx)


def _kernel(name: str, inputs: tuple[torch.Tensor, ...], outputs: tuple[torch.Tensor, ...]) -> None:
    """Run ``ops.kernels.neighbour_attention.<name>`` (or its serial ``<name>_ser``, see
    ``kernels.run``) on ``inputs`` as numpy arrays, writing ``outputs`` in place."""
    from ..ops.kernels import neighbour_attention, run, to_numpy

    run(getattr(neighbour_attention, name), getattr(neighbour_attention, f"{name}_ser"),
        *map(to_numpy, inputs), *(out.numpy() for out in outputs))


def _neighbour_forward(ctx, name: str, x: torch.Tensor, kv: torch.Tensor, idx: torch.Tensor,
                       shape: tuple[int, ...]) -> torch.Tensor:
    """The forward of both neighbour products (``name``: dot, sum): a new ``shape`` tensor from
    kernel ``<name>_forward``; ``x`` and ``kv`` are saved contiguous, the layout their grads get."""
    x, kv = x.contiguous(), kv.contiguous()
    out = x.new_empty(*shape)
    _kernel(f"{name}_forward", (x, kv, idx), (out,))
    ctx.save_for_backward(x, kv, idx)
    return out


def _neighbour_backward(ctx, name: str, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, None]:
    """The backward of both neighbour products: grads of ``x`` and ``kv`` (accumulated from zero:
    several queries read the same neighbour) by kernel ``<name>_backward``; none for ``idx``."""
    x, kv, idx = ctx.saved_tensors
    grad_x, grad_kv = torch.empty_like(x), torch.zeros_like(kv)
    _kernel(f"{name}_backward", (grad, x, kv, idx), (grad_x, grad_kv))
    return grad_x, grad_kv, None


class _NeighbourDot(torch.autograd.Function):
    """logits[b, m, k, h] = q[b, m, h] . key[b, idx[b, m, k], h] (keys: kv[..., :H D]); 0 if padded."""

    @staticmethod
    def forward(ctx, q, kv, idx):
        return _neighbour_forward(ctx, "dot", q, kv, idx, (*idx.shape, q.shape[2]))

    @staticmethod
    def backward(ctx, grad):
        return _neighbour_backward(ctx, "dot", grad)


class _NeighbourSum(torch.autograd.Function):
    """out[b, m, h] = sum_k w[b, m, k, h] value[b, idx[b, m, k], h] (values: kv[..., H D:]),
    padded k skipped."""

    @staticmethod
    def forward(ctx, w, kv, idx):
        heads = w.shape[3]
        return _neighbour_forward(ctx, "sum", w, kv, idx,
                                  (w.shape[0], w.shape[1], heads, kv.shape[2] // (2 * heads)))

    @staticmethod
    def backward(ctx, grad):
        return _neighbour_backward(ctx, "sum", grad)


class MultiHeadSelfAttention(nn.Module):
    """Multi-head self-attention, full or restricted to each point's k nearest neighbours.

    Returns the attention output only (callers add the residual and norms). Full attention
    without weights runs as torch's fused ``scaled_dot_product_attention`` (see :func:`attend`).

    Args:
        dim: channels C (divisible by ``heads``).
        heads: attention heads H.
        k: neighbours per point, or ``None`` for full O(N^2) attention; with k set the cost is
            O(B N K C) and no (B, N, N) matrix is ever formed (k is capped at N).
        knn_space: ``"feature"`` (neighbours by distance between the inputs' features) or
            ``"xyz"`` (by distance between positions; then ``pos`` is required).
    """

    def __init__(self, dim: int, *, heads: int = 4, k: int | None = None, knn_space: str = "xyz"):
        super().__init__()
        if dim % heads:
            raise ValueError(f"dim must be divisible by heads, got dim={dim}, heads={heads}")
        V.check_int("k", k, low=1, allow_none=True, note=" (full attention)")
        V.check_choice("knn_space", knn_space, ("feature", "xyz"))
        self.heads, self.k, self.knn_space = heads, k, knn_space
        self.q = nn.Linear(dim, dim)
        self.kv = nn.Linear(dim, 2 * dim)
        self.out = nn.Linear(dim, dim)

    def neighbours(self, x: torch.Tensor, pos: torch.Tensor | None,
                   lengths: torch.Tensor | None = None) -> torch.Tensor | None:
        """(B, N, K) neighbour indices of every point, or None for full attention. With
        ``lengths`` (B,) (a padded batch) only real points are neighbours (-1 fills a cloud with
        fewer than K), and full attention becomes the (B, N, N) index of the real points."""
        if self.k is None:
            return None if lengths is None else all_index(lengths, lengths, x.shape[1], x.shape[1])
        space = x if self.knn_space == "feature" else pos
        if space is None:
            raise ValueError("pos is required when knn_space='xyz'")
        space = space.detach()
        return knn(space, space, min(self.k, x.shape[1]), ref_lengths=lengths)[1]

    def attend(self, x: torch.Tensor, idx: torch.Tensor | None, *,
               need_weights: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
        """x: (B, N, C), idx: (B, N, K) from :meth:`neighbours` (None: all points) ->
        (B, N, C) output and the (B, N, K, H) weights (None unless ``need_weights``)."""
        batch, n, channels = x.shape
        q = self.q(x).view(batch, n, self.heads, -1)  # (B, N, H, D)
        out, weights = attend(q, self.kv(x), idx, need_weights=need_weights)
        return self.out(out.reshape(batch, n, channels)), weights

    def forward(self, x: torch.Tensor, pos: torch.Tensor | None = None, *,
                return_attention: bool = False):
        """x: (B, N, C), pos: (B, N, 3) -> (B, N, C) [, {"idx": (B,N,K), "weights": (B,N,K,H)}]."""
        idx = self.neighbours(x, pos)
        out, weights = self.attend(x, idx, need_weights=return_attention)
        if return_attention:
            return out, {"idx": idx, "weights": weights}
        return out
