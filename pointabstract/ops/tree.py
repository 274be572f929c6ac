"""A k-ary spatial hierarchy over a point cloud (the tree Sequoia attention runs on).

Construction (KD-tree style, batched, torch only so it runs on CPU and CUDA): the whole cloud
is one node; a node is split into ``branching`` contiguous slabs of (near-)equal size along
its widest axis (its points sorted by that coordinate, ties kept in their current order),
and so on for ``depth`` rounds, ``depth`` being the fewest rounds after which every node
holds at most ``leaf_size`` points. The node sizes depend on N only, so every cloud of a
batch has the same structure and everything is a dense tensor.

Levels are numbered bottom-up: level 0 holds the points themselves (the tree's leaves, one
per token), level 1 the smallest groups (at most ``leaf_size`` points each), the last level
the root. When N is not a multiple of the group sizes some nodes hold fewer points, and
when N < branching ** depth some hold none (``num_points == 0``, position 0).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .. import _validate as V

__all__ = ["PointTree", "TreeLevel", "build_tree", "build_tree_naive"]


@dataclass
class TreeLevel:
    """One level of a :class:`PointTree` (``S`` nodes, batched over ``B`` clouds).

    Attributes:
        pos: (B, S, 3) node positions: the mean of the points under each node.
        parent: (B, S) int64 index of each node's parent in the level above (-1 at the root).
        children: (B, S, K) int64 indices into the level below, -1 padded; for level 1 they
            are point indices into the input cloud; (B, S, 0) at level 0.
        num_points: (B, S) int64 number of points under each node.
    """

    pos: torch.Tensor
    parent: torch.Tensor
    children: torch.Tensor
    num_points: torch.Tensor


@dataclass
class PointTree:
    """A batched k-ary tree over points: ``levels[0]`` = the points, ``levels[-1]`` = root.

    Attributes:
        levels: bottom-up list of :class:`TreeLevel`.
        leaf_order: (B, N) int64 point indices in tree order (the points of every node are
            contiguous in it; ``levels[1]`` node j covers a fixed range of it).
        branching: children per internal node above level 1.
        leaf_size: maximum points per level-1 node.
    """

    levels: list[TreeLevel]
    leaf_order: torch.Tensor
    branching: int
    leaf_size: int


def build_tree(pos: torch.Tensor, *, branching: int = 2, leaf_size: int = 16) -> PointTree:
    """Build the k-ary hierarchy of each cloud by recursive slab splits on the widest axis.

    Args:
        pos: (B, N, 3) point coordinates.
        branching: children per internal node, >= 2 (2 gives a KD-tree of median splits).
        leaf_size: maximum points grouped under one level-1 node, >= 1.

    Returns:
        PointTree with ``depth + 2`` levels (points, ``depth`` levels of groups, root).
        ``levels[l].parent`` indexes ``levels[l + 1]``, ``levels[l].children`` indexes
        ``levels[l - 1]``.
    """
    V.check_cloud("pos", pos)
    branching = V.check_int("branching", branching, low=2)
    leaf_size = V.check_int("leaf_size", leaf_size, low=1)
    batch, n, _ = pos.shape
    bounds = _bounds(n, branching, leaf_size, pos.device)  # per depth: (S_d + 1,) range ends
    order = torch.arange(n, device=pos.device).expand(batch, n).contiguous()
    for b in bounds[:-1]:
        order = _split_round(pos, order, b)
    return _assemble(pos, order, bounds, branching, leaf_size)


def _bounds(n: int, branching: int, leaf_size: int, device) -> list[torch.Tensor]:
    """Node range boundaries in tree order for depth 0 (the root) down to the deepest level."""
    out = [torch.tensor([0, n], device=device)]
    while -(-n // branching ** (len(out) - 1)) > leaf_size:
        lo, hi = out[-1][:-1], out[-1][1:]
        cuts = lo[:, None] + torch.arange(branching, device=device) * (hi - lo)[:, None] // branching
        out.append(torch.cat([cuts.reshape(-1), out[-1][-1:]]))
    return out


def _segments(bounds: torch.Tensor, n: int) -> torch.Tensor:
    """Node id of every tree-order position 0..N-1."""
    return torch.searchsorted(bounds[1:], torch.arange(n, device=bounds.device), right=True)


def _split_round(pos, order, bounds):
    """Sort the points of every node by the coordinate along the node's widest axis."""
    batch, n = order.shape
    seg = _segments(bounds, n).expand(batch, n)  # (B, N)
    pts = torch.gather(pos, 1, order.unsqueeze(-1).expand(-1, -1, 3))  # tree order, (B, N, 3)
    nodes = bounds.numel() - 1
    index = seg.unsqueeze(-1).expand(-1, -1, 3)
    lo = pts.new_full((batch, nodes, 3), float("inf")).scatter_reduce(1, index, pts, "amin")
    hi = pts.new_full((batch, nodes, 3), -float("inf")).scatter_reduce(1, index, pts, "amax")
    axis = torch.argmax(hi - lo, dim=-1)  # (B, S) widest axis of each node, first on ties
    key = torch.gather(pts, 2, torch.gather(axis, 1, seg).unsqueeze(-1)).squeeze(-1)
    by_key = torch.sort(key, dim=1, stable=True).indices
    by_seg = torch.sort(torch.gather(seg, 1, by_key), dim=1, stable=True).indices
    return torch.gather(order, 1, torch.gather(by_key, 1, by_seg))


def _assemble(pos, order, bounds, branching, leaf_size):
    batch, n, _ = pos.shape
    dev = pos.device
    tree_pts = torch.gather(pos, 1, order.unsqueeze(-1).expand(-1, -1, 3)).double()
    csum = torch.cat([tree_pts.new_zeros(batch, 1, 3), tree_pts.cumsum(1)], 1)  # (B, N+1, 3)
    groups = []  # bottom-up: deepest depth first
    for depth in range(len(bounds) - 1, -1, -1):
        b = bounds[depth]
        count = (b[1:] - b[:-1]).expand(batch, -1)
        total = csum[:, b[1:]] - csum[:, b[:-1]]
        node_pos = (total / count.clamp(min=1).unsqueeze(-1)).to(pos.dtype)
        nodes = count.shape[1]
        parent = (torch.arange(nodes, device=dev) // branching if depth else
                  torch.full((1,), -1, device=dev)).expand(batch, -1)
        if depth == len(bounds) - 1:  # level 1: children are points
            width = int(count.max()) if count.numel() else 0
            slot = b[:-1, None] + torch.arange(width, device=dev)
            inside = slot < b[1:, None]
            children = torch.gather(order, 1, slot.clamp(max=n - 1).reshape(1, -1).expand(batch, -1))
            children = children.view(batch, nodes, width).masked_fill(~inside, -1)
        else:
            children = (torch.arange(nodes, device=dev)[:, None] * branching
                        + torch.arange(branching, device=dev)).expand(batch, -1, -1)
        groups.append(TreeLevel(node_pos, parent.contiguous(), children.contiguous(), count))
    point_parent = torch.empty_like(order)
    point_parent.scatter_(1, order, _segments(bounds[-1], n).expand(batch, n).contiguous())
    points = TreeLevel(pos, point_parent, torch.empty(batch, n, 0, dtype=torch.int64, device=dev),
                       torch.ones(batch, n, dtype=torch.int64, device=dev))
    return PointTree([points, *groups], order, branching, leaf_size)


def build_tree_naive(pos: torch.Tensor, *, branching: int = 2, leaf_size: int = 16) -> list[list[int]]:
    """Reference (tests only): leaf order of one cloud (N, 3) by plain recursion."""
    pts = pos.tolist()
    n = len(pts)
    depth = 0
    while -(-n // branching**depth) > leaf_size:
        depth += 1

    def split(ids, level):
        if level == depth:
            return ids
        if ids:  # widest axis, extents in the input dtype, first axis on ties
            sub = pos[ids]
            axis = int(torch.argmax(sub.max(0).values - sub.min(0).values))
            ids = sorted(ids, key=lambda i: pts[i][axis])  # stable: ties keep their order
        cuts = [len(ids) * j // branching for j in range(branching + 1)]
        return [i for j in range(branching) for i in split(ids[cuts[j]:cuts[j + 1]], level + 1)]

    return split(list(range(n)), 0)
