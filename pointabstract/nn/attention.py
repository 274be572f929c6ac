"""Multi-head attention over all points or over each point's K nearest neighbours."""

from __future__ import annotations

import math

import torch
from torch import nn

from ..ops import gather_points, knn

__all__ = ["MultiHeadSelfAttention", "attend"]


def attend(q: torch.Tensor, kv: torch.Tensor, idx: torch.Tensor | None = None,
           *, normalize: str = "inputs") -> tuple[torch.Tensor, torch.Tensor]:
    """Scaled dot-product attention of M queries over N inputs, optionally over neighbours only.

    Args:
        q: (B, M, H, D) queries.
        kv: (B, N, 2 H D) keys of every head, then values of every head (one linear layer's
            output), so that neighbours are gathered once.
        idx: (B, M, K) int64 inputs each query may attend to (``knn`` output), or ``None`` for
            all N. With idx the cost is O(B M K H D) and no (B, M, N) matrix is formed.
        normalize: ``"inputs"``: softmax over each query's inputs (transformer attention);
            ``"centroids"``: each input's weights are normalised over the queries it is connected
            to (the soft k-means gradient of Centroid Transformers, eq. 4).

    Returns:
        out: (B, M, H, D) weighted sums of values.
        weights: (B, M, K, H) attention weights (K = N without idx).
    """
    batch, m, heads, dim = q.shape
    n = kv.shape[1]
    scale = 1.0 / math.sqrt(dim)
    if idx is None:
        k, v = kv.view(batch, n, 2, heads, dim).unbind(2)
        logits = torch.einsum("bmhd,bnhd->bmnh", q, k) * scale  # (B, M, N, H)
        weights = logits.softmax(dim=2 if normalize == "inputs" else 1)
        return torch.einsum("bmnh,bnhd->bmhd", weights, v), weights
    if _fused_ok(q, kv):  # CPU: compiled products, no (B, M, K, C) tensor at all
        logits = _NeighbourDot.apply(q, kv, idx) * scale  # (B, M, K, H)
    else:
        nb = gather_points(kv, idx)  # (B, M, K, 2 H D): one gather for keys and values
        k_nb, v_nb = nb.view(batch, m, nb.shape[2], 2, heads, dim).unbind(3)  # (B, M, K, H, D) each
        logits = (q.unsqueeze(2) * k_nb).sum(-1) * scale
    if normalize == "inputs":
        weights = logits.softmax(dim=2)
    else:
        weights = _softmax_per_input(logits, idx, n)
    if _fused_ok(q, kv):
        return _NeighbourSum.apply(weights, kv, idx), weights
    return (weights.unsqueeze(-1) * v_nb).sum(2), weights


def _fused_ok(q: torch.Tensor, kv: torch.Tensor) -> bool:
    from ..ops import kernels

    return (kernels.AVAILABLE and q.device.type == "cpu" and q.dtype == kv.dtype
            and q.dtype in (torch.float32, torch.float64))


class _NeighbourDot(torch.autograd.Function):
    """logits[b, m, k, h] = q[b, m, h] . key[b, idx[b, m, k], h] (keys: kv[..., :H D])."""

    @staticmethod
    def forward(ctx, q, kv, idx):
        from ..ops.kernels import neighbour, run, to_numpy

        q, kv = q.contiguous(), kv.contiguous()  # saved for backward, whose grads match them
        out = q.new_empty(*idx.shape, q.shape[2])
        run(neighbour.dot_forward, neighbour.dot_forward_ser, *map(to_numpy, (q, kv, idx)), out.numpy())
        ctx.save_for_backward(q, kv, idx)
        return out

    @staticmethod
    def backward(ctx, grad):
        from ..ops.kernels import neighbour, run, to_numpy

        q, kv, idx = ctx.saved_tensors
        grad_q, grad_kv = torch.empty_like(q), torch.zeros_like(kv)
        run(neighbour.dot_backward, neighbour.dot_backward_ser, *map(to_numpy, (grad, q, kv, idx)),
            grad_q.numpy(), grad_kv.numpy())
        return grad_q, grad_kv, None


class _NeighbourSum(torch.autograd.Function):
    """out[b, m, h] = sum_k w[b, m, k, h] value[b, idx[b, m, k], h] (values: kv[..., H D:])."""

    @staticmethod
    def forward(ctx, w, kv, idx):
        from ..ops.kernels import neighbour, run, to_numpy

        w, kv = w.contiguous(), kv.contiguous()
        heads = w.shape[3]
        out = w.new_empty(w.shape[0], w.shape[1], heads, kv.shape[2] // (2 * heads))
        run(neighbour.sum_forward, neighbour.sum_forward_ser, *map(to_numpy, (w, kv, idx)), out.numpy())
        ctx.save_for_backward(w, kv, idx)
        return out

    @staticmethod
    def backward(ctx, grad):
        from ..ops.kernels import neighbour, run, to_numpy

        w, kv, idx = ctx.saved_tensors
        grad_w, grad_kv = torch.empty_like(w), torch.zeros_like(kv)
        run(neighbour.sum_backward, neighbour.sum_backward_ser, *map(to_numpy, (grad, w, kv, idx)),
            grad_w.numpy(), grad_kv.numpy())
        return grad_w, grad_kv, None


def _softmax_per_input(logits: torch.Tensor, idx: torch.Tensor, n: int) -> torch.Tensor:
    """Softmax of (B, M, K, H) logits over the entries that share the same input idx[b, m, k]."""
    batch, m, kk, heads = logits.shape
    index = idx.reshape(batch, m * kk, 1).expand(-1, -1, heads)  # (B, M K, H)
    flat = logits.reshape(batch, m * kk, heads)
    peak = flat.new_full((batch, n, heads), -torch.inf).scatter_reduce(
        1, index, flat.detach(), "amax", include_self=True)  # per-input max, for stability
    e = (flat - peak.gather(1, index)).exp()
    total = e.new_zeros(batch, n, heads).scatter_add(1, index, e)
    return (e / total.gather(1, index)).view(batch, m, kk, heads)


class MultiHeadSelfAttention(nn.Module):
    """Multi-head self-attention, full or restricted to each point's k nearest neighbours.

    Returns the attention output only (callers add the residual and norms).

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
        if k is not None and k <= 0:
            raise ValueError(f"k must be positive or None, got {k}")
        if knn_space not in ("feature", "xyz"):
            raise ValueError(f"knn_space must be 'feature' or 'xyz', got {knn_space!r}")
        self.heads, self.k, self.knn_space = heads, k, knn_space
        self.q = nn.Linear(dim, dim)
        self.kv = nn.Linear(dim, 2 * dim)
        self.out = nn.Linear(dim, dim)

    def neighbours(self, x: torch.Tensor, pos: torch.Tensor | None) -> torch.Tensor | None:
        """(B, N, K) neighbour indices of every point, or None for full attention."""
        if self.k is None:
            return None
        space = x if self.knn_space == "feature" else pos
        if space is None:
            raise ValueError("pos is required when knn_space='xyz'")
        space = space.detach()
        return knn(space, space, min(self.k, x.shape[1]))[1]

    def forward(self, x: torch.Tensor, pos: torch.Tensor | None = None, *,
                return_attention: bool = False):
        """x: (B, N, C), pos: (B, N, 3) -> (B, N, C) [, {"idx": (B,N,K), "weights": (B,N,K,H)}]."""
        batch, n, channels = x.shape
        q = self.q(x).view(batch, n, self.heads, -1)  # (B, N, H, D)
        idx = self.neighbours(x, pos)
        out, weights = attend(q, self.kv(x), idx)
        out = self.out(out.reshape(batch, n, channels))
        if return_attention:
            return out, {"idx": idx, "weights": weights}
        return out
