"""Sequoia attention: one self-attention layer over a k-ary tree built on the points.

Sonnerly, Trang et al., *Sequoia: hierarchical self-attention layer with sparse updates for
point clouds and long sequences*. The points are the leaves of the tree from
:func:`~pointabstract.ops.build_tree`; internal nodes are hubs. Every node attends to three
sets, each giving one proposal: its children, its siblings and its ancestors up to the root.
The proposals are pooled with learned weights, then a residual and an MLP follow. Each node
attends to at most ``max(leaf_size, branching) + depth`` others, so a layer costs
O(N log N) time and memory; no (N, N) matrix is ever formed. The slow reference the tests
compare against is :func:`~pointabstract.nn.sequoia_attention_naive.sequoia_attention_naive`.
"""

from __future__ import annotations

import torch
from torch import nn

from .. import _validate as V
from ..ops import build_tree
from ..ops.gather import take_rows
from ..ops.tree import PointTree
from ..ops.tree_tables import TreeTables, node_positions, tree_tables
from .mlp import FeedForward
from .tree_proposal import TreeProposal, masked_softmax

__all__ = ["MODES", "SequoiaAttention", "TreeProposal"]

MODES = ("sequential", "parallel")


class SequoiaAttention(nn.Module):
    """Sequoia tree attention layer: ``(x: (B, N, C), pos: (B, N, 3), tree) -> (B, N, C)``.

    Internal nodes start as a learned pooling of their children (a softmax over a learned
    score of each child's features: ``h_l = sum_j softmax_j(w . h_j) h_j``, bottom-up from
    the points) and sit at the mean of their points. ``LN`` is one LayerNorm applied to every
    query and key; ``mix`` averages the proposals a node has with weights
    ``softmax(alpha)`` over three learned scalars (renormalised over the proposals present:
    leaves have no children, the root no siblings or ancestors); ``MLP(u) = u + FFN(LN2(u))``
    (a :class:`~pointabstract.nn.FeedForward` with GELU).

    ``mode="sequential"`` (the paper, default), with R the root level::

        init    h_0 = x;  h_l = pool(children of l in h_{l-1})        for l = 1..R
        l = 0   a_0 = h_0 + mix(sib(h_0), anc(h_1..h_R))               (leaves, no MLP yet)
        l = 1   u_1 = MLP(h_1 + mix(chi(a_0), sib(h_1), anc(h_2..h_R)))
        l >= 2  u_l = MLP(h_l + mix(chi(u_{l-1}), sib(h_l), anc(h_{l+1}..h_R)))   bottom-up
        final   y = MLP(a_0 + fin(a_0 -> ancestors u_1..u_R))           (leaves read their
                                                                          updated ancestors)

    so a level's children are already updated when it is, siblings and ancestors are not, and
    through the root every leaf's output depends on every point. ``sib`` lists the other
    children of the node's parent; ``chi``, ``sib``, ``anc`` and ``fin`` are four attentions
    with their own weights (``fin`` adds its output without ``mix``). With ``nodes`` from a
    previous layer, h_1..h_R are those states instead of the pooling. Empty nodes (no point
    under them) are never attended to and their states are 0.

    ``mode="parallel"`` (the official code's variant): every level at once from the
    initial states, siblings = the ``siblings_k`` nearest nodes of the same level::

        u_l = MLP(h_l + mix(chi(h_{l-1}), near(h_l), anc(h_{l+1}..h_R)))   for all l
        y = u_0

    Here a leaf sees every point only through the pooled initial ancestors.

    Args:
        dim: channels C (divisible by ``heads``).
        heads: attention heads H.
        mode: ``"sequential"`` or ``"parallel"`` (above).
        siblings_k: same-level neighbours per node in parallel mode.
        mlp_ratio: hidden width of the MLP as a multiple of C.
        branching, leaf_size: the tree built when ``forward`` gets none.
        pool_children: learn the initial pooling of children; False for a layer that always
            gets ``nodes`` from the layer before it (it then has no pooling weights).
        update_hubs: parallel mode only: also update the internal nodes. Their new states
            reach no output of this layer, only a next layer's; the last layer of a stack
            sets False, which skips that work (and its children attention).
        rel_pos: the proposals' relative-position terms (:class:`TreeProposal`; default);
            False gives the paper's eq. 1-2 as printed, plain softmax attention in each proposal.
    """

    def __init__(self, dim: int, *, heads: int = 4, mode: str = "sequential", siblings_k: int = 16,
                 mlp_ratio: float = 2.0, branching: int = 4, leaf_size: int = 16,
                 pool_children: bool = True, update_hubs: bool = True, rel_pos: bool = True):
        super().__init__()
        if dim % heads:
            raise ValueError(f"dim must be divisible by heads, got dim={dim}, heads={heads}")
        V.check_choice("mode", mode, MODES)
        if not update_hubs and mode == "sequential":
            raise ValueError("update_hubs=False is for the parallel mode; the sequential mode's leaves "
                             "read their updated ancestors")
        self.dim, self.heads, self.mode, self.siblings_k = dim, heads, mode, siblings_k
        self.branching, self.leaf_size, self.update_hubs = branching, leaf_size, update_hubs
        self.pool_score = nn.Linear(dim, 1) if pool_children else None
        self.norm = nn.LayerNorm(dim)
        self.children_attn = TreeProposal(dim, heads=heads, rel_pos=rel_pos) if update_hubs else None
        self.siblings_attn = TreeProposal(dim, heads=heads, rel_pos=rel_pos)
        self.ancestors_attn = TreeProposal(dim, heads=heads, rel_pos=rel_pos)
        self.final_attn = TreeProposal(dim, heads=heads, rel_pos=rel_pos) if mode == "sequential" else None
        self.mix = nn.Parameter(torch.zeros(3))  # children, siblings, ancestors
        self.mlp = FeedForward(dim, hidden=int(dim * mlp_ratio), act="gelu")  # u + FFN(LN2(u))

    def tables(self, tree: PointTree) -> TreeTables:
        """The index tables this layer needs (build once, share across layers)."""
        return tree_tables(tree, nearest=self.siblings_k if self.mode == "parallel" else None)

    def forward(self, x: torch.Tensor, pos: torch.Tensor, tree: PointTree | None = None, *,
                tables: TreeTables | None = None, nodes: list[torch.Tensor] | None = None,
                return_nodes: bool = False):
        """Update the leaves (the points) through the tree.

        Args:
            x: (B, N, C) point features.
            pos: (B, N, 3) point coordinates (gradients reach them through the relative
                positions).
            tree: ``build_tree`` output for ``pos``; built here (no gradient) when None.
            tables: ``self.tables(tree)``, to share across layers; built here when None.
            nodes: the previous layer's ``nodes`` (list over levels of (B, S_l, C)): levels
                1..R start from them instead of the pooling of their children (level 0 is
                ``x``), so the hubs carry their state from layer to layer. Without it, a
                parallel-mode layer's internal updates reach no output of this layer.
            return_nodes: also return the tree's node states.

        Returns:
            (B, N, C) updated point features; with ``return_nodes`` also a dict with
            ``nodes``: list over levels of (B, S_l, C) updated states (level 0 = the output),
            ``pos``: list of (B, S_l, 3) node positions, ``weights``: list over levels of
            ``{proposal: ((B, S_l, K, H) weights, (B, S_l, K) indices)}``.
        """
        V.check_cloud("x", x, dim=self.dim)
        V.check_cloud("pos", pos)
        # features may be bfloat16 under autocast (the trainer's amp on CUDA), positions stay float32
        V.check_same_batch("x", x, "pos", pos, same_channels=False, same_dtype=False)
        if x.shape[1] != pos.shape[1]:
            raise ValueError(f"x and pos must hold the same N points, got {tuple(x.shape)} and "
                             f"{tuple(pos.shape)}")
        if tree is None:
            tree = build_tree(pos.detach(), branching=self.branching, leaf_size=self.leaf_size)
        if tree.levels[0].parent.shape != pos.shape[:2]:
            raise ValueError(f"tree was built on clouds of shape {tuple(tree.levels[0].pos.shape)}, "
                             f"pos has shape {tuple(pos.shape)}")
        tables = self.tables(tree) if tables is None else tables
        if self.mode == "parallel" and tables.nearest is None:
            raise ValueError("tables lack the nearest-sibling tables the parallel mode needs; "
                             "build them with layer.tables(tree)")
        positions = node_positions(pos, tree, tables)
        run = self._sequential if self.mode == "sequential" else self._parallel
        if nodes is None:
            if self.pool_score is None:
                raise ValueError("nodes are required: this layer was built with pool_children=False")
            h = self._init_nodes(x, tables)
        else:
            if len(nodes) != len(tree.levels) or any(a.shape[:2] != b.parent.shape
                                                      for a, b in zip(nodes[1:], tree.levels[1:])):
                raise ValueError(f"nodes must hold one (B, S_l, C) tensor per tree level, got "
                                 f"{[tuple(t.shape) for t in nodes]}")
            h = [x, *nodes[1:]]
        out, weights = run(h, positions, tables)
        if return_nodes:
            return out[0], {"nodes": out, "pos": positions, "weights": weights}
        return out[0]

    # -- pieces ------------------------------------------------------------------------------
    def _init_nodes(self, x, tables):
        """h_0 = x, h_l = softmax-pooled children of level l (bottom-up)."""
        h = [x]
        for idx in tables.children[1:]:
            child = take_rows(h[-1], idx)  # (B, S, K, C)
            w = masked_softmax(self.pool_score(child).squeeze(-1), idx >= 0, dim=-1)
            h.append((w.unsqueeze(-1) * child).sum(2))
        return h

    def _propose(self, attn, q, pos, src, src_pos, idx, record, name, group=None):
        """One proposal; ``group = (members, keys, exclude_self)`` runs it as shared-key blocks
        (``TreeProposal.grouped``, the same result as the per-query table ``idx``)."""
        if idx.shape[-1] == 0:
            return None
        if group is None:
            out, has, w = attn(q, pos, src, src_pos, idx)
        else:
            out, has, w = attn.grouped(q, pos, src, src_pos, group[0], group[1], exclude_self=group[2])
        record[name] = (w, idx)
        return out, has

    def _mix(self, h, proposals):
        """h + the proposals' learned-weight average over those each node has."""
        scale = torch.exp(self.mix - self.mix.max())
        total, norm = torch.zeros_like(h), h.new_zeros(h.shape[:2])
        for which, prop in enumerate(proposals):
            if prop is not None:
                out, has = prop
                weight = scale[which] * has.to(h.dtype)  # (B, S)
                total = total + weight.unsqueeze(-1) * out
                norm = norm + weight
        return h + total / norm.clamp(min=1e-12).unsqueeze(-1)

    def _update(self, lvl, h, n, positions, tables, groups, below, up, up_pos):
        """h_l + mix(children from ``below``, siblings from n_l, ancestors from ``up``)."""
        record: dict = {}
        q, p = n[lvl], positions[lvl]
        members, shared_up = groups[lvl]
        if self.mode == "sequential":  # siblings: the parent's other children, one block per parent
            sib_table, sib_group = tables.siblings[lvl], (members, members, True)
        else:
            sib_table, sib_group = tables.nearest[lvl], None
        own = torch.arange(q.shape[1], device=q.device).view(1, -1, 1).expand(q.shape[0], -1, -1)
        props = [None if below is None else
                 self._propose(self.children_attn, q, p, below, positions[lvl - 1], tables.children[lvl],
                               record, "children", (own, tables.children[lvl], False)),
                 self._propose(self.siblings_attn, q, p, n[lvl], p, sib_table, record, "siblings",
                               sib_group),
                 None if up is None else
                 self._propose(self.ancestors_attn, q, p, up, up_pos, tables.ancestors[lvl], record,
                               "ancestors", (members, shared_up, False))]
        return self._mix(h[lvl], props), record

    def _sequential(self, h, positions, tables):
        top = len(h) - 1
        groups = _groups(tables)
        n = [self.norm(t) for t in h]
        up = [torch.cat(n[lvl + 1:], 1) if lvl < top else None for lvl in range(top + 1)]
        up_pos = [torch.cat(positions[lvl + 1:], 1) if lvl < top else None for lvl in range(top + 1)]
        out, weights, below = [None] * (top + 1), [], None
        for lvl in range(top + 1):
            u, record = self._update(lvl, h, n, positions, tables, groups, below, up[lvl], up_pos[lvl])
            out[lvl] = u if lvl == 0 else self.mlp(u) * tables.valid[lvl].unsqueeze(-1)
            below = self.norm(out[lvl])
            weights.append(record)
        record = {}
        read = self._propose(self.final_attn, self.norm(out[0]), positions[0],
                             torch.cat([self.norm(u) for u in out[1:]], 1), up_pos[0],
                             tables.ancestors[0], record, "final", (groups[0][0], groups[0][1], False))
        a0 = out[0] if read is None else out[0] + read[0] * read[1].unsqueeze(-1).to(out[0].dtype)
        out[0] = self.mlp(a0)
        weights[0].update(record)
        return out, weights

    def _parallel(self, h, positions, tables):
        top = len(h) - 1
        groups = _groups(tables)
        n = [self.norm(t) for t in h]
        out, weights = list(h), [{} for _ in h]
        for lvl in range(top + 1 if self.update_hubs else 1):
            up = torch.cat(n[lvl + 1:], 1) if lvl < top else None
            up_pos = torch.cat(positions[lvl + 1:], 1) if lvl < top else None
            u, record = self._update(lvl, h, n, positions, tables, groups, n[lvl - 1] if lvl else None,
                                     up, up_pos)
            out[lvl] = self.mlp(u) * tables.valid[lvl].unsqueeze(-1)  # empty nodes: 0
            weights[lvl] = record
        return out, weights


def _groups(tables: TreeTables) -> list:
    """Per level l: ``(members, shared_up)``, the blocks of nodes that share their relations.

    ``members`` (B, S_{l+1}, K) = the children of each level-(l + 1) node (its non-empty
    level-l children; the siblings of one are the others); ``shared_up`` (B, S_{l+1}, R - l)
    = the ancestors those children share, as indices into levels l + 1..R concatenated: the
    node itself, then its own ancestors shifted past level l + 1. Row ``members[b, g, q]``'s
    ``ancestors[l]`` table row equals ``shared_up[b, g]``. The root level gets empty tables.
    """
    out = []
    for lvl in range(len(tables.valid)):
        if lvl + 1 == len(tables.valid):
            empty = tables.ancestors[lvl]  # (B, 1, 0)
            out.append((empty, empty))
            continue
        valid = tables.valid[lvl + 1]  # (B, S_{l+1})
        size = valid.shape[1]
        own = torch.arange(size, device=valid.device).expand_as(valid).masked_fill(~valid, -1)
        above = tables.ancestors[lvl + 1]
        shared = torch.cat([own.unsqueeze(-1), above.masked_fill(above < 0, -1 - size) + size], -1)
        out.append((tables.children[lvl + 1], shared))
    return out
