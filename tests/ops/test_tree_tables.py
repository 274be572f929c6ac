import pytest
import torch

from pointabstract.ops import build_tree
from pointabstract.ops.tree_tables import nearest_siblings, node_positions, tree_tables, tree_tables_naive
from tests.fixtures import cloud


def _as_sets(table, b):
    return [{int(i) for i in row if i >= 0} for row in table[b]]


@pytest.mark.parametrize("n,branching,leaf_size", [(10, 2, 2), (37, 3, 4), (5, 4, 1), (64, 2, 16), (1, 2, 4)])
def test_tables_match_naive(n, branching, leaf_size):
    pos = cloud(2, n, seed=n)
    tree = build_tree(pos, branching=branching, leaf_size=leaf_size)
    tab = tree_tables(tree)
    sizes = [lv.parent.shape[1] for lv in tree.levels]
    for b in range(2):
        ref = tree_tables_naive(tree, b)
        for lvl in range(len(sizes)):
            if lvl:
                assert _as_sets(tab.children[lvl], b) == ref["children"][lvl]
            assert _as_sets(tab.siblings[lvl], b) == ref["siblings"][lvl]
            offsets = {up: sum(sizes[lvl + 1:up]) for up in range(lvl + 1, len(sizes))}
            want = [[offsets[up] + node for up, node in row] for row in ref["ancestors"][lvl]]
            got = [[int(i) for i in row if i >= 0] for row in tab.ancestors[lvl][b]]
            assert got == want


def test_hand_computed_tree():
    # 4 points on a line, binary tree with one point per group: levels 4 -> 4 -> 2 -> 1
    pos = torch.tensor([[[3.0, 0, 0], [0.0, 0, 0], [2.0, 0, 0], [1.0, 0, 0]]])
    tree = build_tree(pos, branching=2, leaf_size=1)
    tab = tree_tables(tree)
    # level-1 node j holds the j-th point from the left: points 1, 3, 2, 0
    assert tab.children[1][0].tolist() == [[1], [3], [2], [0]]
    assert _as_sets(tab.siblings[1], 0) == [{1}, {0}, {3}, {2}]
    assert tab.ancestors[1][0].tolist() == [[0, 2], [0, 2], [1, 2], [1, 2]]  # levels 2 then 3
    assert tab.siblings[3][0].shape == (1, 0) and tab.ancestors[3][0].shape == (1, 0)
    levels = node_positions(pos, tree, tab)
    assert levels[2][0, :, 0].tolist() == [0.5, 2.5] and levels[3][0, 0, 0].item() == 1.5


def test_empty_nodes_are_padding():
    pos = cloud(1, 5, seed=3)
    tree = build_tree(pos, branching=4, leaf_size=1)  # 16 groups for 5 points: 11 empty
    tab = tree_tables(tree, nearest=3)
    empty = ~tab.valid[1][0]
    assert int(empty.sum()) == 11
    for lvl in (1, 2):
        for table in (tab.siblings[lvl], tab.nearest[lvl], tab.ancestors[lvl]):
            assert (table[0][empty if lvl == 1 else ~tab.valid[lvl][0]] < 0).all()
    for table in (tab.children[2], tab.siblings[1], tab.nearest[1]):  # all point into level 1
        assert tab.valid[1][0, table[table >= 0]].all()


def test_node_positions_are_leaf_means_and_differentiable():
    pos = cloud(2, 50, dtype=torch.float64, seed=1).requires_grad_()
    tree = build_tree(pos.detach(), branching=3, leaf_size=4)
    levels = node_positions(pos, tree, tree_tables(tree))
    for lvl, p in enumerate(levels):
        torch.testing.assert_close(p.detach(), tree.levels[lvl].pos)
    levels[-1].sum().backward()
    torch.testing.assert_close(pos.grad, torch.full_like(pos, 1 / 50))


def test_nearest_siblings_brute_force():
    pos = cloud(2, 30, seed=5)
    valid = torch.ones(2, 30, dtype=torch.bool)
    valid[0, 3] = valid[1, 7] = False
    idx = nearest_siblings(pos, valid, 4)
    for b in range(2):
        for s in range(30):
            if not valid[b, s]:
                assert (idx[b, s] < 0).all()
                continue
            d = ((pos[b] - pos[b, s]) ** 2).sum(-1)
            d[s] = float("inf")
            d[~valid[b]] = float("inf")
            assert idx[b, s].tolist() == torch.argsort(d)[:4].tolist()
    assert nearest_siblings(pos[:, :3], valid[:, :3], 16).shape == (2, 3, 2)


def test_bad_input():
    with pytest.raises(TypeError, match="tree must be a PointTree"):
        tree_tables(torch.zeros(1, 4, 3))
    tree = build_tree(cloud(1, 8), branching=2, leaf_size=2)
    with pytest.raises(ValueError, match="nearest must be an int >= 1"):
        tree_tables(tree, nearest=0)
