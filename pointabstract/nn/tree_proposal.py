"""One proposal of Sequoia attention: multi-head attention of nodes to gathered nodes with
relative positions, per query (any relation) or in groups that share their keys (the
children of one parent share their siblings and ancestors). Used by
:class:`~pointabstract.nn.sequoia_attention.SequoiaAttention`."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .. import _validate as V
from ..ops.gather import take_rows
from .attention import _fused_ok, _NeighbourDot, _NeighbourSum  # the same fused CPU products
from .mlp import MLP

__all__ = ["TreeProposal", "masked_softmax"]


def masked_softmax(logits: torch.Tensor, mask: torch.Tensor, dim: int) -> torch.Tensor:
    """Softmax over ``dim`` where ``mask``; masked entries (and all-masked rows) get exactly 0."""
    filled = logits.masked_fill(~mask, torch.finfo(logits.dtype).min)
    return filled.softmax(dim) * mask


class TreeProposal(nn.Module):
    """Multi-head attention of S queries to K gathered keys each, with relative positions.

    The relative position ``r = p_key - p_query`` enters twice: an MLP of ``r`` adds one bias
    per head to the logits, and a linear map of ``r`` is added to each value::

        w_k = softmax_k(q . key_k / sqrt(D) + MLP(r_k)),   out = W_o sum_k w_k (v_k + W_r r_k)

    Padded keys (index -1) get weight exactly 0; a query without any key gets output 0.
    Both linear maps of ``r`` are evaluated per node, not per (query, key) pair, which is the
    same arithmetic: ``W r_k = W p_key - W p_query`` (the MLP's first layer, and ``W_r`` with
    ``sum_k w_k W_r r_k = sum_k w_k W_r p_k - W_r p_query`` as the weights sum to 1).

    Two ways to call it, with the same result where both apply: ``forward`` takes one key
    list per query (any relation, e.g. the nearest nodes); ``grouped`` takes queries in groups
    that share one key list (the children of one parent share their siblings and their
    ancestors) and runs each group as a small dense block, with batched matrix products
    instead of per-query gathers.

    With ``rel_pos=False`` neither term exists: ``w_k = softmax_k(q . key_k / sqrt(D))``,
    ``out = W_o sum_k w_k v_k``, the Sequoia paper's eq. 1-2 as printed.

    Args:
        dim: channels C (divisible by ``heads``).
        heads: attention heads H.
        pos_hidden: hidden width of the position-bias MLP.
        rel_pos: the two relative-position terms (default); False drops them.
    """

    def __init__(self, dim: int, *, heads: int, pos_hidden: int = 32, rel_pos: bool = True):
        super().__init__()
        self.heads = heads
        self.q = nn.Linear(dim, dim)
        self.kv = nn.Linear(dim, 2 * dim)
        self.out = nn.Linear(dim, dim)
        self.rel_pos = V.check_bool("rel_pos", rel_pos)
        self.pos_bias = MLP([3, pos_hidden, heads], act="relu") if rel_pos else None  # Linear, ReLU, Linear
        self.pos_value = nn.Linear(3, dim, bias=False) if rel_pos else None

    def forward(self, x, pos, src, src_pos, idx):
        """Attend, each query to its own keys.

        Args:
            x: (B, S, C) query features; pos: (B, S, 3) their positions.
            src: (B, T, C) key / value features; src_pos: (B, T, 3) their positions.
            idx: (B, S, K) int64 indices into T, -1 padded.

        Returns:
            out: (B, S, C); has: (B, S) bool, True where the query had at least one key;
            weights: (B, S, K, H) attention weights (0 on padding).
        """
        batch, size, channels = x.shape
        heads, width = self.heads, channels // self.heads
        mask = idx >= 0  # (B, S, K)
        safe = idx.clamp(min=0)  # padding reads row 0 and gets weight 0
        kv, hid = self._keys(src, src_pos)  # (B, T, 2C), (B, T, P)
        q, hid_q = self._queries(x, pos)  # (B, S, H, D), (B, S, P)
        bias = self._bias(take_rows(hid, safe), hid_q.unsqueeze(2)) if self.rel_pos else 0.0  # (B, S, K, H)
        fused = _fused_ok(q, kv)  # CPU: compiled neighbour products, no (B, S, K, C) tensor
        if fused:
            dots = _NeighbourDot.apply(q, kv, safe)  # (B, S, K, H)
        else:
            key, value = take_rows(kv, safe).view(batch, size, idx.shape[2], 2, heads, width).unbind(3)
            dots = (q.unsqueeze(2) * key).sum(-1)  # (B, S, K, H)
        weights = masked_softmax(dots / math.sqrt(width) + bias, mask.unsqueeze(-1), dim=2)
        if fused:
            out = _NeighbourSum.apply(weights, kv, safe)  # (B, S, H, D)
        else:
            out = torch.einsum("bskh,bskhd->bshd", weights, value)
        has = mask.any(-1)
        return self._output(out, weights.sum(2), pos) * has.unsqueeze(-1).to(x.dtype), has, weights

    def grouped(self, x, pos, src, src_pos, members, keys, *, exclude_self: bool = False):
        """Attend, the queries of each group to the group's shared keys.

        Args:
            x: (B, S, C) query features; pos: (B, S, 3) their positions.
            src: (B, T, C) key / value features; src_pos: (B, T, 3) their positions.
            members: (B, G, Q) int64 indices into S of each group's queries, -1 padded; a
                query belongs to at most one group.
            keys: (B, G, K) int64 indices into T of each group's keys, -1 padded.
            exclude_self: a query never attends to the key that is itself
                (``keys[b, g, k] == members[b, g, q]``; siblings, where keys are the members).

        Returns:
            the same as ``forward`` with ``idx[b, s] = keys[b, g]`` for the group g of query s
            (its own column masked with ``exclude_self``); a query in no group gets output 0
            and ``has`` False.
        """
        batch, size, channels = x.shape
        groups, per, count = members.shape[1], members.shape[2], keys.shape[2]
        heads, width = self.heads, channels // self.heads
        mask = (members >= 0).unsqueeze(3) & (keys >= 0).unsqueeze(2)  # (B, G, Q, K)
        if exclude_self:
            mask = mask & (keys.unsqueeze(2) != members.unsqueeze(3))
        kv, hid = self._keys(src, src_pos)
        q, hid_q = self._queries(x, pos)
        bias = self._bias(take_rows(hid, keys).unsqueeze(2), take_rows(hid_q, members).unsqueeze(3)) \
            if self.rel_pos else 0.0
        q = take_rows(q.reshape(batch, size, channels), members).view(batch, groups, per, heads, width)
        key, value = take_rows(kv, keys).view(batch, groups, count, 2, heads, width).transpose(2, 4).unbind(3)
        dots = (q.transpose(2, 3) @ key.transpose(3, 4)).permute(0, 1, 3, 4, 2)  # (B, G, Q, K, H)
        weights = masked_softmax(dots / math.sqrt(width) + bias, mask.unsqueeze(-1), dim=3)
        out = (weights.permute(0, 1, 4, 2, 3) @ value).transpose(2, 3)  # (B, G, Q, H, D)
        where = _flat_rows(members, size)  # (B, S) row of each query in the (G Q) layout, -1 none
        inside = (where >= 0).to(x.dtype)
        out = take_rows(out.reshape(batch, groups * per, channels), where).view(batch, size, heads, width)
        weights = take_rows(weights.reshape(batch, groups * per, count * heads), where)
        weights = weights.view(batch, size, count, heads) * inside.view(batch, size, 1, 1)
        total = weights.sum(2)  # (B, S, H): 1 where the query has a key, else 0
        has = total[..., 0] > 0
        return self._output(out, total, pos) * has.unsqueeze(-1).to(x.dtype), has, weights

    def _keys(self, src, src_pos):
        """(B, T, 2C) keys, then values with their position term ``W_r p``; (B, T, P) the
        position MLP's first layer without bias (None without the position terms)."""
        kv = self.kv(src)
        if not self.rel_pos:
            return kv, None
        value = kv[..., kv.shape[-1] // 2:] + self.pos_value(src_pos)
        return torch.cat([kv[..., :kv.shape[-1] // 2], value], -1), F.linear(src_pos, self.pos_bias[0].weight)

    def _queries(self, x, pos):
        """(B, S, H, D) queries and (B, S, P) their first-layer position term."""
        q = self.q(x).view(*x.shape[:2], self.heads, -1)
        return q, F.linear(pos, self.pos_bias[0].weight) if self.rel_pos else None

    def _bias(self, key, query):
        """First-layer terms ``W p_key`` and ``W p_query`` (..., P), broadcast against each other,
        -> (..., H) logit bias of ``W (p_key - p_query)``. The query term is negated before it is
        broadcast (with the layer's bias added), so the backward pass reduces the pair gradient
        instead of first negating all of it."""
        return self.pos_bias[2](torch.relu(key + (self.pos_bias[0].bias - query)))

    def _output(self, out, total, pos):
        """(B, S, H, D) weighted values, (B, S, H) weight sums (1, or 0 without keys) ->
        (B, S, C): minus the query's position term, then the output map."""
        batch, size, heads, width = out.shape
        if self.rel_pos:
            out = out - total.unsqueeze(-1) * self.pos_value(pos).view(batch, size, heads, width)
        return self.out(out.reshape(batch, size, heads * width))


def _flat_rows(members: torch.Tensor, size: int) -> torch.Tensor:
    """(B, G, Q) group members -> (B, S) row ``g * Q + q`` of each query in the flattened
    (G Q) layout (``members[b, g, q] == s``), -1 for a query in no group."""
    batch, groups, per = members.shape
    rows = torch.arange(groups * per, device=members.device).view(1, groups, per).expand(batch, -1, -1)
    where = members.masked_fill(members < 0, size).reshape(batch, -1)
    out = members.new_full((batch, size + 1), -1).scatter_(1, where, rows.reshape(batch, -1))
    return out[:, :size]
