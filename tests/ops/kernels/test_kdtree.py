"""The KD-tree kernels directly: equal-coordinate runs, identical leaves, the node-id cap."""

import numpy as np
import pytest
import torch

from pointabstract.ops import knn_naive
from pointabstract.ops.kernels import kdtree, kdtree_build
from tests.fixtures import degenerate_cloud

LEAF = 8


def _query(pos, k, nodes=None, mode=0, r2=0.0):
    """Self-query of (B, N, 3) float32 ``pos`` through the serial driver; returns (dist, idx)."""
    pts = pos.numpy()
    batch, n, _ = pts.shape
    trees = kdtree.allocate_trees(batch, n, LEAF, pts.dtype)
    if nodes is not None:  # starve the tree of node ids: it must stop splitting, not overrun
        trees = trees._replace(**{name: getattr(trees, name)[:, :nodes].copy()
                                  for name in ("lo", "hi", "dim", "val", "left")})
    dist = np.full((batch, n, k), np.inf, pts.dtype)
    idx = np.full((batch, n, k), -1, np.int64)
    lengths = np.full(batch, n, np.int64)
    kdtree.query_ser(pts, lengths, pts, lengths, LEAF, False, mode, k, np.float32(r2), trees,
                     dist, idx)
    return torch.from_numpy(dist), torch.from_numpy(idx), trees


@pytest.mark.parametrize("kind", ["identical", "half duplicates", "few values", "lattice"])
def test_splits_keep_equal_coordinates_together(kind):
    pos = degenerate_cloud(kind, batch=1, n=700)
    d, i, trees = _query(pos, 9)
    d_ref, i_ref = knn_naive(pos, pos, 9)
    assert torch.equal(i, i_ref) and torch.equal(d, d_ref)
    perm, lo, hi, dim, val, left = (t[0] for t in (trees.perm, trees.lo, trees.hi, trees.dim, trees.val, trees.left))
    x = pos[0].numpy()
    used = np.flatnonzero(left[: kdtree_build.max_nodes(700, LEAF)] != -2)
    for node in used:
        if left[node] >= 0:  # an inner node: no coordinate equal to the cut value on the left
            a = dim[node]
            lo_side = x[perm[lo[node] : hi[left[node]]], a]
            hi_side = x[perm[lo[left[node] + 1] : hi[node]], a]
            assert lo_side.max() <= val[node] <= hi_side.min()
            assert lo_side.max() < hi_side.min()
        elif dim[node] == 3:  # a leaf of identical points, indices ascending
            members = perm[lo[node] : hi[node]]
            assert (np.diff(members) > 0).all() and (x[members] == x[members[0]]).all()


@pytest.mark.parametrize("nodes", [1, 3, 9])
def test_out_of_node_ids_means_bigger_leaves_not_wrong_answers(nodes):
    pos = degenerate_cloud("lattice", batch=2, n=500)
    d, i, _ = _query(pos, 6, nodes=nodes)
    d_ref, i_ref = knn_naive(pos, pos, 6)
    assert torch.equal(i, i_ref) and torch.equal(d, d_ref)


def test_ball_query_in_an_identical_leaf_takes_the_lowest_indices():
    pos = torch.zeros(1, 300, 3)
    pos[0, ::7] = 1.0  # every 7th point elsewhere
    d, i, _ = _query(pos, 5, mode=1, r2=0.25)
    near = [j for j in range(300) if j % 7][:5]
    assert i[0, 1].tolist() == near and i[0, 0].tolist() == [0, 7, 14, 21, 28]
    assert (d == 0).all()
