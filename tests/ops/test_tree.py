import numpy as np
import pytest
import torch

from pointabstract.ops import build_tree, build_tree_naive
from tests.fixtures import cloud


@pytest.mark.parametrize("n,branching,leaf", [(1, 2, 1), (7, 2, 2), (64, 2, 16), (64, 4, 4),
                                              (1000, 2, 16), (1000, 4, 16), (1000, 8, 32),
                                              (10, 4, 2), (37, 3, 5)])
def test_leaf_order_matches_naive(n, branching, leaf):
    pos = cloud(2, n, seed=n)
    tree = build_tree(pos, branching=branching, leaf_size=leaf)
    for b in range(2):
        assert tree.leaf_order[b].tolist() == build_tree_naive(pos[b], branching=branching,
                                                               leaf_size=leaf)


@pytest.mark.parametrize("n,branching,leaf", [(1000, 2, 16), (1000, 4, 8), (10, 4, 2), (5, 2, 8)])
def test_structure_is_consistent(n, branching, leaf):
    pos = cloud(3, n, seed=1)
    tree = build_tree(pos, branching=branching, leaf_size=leaf)
    points, groups, root = tree.levels[0], tree.levels[1], tree.levels[-1]
    assert torch.equal(points.pos, pos) and root.pos.shape == (3, 1, 3)
    assert (root.parent == -1).all() and (root.num_points == n).all()
    torch.testing.assert_close(root.pos, pos.mean(1, keepdim=True))
    # every point is a child of exactly one level-1 node, the one its parent entry names
    kids = groups.children
    assert kids.shape[2] <= leaf
    assert sorted(kids[kids >= 0].view(3, -1)[0].tolist()) == list(range(n))
    for b in range(3):
        for j in range(kids.shape[1]):
            mine = kids[b, j][kids[b, j] >= 0]
            assert (points.parent[b, mine] == j).all()
            assert groups.num_points[b, j] == len(mine)
            if len(mine):
                torch.testing.assert_close(groups.pos[b, j], pos[b, mine].mean(0))
    # above level 1: parent/children are inverse maps and counts add up
    for lower, upper in zip(tree.levels[1:-1], tree.levels[2:]):
        assert upper.children.shape[2] == branching
        for b in range(3):
            for j in range(upper.pos.shape[1]):
                for c in upper.children[b, j].tolist():
                    assert lower.parent[b, c] == j
                assert upper.num_points[b, j] == lower.num_points[b, upper.children[b, j]].sum()


def test_hand_computed_line():
    # 8 points on the x axis in shuffled order; binary tree, leaves of 2: sorted pairs
    xs = [5.0, 1, 7, 3, 0, 6, 2, 4]
    pos = torch.tensor([[[x, 0, 0] for x in xs]])
    tree = build_tree(pos, branching=2, leaf_size=2)
    assert len(tree.levels) == 4  # points, 4 pairs, 2 halves, root
    assert [xs[i] for i in tree.leaf_order[0].tolist()] == [0, 1, 2, 3, 4, 5, 6, 7]
    assert tree.levels[1].pos[0, :, 0].tolist() == [0.5, 2.5, 4.5, 6.5]
    assert tree.levels[2].pos[0, :, 0].tolist() == [1.5, 5.5]
    assert tree.levels[2].children[0].tolist() == [[0, 1], [2, 3]]
    assert tree.levels[1].parent[0].tolist() == [0, 0, 1, 1]


def test_splits_along_the_widest_axis():
    pos = torch.tensor([[[0.0, 0, 0], [0, 10, 0], [1, 5, 0], [0.5, 2, 0]]])  # y is widest
    tree = build_tree(pos, branching=2, leaf_size=2)
    assert tree.levels[1].children[0].tolist() == [[0, 3], [2, 1]]


def test_small_clouds_have_empty_nodes_marked():
    tree = build_tree(cloud(1, 9), branching=4, leaf_size=2)
    counts = tree.levels[1].num_points[0]
    assert counts.sum() == 9 and (counts == 0).any()
    assert (tree.levels[1].children[0][counts == 0] == -1).all()


@pytest.mark.parametrize("kwargs,error,match", [
    ({"branching": 1}, ValueError, "branching must be an int >= 2, got 1"),
    ({"leaf_size": 0}, ValueError, "leaf_size must be a positive int, got 0"),
    ({"branching": 2.0}, TypeError, "branching must be an int, got float"),
    ({"leaf_size": np.float32(4)}, TypeError, "leaf_size must be an int, got float32"),
])
def test_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        build_tree(cloud(1, 10), **kwargs)


def test_numpy_integer_arguments():
    pos = cloud(2, 100, seed=4)
    want = build_tree(pos, branching=3, leaf_size=8)
    got = build_tree(pos, branching=np.int64(3), leaf_size=np.int32(8))
    assert torch.equal(got.leaf_order, want.leaf_order) and got.leaf_size == 8


def test_identical_points():
    tree = build_tree(torch.zeros(1, 5000, 3), leaf_size=16)
    assert tree.leaf_order[0].sort().values.tolist() == list(range(5000))
    assert (tree.levels[-1].pos == 0).all() and int(tree.levels[-1].num_points[0, 0]) == 5000
