"""Padded neighbour tables of a :class:`~pointabstract.ops.tree.PointTree` for tree attention.

``build_tree`` gives each level's ``parent`` and ``children``; Sequoia attention also needs,
for every node, its siblings and its ancestors up to the root, as dense index tables so a
whole level is processed with one gather. Nodes that hold no point (``num_points == 0``,
which happens when N < branching ** depth) are never listed: they are padding.

Levels are numbered as in ``PointTree``: 0 = the points (leaves), ``R = len(levels) - 1`` =
the root. Every table is int64 and padded with -1.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .knn import knn
from .tree import PointTree

__all__ = ["TreeTables", "nearest_siblings", "node_positions", "tree_tables", "tree_tables_naive"]


@dataclass
class TreeTables:
    """Per-level index tables of a batched tree (lists of length ``R + 1``, one per level).

    Attributes:
        children: level l: (B, S_l, K_l) indices into level l - 1 of the node's non-empty
            children; (B, N, 0) at level 0.
        siblings: level l: (B, S_l, K_l) indices into level l of the other non-empty children
            of the node's parent (the node itself excluded); (B, 1, 0) at the root.
        ancestors: level l: (B, S_l, R - l) indices into the concatenation of levels
            l + 1, ..., R (in that order, along the node dimension); column a holds the
            ancestor at level l + 1 + a, so the last column is the root.
        valid: level l: (B, S_l) bool, True where the node holds at least one point.
        nearest: level l: (B, S_l, k) indices into level l of the k nearest other non-empty
            nodes by position (the parallel mode's siblings), or None when not asked for.
    """

    children: list[torch.Tensor]
    siblings: list[torch.Tensor]
    ancestors: list[torch.Tensor]
    valid: list[torch.Tensor]
    nearest: list[torch.Tensor] | None = None


def _mask(idx: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    return idx.masked_fill(~keep, -1)


def _valid_at(valid: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    """(B, S, K) validity of the nodes ``idx`` points to (False for padding)."""
    flat = torch.gather(valid, 1, idx.clamp(min=0).reshape(idx.shape[0], -1)).view(idx.shape)
    return flat & (idx >= 0)


def tree_tables(tree: PointTree, *, nearest: int | None = None) -> TreeTables:
    """Children, sibling and ancestor tables of every level (vectorised, CPU or CUDA).

    Args:
        tree: output of :func:`~pointabstract.ops.build_tree` over B clouds of N points.
        nearest: also build ``nearest`` tables with this many same-level neighbours per node
            (capped at the level's size minus one); None skips them.

    Returns:
        :class:`TreeTables`; every index refers to the levels named in its docstring.
    """
    if not isinstance(tree, PointTree):
        raise TypeError(f"tree must be a PointTree (from build_tree), got {type(tree).__name__}")
    if nearest is not None and (isinstance(nearest, bool) or not isinstance(nearest, int) or nearest < 1):
        raise ValueError(f"nearest must be an int >= 1 or None, got {nearest!r}")
    levels = tree.levels
    valid = [lv.num_points > 0 for lv in levels]
    batch = levels[0].pos.shape[0]
    children, siblings, ancestors = [], [], []
    for lvl, level in enumerate(levels):
        ch = level.children
        children.append(_mask(ch, _valid_at(valid[lvl - 1], ch)) if lvl else ch)
        size = level.parent.shape[1]
        if lvl + 1 < len(levels):
            up = levels[lvl + 1].children  # (B, S_{l+1}, K)
            par = level.parent.clamp(min=0)
            sib = torch.gather(up, 1, par.unsqueeze(-1).expand(-1, -1, up.shape[2]))  # (B, S, K)
            own = torch.arange(size, device=sib.device).view(1, -1, 1)
            keep = _valid_at(valid[lvl], sib) & (sib != own) & valid[lvl].unsqueeze(-1)
            siblings.append(_mask(sib, keep))
        else:
            siblings.append(level.parent.new_empty(batch, size, 0))
        chain, offset, node = [], 0, level.parent
        for up_level in range(lvl + 1, len(levels)):
            chain.append(node + offset)
            offset += levels[up_level].parent.shape[1]
            node = torch.gather(levels[up_level].parent, 1, node.clamp(min=0))
        anc = torch.stack(chain, -1) if chain else level.parent.new_empty(batch, size, 0)
        ancestors.append(_mask(anc, valid[lvl].unsqueeze(-1).expand_as(anc)))
    near = None if nearest is None else [nearest_siblings(lv.pos, v, nearest)
                                         for lv, v in zip(levels, valid)]
    return TreeTables(children, siblings, ancestors, valid, near)


def nearest_siblings(pos: torch.Tensor, valid: torch.Tensor, k: int) -> torch.Tensor:
    """The k nearest other valid nodes of every valid node of one level.

    Args:
        pos: (B, S, 3) node positions.
        valid: (B, S) bool; invalid nodes neither get nor are neighbours.
        k: neighbours per node (capped at S - 1).

    Returns:
        (B, S, min(k, S - 1)) int64 indices into the level, nearest first, -1 padded (rows of
        invalid nodes, and clouds with fewer valid nodes than k + 1).
    """
    batch, size, _ = pos.shape
    k = min(k, size - 1)
    if k <= 0:
        return valid.new_zeros(batch, size, 0, dtype=torch.int64)
    far = pos.detach().abs().amax() * 4 + 1  # invalid nodes move beyond every valid one
    spread = torch.arange(size, device=pos.device, dtype=pos.dtype).view(1, -1, 1)
    pts = torch.where(valid.unsqueeze(-1), pos.detach(), far * (2 + spread))
    _, idx = knn(pts, pts, k + 1)  # (B, S, k + 1), usually the node itself first
    own = torch.arange(size, device=pos.device).view(1, -1, 1)
    keep = (idx != own) & _valid_at(valid, idx) & valid.unsqueeze(-1)
    order = torch.sort((~keep).to(torch.int8), dim=-1, stable=True).indices  # kept entries first
    idx, keep = torch.gather(idx, 2, order), torch.gather(keep, 2, order)
    return _mask(idx, keep)[..., :k]


def node_positions(pos: torch.Tensor, tree: PointTree, tables: TreeTables) -> list[torch.Tensor]:
    """Differentiable positions of every level: the mean of the points under each node.

    Args:
        pos: (B, N, 3) the points the tree was built on (gradients flow back to them).
        tree, tables: the tree and its tables.

    Returns:
        list of (B, S_l, 3), level 0 being ``pos`` itself; empty nodes sit at the origin.
    """
    out = [pos]
    for lvl in range(1, len(tree.levels)):
        idx = tables.children[lvl]
        below = torch.gather(tree.levels[lvl - 1].num_points, 1,
                             idx.clamp(min=0).reshape(idx.shape[0], -1)).view(idx.shape)
        weight = (below * (idx >= 0)).to(pos.dtype)  # (B, S, K) points under each child
        total = weight.sum(-1, keepdim=True).clamp(min=1)
        out.append((_take(out[-1], idx) * (weight / total).unsqueeze(-1)).sum(2))
    return out


def _take(x: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    from .gather import take_rows

    return take_rows(x, idx)  # -1 gathers row 0; callers weight or mask it away


def tree_tables_naive(tree: PointTree, b: int) -> dict:
    """Reference (tests only): cloud ``b``'s relations as Python sets and lists, derived from
    the parent pointers and point counts alone.

    Returns:
        ``{"children": [[set]], "siblings": [[set]], "ancestors": [[list of (level, id)]]}``
        indexed ``[level][node]``; empty nodes have empty relations.
    """
    parents = [lv.parent[b].tolist() for lv in tree.levels]
    counts = [lv.num_points[b].tolist() for lv in tree.levels]
    top = len(parents) - 1
    children = [[set() for _ in p] for p in parents]
    for lvl in range(top):
        for node, par in enumerate(parents[lvl]):
            if counts[lvl][node] > 0:
                children[lvl + 1][par].add(node)
    siblings, ancestors = [], []
    for lvl in range(top + 1):
        siblings.append([(children[lvl + 1][parents[lvl][s]] - {s}) if lvl < top and counts[lvl][s] else set()
                         for s in range(len(parents[lvl]))])
        rows = []
        for s in range(len(parents[lvl])):
            chain, node = [], s
            for up in range(lvl, top):
                node = parents[up][node]
                chain.append((up + 1, node))
            rows.append(chain if counts[lvl][s] else [])
        ancestors.append(rows)
    return {"children": children, "siblings": siblings, "ancestors": ancestors}
