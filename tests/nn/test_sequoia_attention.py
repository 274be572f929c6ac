import pytest
import torch

from pointabstract.nn import tree_proposal
from pointabstract.nn.sequoia_attention import SequoiaAttention
from pointabstract.nn.sequoia_attention_naive import sequoia_attention_naive
from pointabstract.ops import build_tree
from tests.fixtures import cloud


def _layer(mode, dim=8, **kwargs):
    torch.manual_seed(0)
    layer = SequoiaAttention(dim, heads=2, mode=mode, **kwargs).double()
    with torch.no_grad():  # non-zero mixing weights so the three proposals differ in weight
        layer.mix.copy_(torch.tensor([0.3, -0.2, 0.5]))
    return layer


@pytest.mark.parametrize("fused", [True, False])  # compiled CPU products / plain gathers (CUDA)
@pytest.mark.parametrize("mode", ["sequential", "parallel"])
@pytest.mark.parametrize("n,branching,leaf_size", [(23, 2, 4), (30, 3, 2), (6, 4, 1), (3, 2, 8)])
def test_matches_naive(mode, n, branching, leaf_size, fused, monkeypatch):
    if not fused:
        monkeypatch.setattr(tree_proposal, "_fused_ok", lambda q, kv: False)
    layer = _layer(mode, siblings_k=3)
    pos = cloud(2, n, dtype=torch.float64, seed=n)
    x = cloud(2, n, 8, dtype=torch.float64, seed=n + 1)
    tree = build_tree(pos, branching=branching, leaf_size=leaf_size)
    fast, info = layer(x, pos, tree, return_nodes=True)
    with torch.no_grad():
        ref = sequoia_attention_naive(layer, x, pos, tree)
    torch.testing.assert_close(fast, ref[0])
    for got, want in zip(info["nodes"], ref):  # every level, empty nodes (zero) included
        torch.testing.assert_close(got, want)
    # a second layer starting from the first one's node states
    second = _layer(mode, siblings_k=3)
    with torch.no_grad():
        ref2 = sequoia_attention_naive(second, fast, pos, tree, nodes=info["nodes"])
    torch.testing.assert_close(second(fast, pos, tree, nodes=info["nodes"]), ref2[0])


@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("mode", ["sequential", "parallel"])
def test_without_position_terms_matches_naive(mode, fused, monkeypatch):
    # rel_pos=False: the paper's eq. 1-2 as printed, no position bias or value term anywhere
    if not fused:
        monkeypatch.setattr(tree_proposal, "_fused_ok", lambda q, kv: False)
    layer = _layer(mode, siblings_k=3, rel_pos=False)
    assert not any("pos_" in name for name, _ in layer.named_parameters())
    pos = cloud(2, 23, dtype=torch.float64, seed=23)
    x = cloud(2, 23, 8, dtype=torch.float64, seed=24)
    tree = build_tree(pos, branching=2, leaf_size=4)
    fast, info = layer(x, pos, tree, return_nodes=True)
    with torch.no_grad():
        ref = sequoia_attention_naive(layer, x, pos, tree)
    for got, want in zip([fast, *info["nodes"][1:]], ref):
        torch.testing.assert_close(got, want)
    # positions then reach the output only through the tree: scaling the cloud (same tree)
    # changes nothing, while with the position terms it does
    torch.testing.assert_close(layer(x, pos * 3.0, tree), fast)
    with_pos = _layer(mode, siblings_k=3)
    assert not torch.allclose(with_pos(x, pos * 3.0, tree), with_pos(x, pos, tree))


@pytest.mark.parametrize("mode", ["sequential", "parallel"])
def test_gradients_reach_every_input_and_parameter(mode):
    layer = _layer(mode, siblings_k=3)
    pos = cloud(2, 40, dtype=torch.float64, seed=1).requires_grad_()
    x = cloud(2, 40, 8, dtype=torch.float64, seed=2).requires_grad_()
    _, info = layer(x, pos, build_tree(pos.detach(), branching=2, leaf_size=4), return_nodes=True)
    sum(n.square().sum() for n in info["nodes"]).backward()  # every level: hubs feed the next layer
    assert x.grad.abs().sum(-1).gt(0).all() and pos.grad.abs().sum(-1).gt(0).all()
    for name, p in layer.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name


@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("mode", ["sequential", "parallel"])
def test_gradcheck(mode, fused, monkeypatch):
    if not fused:
        monkeypatch.setattr(tree_proposal, "_fused_ok", lambda q, kv: False)
    layer = _layer(mode, dim=4, siblings_k=2)
    pos = cloud(1, 9, dtype=torch.float64, seed=3).requires_grad_()
    x = cloud(1, 9, 4, dtype=torch.float64, seed=4).requires_grad_()
    tree = build_tree(pos.detach(), branching=2, leaf_size=2)
    assert torch.autograd.gradcheck(lambda a, b: layer(a, b, tree), (x, pos))


@pytest.mark.parametrize("mode", ["sequential", "parallel"])
def test_padding_never_receives_attention(mode):
    # 6 points in a 4-ary tree with one point per group: most groups are empty (padding)
    layer = _layer(mode, siblings_k=4)
    pos = cloud(2, 6, dtype=torch.float64, seed=5)
    x = cloud(2, 6, 8, dtype=torch.float64, seed=6)
    tree = build_tree(pos, branching=4, leaf_size=1)
    y, info = layer(x, pos, tree, return_nodes=True)
    padded = 0
    for level in info["weights"]:
        for weights, idx in level.values():
            pad = idx < 0
            padded += int(pad.sum())
            assert (weights[pad] == 0).all()
            torch.testing.assert_close(weights.sum(2)[~pad.all(-1)], torch.ones_like(weights.sum(2)[~pad.all(-1)]))
    assert padded > 0
    empty = tree.levels[1].num_points == 0
    assert empty.any() and (info["nodes"][1][empty] == 0).all()
    # whatever an empty node holds changes nothing
    nodes = [n.clone() for n in info["nodes"]]
    nodes[1][empty] = 1e3
    torch.testing.assert_close(layer(x, pos, tree, nodes=nodes), layer(x, pos, tree, nodes=info["nodes"]))


@pytest.mark.parametrize("mode", ["sequential", "parallel"])
def test_receptive_field_is_the_whole_cloud(mode):
    # one layer: every output point depends on every input point (through the root; in
    # parallel mode through the pooled initial ancestors)
    layer = _layer(mode, siblings_k=2)
    pos = cloud(1, 32, dtype=torch.float64, seed=7)
    x = cloud(1, 32, 8, dtype=torch.float64, seed=8)
    tree = build_tree(pos, branching=2, leaf_size=4)
    for point in (0, 17, 31):
        jac = torch.autograd.functional.jacobian(lambda a, i=point: layer(a, pos, tree)[0, i].sum(), x)
        assert jac.abs().sum(-1).gt(0).all()


def _given_hubs(batch: int, n: int, seed: int):
    """(pos, x, tree, hub states of a first parallel layer, a last layer that neither pools
    children nor updates hubs): the set-up of a network's last parallel layer."""
    pos = cloud(batch, n, dtype=torch.float64, seed=seed)
    x = cloud(batch, n, 8, dtype=torch.float64, seed=seed + 1)
    tree = build_tree(pos, branching=2, leaf_size=4)
    _, info = _layer("parallel", siblings_k=3)(x, pos, tree, return_nodes=True)
    last = _layer("parallel", siblings_k=3, pool_children=False, update_hubs=False)
    return pos, x, tree, info, last


def test_layer_without_pooling_or_hub_updates():
    pos, x, tree, info, last = _given_hubs(2, 30, seed=13)
    assert last.pool_score is None and last.children_attn is None
    y, out = last(x, pos, tree, nodes=info["nodes"], return_nodes=True)
    with torch.no_grad():
        ref = sequoia_attention_naive(last, x, pos, tree, nodes=info["nodes"])
    torch.testing.assert_close(y, ref[0])
    assert all(a is b for a, b in zip(out["nodes"][1:], info["nodes"][1:]))  # hubs untouched
    with pytest.raises(ValueError, match="nodes are required"):
        last(x, pos, tree)
    with pytest.raises(ValueError, match="update_hubs=False is for the parallel mode"):
        SequoiaAttention(8, heads=2, update_hubs=False)


def test_builds_its_own_tree_and_shares_tables():
    layer = _layer("parallel", siblings_k=3)
    pos = cloud(2, 50, dtype=torch.float64, seed=11)
    x = cloud(2, 50, 8, dtype=torch.float64, seed=12)
    tree = build_tree(pos, branching=4, leaf_size=16)
    torch.testing.assert_close(layer(x, pos), layer(x, pos, tree, tables=layer.tables(tree)))


def test_bad_input():
    layer = _layer("sequential")
    pos = cloud(1, 10, dtype=torch.float64)
    x = cloud(1, 10, 8, dtype=torch.float64)
    with pytest.raises(ValueError, match="dim must be divisible by heads"):
        SequoiaAttention(10, heads=4)
    with pytest.raises(ValueError, match="mode must be one of"):
        SequoiaAttention(8, heads=2, mode="bottom-up")
    with pytest.raises(ValueError, match=r"x must have shape \(B, N, 8\)"):
        layer(x[..., :4], pos)
    with pytest.raises(ValueError, match=r"pos must have shape \(B, N, 3\)"):
        layer(x, pos[..., :2])
    with pytest.raises(ValueError, match="same N points"):
        layer(x[:, :5], pos)
    with pytest.raises(ValueError, match="NaN or Inf"):
        layer(x, pos.clone().fill_(float("nan")))
    with pytest.raises(ValueError, match="tree was built on clouds"):
        layer(x, pos, build_tree(pos[:, :6]))
    par = _layer("parallel")
    tree = build_tree(pos)
    with pytest.raises(ValueError, match="nodes must hold one"):
        layer(x, pos, tree, nodes=[x])
    with pytest.raises(ValueError, match="nearest-sibling tables"):
        par(x, pos, tree, tables=layer.tables(tree))


@pytest.mark.parametrize("mode", ["sequential", "parallel"])
def test_bf16_features_under_autocast(mode):
    """Under autocast (the trainer's amp on CUDA) the features arrive in bfloat16 while the
    positions stay float32: accepted (before: "x and pos must have the same dtype")."""
    layer = _layer(mode).float()
    pos, x = cloud(2, 40), cloud(2, 40, 8, seed=1)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = layer(x.bfloat16(), pos)
    assert out.shape == (2, 40, 8) and torch.isfinite(out.float()).all()


def test_parallel_leaf_reads_only_its_nearest_points_and_the_given_hubs():
    # with the hub states given (nodes) and no hub update, a parallel-mode leaf sees itself, its
    # siblings_k nearest points and its ancestors' given states: moving any other point's
    # features changes nothing for it, moving a nearest one does
    pos, x, tree, info, last = _given_hubs(1, 40, seed=15)
    near = last.tables(tree).nearest[0][0]  # (N, 3)
    for point in (0, 21):
        jac = torch.autograd.functional.jacobian(
            lambda a, i=point: last(a, pos, tree, nodes=info["nodes"])[0, i].sum(), x)[0]  # (N, C)
        reach = jac.abs().sum(-1) > 0
        assert set(reach.nonzero().flatten().tolist()) == {point, *near[point].tolist()}


def test_grouped_proposal_matches_per_query_tables():
    # the shared-key block path gives the per-query path's outputs and weights
    torch.manual_seed(0)
    attn = tree_proposal.TreeProposal(8, heads=2).double()
    x, pos = cloud(2, 7, 8, dtype=torch.float64, seed=17), cloud(2, 7, dtype=torch.float64, seed=18)
    src, src_pos = cloud(2, 5, 8, dtype=torch.float64, seed=19), cloud(2, 5, dtype=torch.float64, seed=20)
    members = torch.tensor([[[0, 3, -1], [1, 2, 4], [6, -1, -1]]] * 2)  # query 5 in no group
    keys = torch.tensor([[[4, -1], [0, 2], [-1, -1]]] * 2)  # group 2 has no key
    idx = torch.full((2, 7, 2), -1)
    for g, row in enumerate(members[0].tolist()):
        for s in row:
            if s >= 0:
                idx[:, s] = keys[:, g]
    out, has, w = attn.grouped(x, pos, src, src_pos, members, keys)
    ref_out, ref_has, ref_w = attn(x, pos, src, src_pos, idx)
    assert has[0].tolist() == [True, True, True, True, True, False, False] and torch.equal(has, ref_has)
    torch.testing.assert_close(out, ref_out)
    torch.testing.assert_close(w, ref_w)
    assert (out[~has] == 0).all() and (w[~has] == 0).all()
