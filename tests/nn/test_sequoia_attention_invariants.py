"""Invariants of Sequoia attention taken from the paper's text (the fidelity audit, docs/fidelity_sequoia_contextpool.md).

- Each node attends to exactly its children, its siblings and its ancestors (Sec.
  "Hierarchical Transformers"): the key sets the layer actually weights, read from its
  recorded attention weights on a hand-built tree, against a plain enumeration from the
  points' coordinates.
- With the whole cloud in one group (``leaf_size >= N``) every point's sibling set is every
  other point: the layer is then dense softmax attention (eq. 1-2, self excluded) plus one
  hub, written here as (N, N) matrices on the same weights.
- Bottom-up in one layer: a leaf's change reaches exactly its ancestors among the hubs and,
  through the root, every leaf (sequential mode); the parallel mode (the official code's)
  moves only the leaf's parent.
"""

import math

import pytest
import torch

from pointabstract.nn.sequoia_attention import SequoiaAttention
from pointabstract.ops import build_tree
from tests.fixtures import cloud


def _layer(mode="sequential", dim=8, seed=0, **kwargs):
    torch.manual_seed(seed)
    layer = SequoiaAttention(dim, heads=2, mode=mode, **kwargs).double()
    with torch.no_grad():  # distinct mixing weights, so a swapped proposal would show
        layer.mix.copy_(torch.tensor([0.3, -0.2, 0.5]))
    return layer


# -- the attention sets ---------------------------------------------------------------------

# 8 points on the x axis at coordinates 5 1 7 3 0 6 2 4 (point i sits at COORD[i]); with
# branching 2 and leaf_size 2 the tree groups the coordinates {0,1} {2,3} {4,5} {6,7}, then
# {0..3} {4..7}, then the root: level 1 node g holds coordinates 2g, 2g+1, level 2 node G
# holds 4G..4G+3.
COORD = [5, 1, 7, 3, 0, 6, 2, 4]


def _line_tree():
    pos = torch.zeros(1, 8, 3, dtype=torch.float64)
    pos[0, :, 0] = torch.tensor(COORD, dtype=torch.float64)
    x = cloud(1, 8, 8, dtype=torch.float64, seed=1)
    return pos, x, build_tree(pos, branching=2, leaf_size=2)


def _paper_sets():
    """{(level, node): {"children": set, "siblings": set, "ancestors": set}} from the
    coordinates alone; members are (level, node) pairs. Levels 0 points, 1, 2, 3 root."""
    group = {0: lambda i: COORD[i], 1: lambda g: 2 * g, 2: lambda g: 4 * g}  # lowest coordinate held
    nodes = {0: range(8), 1: range(4), 2: range(2), 3: range(1)}

    def parent(lvl, s):  # the node one level up holding the same coordinates
        return (lvl + 1, group[lvl](s) // 2 ** (lvl + 1)) if lvl < 3 else None

    sets = {}
    for lvl, members in nodes.items():
        for s in members:
            anc, node = set(), parent(lvl, s)
            while node is not None:
                anc.add(node)
                node = parent(*node)
            kids = {(lvl - 1, c) for c in nodes.get(lvl - 1, ()) if lvl and parent(lvl - 1, c) == (lvl, s)}
            sib = {(lvl, t) for t in members if t != s and lvl < 3 and parent(lvl, t) == parent(lvl, s)}
            sets[lvl, s] = {"children": kids, "siblings": sib, "ancestors": anc}
    return sets


def _weighted_keys(info, lvl, name, sizes):
    """{node: set of (level, node) keys with a non-zero weight} of one proposal at one level."""
    if name not in info["weights"][lvl]:
        return {}
    w, idx = info["weights"][lvl][name]
    out = {}
    for s in range(idx.shape[1]):
        keys = set()
        for k in range(idx.shape[2]):
            if float(w[0, s, k].abs().max()) == 0:
                continue
            j = int(idx[0, s, k])
            if name == "children":
                keys.add((lvl - 1, j))
            elif name == "siblings":
                keys.add((lvl, j))
            else:  # ancestors / final: indices into levels lvl + 1 .. R concatenated
                up = lvl + 1
                while j >= sizes[up]:
                    j, up = j - sizes[up], up + 1
                keys.add((up, j))
        out[s] = keys
    return out


def test_each_node_attends_exactly_to_its_children_siblings_and_ancestors():
    pos, x, tree = _line_tree()
    assert [lv.parent.shape[1] for lv in tree.levels] == [8, 4, 2, 1]
    layer = _layer()
    with torch.no_grad():
        _, info = layer(x, pos, tree, return_nodes=True)
    sizes = [lv.parent.shape[1] for lv in tree.levels]
    want = _paper_sets()
    for lvl in range(4):
        got = {name: _weighted_keys(info, lvl, name, sizes) for name in ("children", "siblings", "ancestors")}
        for s in range(sizes[lvl]):
            for name in ("children", "siblings", "ancestors"):
                assert got[name].get(s, set()) == want[lvl, s][name], (lvl, s, name)
    # the sequential mode's last read: every point reads its (updated) ancestors, and only them
    final = _weighted_keys(info, 0, "final", sizes)
    assert all(final[i] == want[0, i]["ancestors"] for i in range(8))


# -- the dense special case -----------------------------------------------------------------

def _dense(attn, xq, pq, xk, pk, mask):
    """Softmax attention of S queries to all T keys as (S, T) matrices, on ``attn``'s weights
    (the TreeProposal formula: logits q.k / sqrt(D) + MLP(p_k - p_q), values v + W_r (p_k - p_q)).
    xq (S, C), pq (S, 3), xk (T, C), pk (T, 3), mask (S, T) bool -> (S, C)."""
    heads = attn.heads
    width = xq.shape[1] // heads
    q = attn.q(xq).view(-1, heads, width)  # (S, H, D)
    key, value = attn.kv(xk).view(-1, 2, heads, width).unbind(1)  # (T, H, D)
    rel = pk.unsqueeze(0) - pq.unsqueeze(1)  # (S, T, 3)
    logits = torch.einsum("shd,thd->sth", q, key) / math.sqrt(width) + attn.pos_bias(rel)  # (S, T, H)
    w = logits.masked_fill(~mask.unsqueeze(-1), -math.inf).softmax(1)
    vals = value.unsqueeze(0) + attn.pos_value(rel).view(*rel.shape[:2], heads, width)  # (S, T, H, D)
    return attn.out(torch.einsum("sth,sthd->shd", w, vals).reshape(len(xq), -1))


def test_one_group_is_dense_softmax_attention_plus_one_hub():
    # leaf_size >= N: the tree is the points under one root, so a point's siblings are all the
    # other points; the layer must equal this all-pairs computation on its own weights
    n = 7
    pos = cloud(1, n, dtype=torch.float64, seed=3)
    x = cloud(1, n, 8, dtype=torch.float64, seed=4)
    tree = build_tree(pos, branching=2, leaf_size=n)
    assert len(tree.levels) == 2
    layer = _layer(seed=5)
    with torch.no_grad():
        y = layer(x, pos, tree)[0]
        p, h0 = pos[0], x[0]
        others, every = ~torch.eye(n, dtype=torch.bool), torch.ones(n, 1, dtype=torch.bool)
        root_pos = p.mean(0, keepdim=True)
        pool = layer.pool_score(h0).softmax(0)  # (N, 1): the root's initial state
        h1 = (pool * h0).sum(0, keepdim=True)
        ln = layer.norm

        def ffn(t):  # FFN(LN2(t)): the MLP without its residual
            return layer.mlp.net(layer.mlp.norm(t))
        # leaves: their siblings (dense, self excluded) and their ancestor (the root), mixed
        sib = _dense(layer.siblings_attn, ln(h0), p, ln(h0), p, others)
        anc = _dense(layer.ancestors_attn, ln(h0), p, ln(h1), root_pos, every)
        m = layer.mix.exp()
        a0 = h0 + (m[1] * sib + m[2] * anc) / (m[1] + m[2])
        # the root: its children, already updated
        u1 = h1 + _dense(layer.children_attn, ln(h1), root_pos, ln(a0), p, every.T)
        u1 = u1 + ffn(u1)
        # leaves read the updated root, then the MLP
        a = a0 + _dense(layer.final_attn, ln(a0), p, ln(u1), root_pos, every)
        want = a + ffn(a)
    torch.testing.assert_close(y, want)


# -- the bottom-up order --------------------------------------------------------------------

def _moved(mode, point):
    """Levels' changed node sets when one leaf's features move, with the hub states given (a
    second layer of a stack), and the tree."""
    pos = cloud(1, 32, dtype=torch.float64, seed=7)
    x = cloud(1, 32, 8, dtype=torch.float64, seed=8)
    tree = build_tree(pos, branching=2, leaf_size=4)
    _, first = _layer(mode, seed=1, siblings_k=3)(x, pos, tree, return_nodes=True)
    layer = _layer(mode, seed=2, siblings_k=3, pool_children=False)
    y = x.clone()
    y[0, point] += torch.linspace(0.5, 1.0, 8, dtype=torch.float64)
    with torch.no_grad():
        _, a = layer(x, pos, tree, nodes=first["nodes"], return_nodes=True)
        _, b = layer(y, pos, tree, nodes=first["nodes"], return_nodes=True)
    changed = [set(((u - v).abs().amax(-1)[0] > 1e-12).nonzero().flatten().tolist())
               for u, v in zip(a["nodes"], b["nodes"])]
    return changed, tree


def _ancestors(tree, point):
    """[level 1 node, level 2 node, ..., root] above ``point``, from the parent pointers."""
    chain, node = [], point
    for lv in tree.levels[:-1]:
        node = int(lv.parent[0, node])
        chain.append(node)
    return chain


@pytest.mark.parametrize("point", [0, 13])
def test_sequential_a_leaf_reaches_exactly_its_ancestors_and_every_leaf_in_one_layer(point):
    changed, tree = _moved("sequential", point)
    chain = _ancestors(tree, point)
    assert len(changed) == 5  # points, 8 groups, 4, 2, root
    for lvl in range(1, 5):  # hubs: the ancestors (updated bottom-up from their children), only
        assert changed[lvl] == {chain[lvl - 1]}, lvl
    assert changed[0] == set(range(32))  # every point, through its updated ancestors


def test_parallel_a_leaf_reaches_only_its_parent_among_the_hubs_in_one_layer():
    # the official code's order: every level from the layer's input states, so within one layer
    # the change stops at the parent (documented in docs/fidelity_sequoia_contextpool.md)
    changed, tree = _moved("parallel", 13)
    chain = _ancestors(tree, 13)
    assert changed[1] == {chain[0]}
    assert all(not c for c in changed[2:])
    assert changed[0] != set(range(32))
