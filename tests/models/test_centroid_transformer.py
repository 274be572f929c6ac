"""CentroidTransformer's structure: its blocks come from nn/blocks.py and its parameter names
(hence its checkpoints) stay as they were when the blocks lived in the model file."""

import pytest
import torch

from pointabstract.models import MODELS, build_model
from pointabstract.nn import BlockStack, CABlock, SABlock

# the state_dict names of a self-attention and a centroid-attention block, in order: checkpoints
# written before the blocks moved to nn/blocks.py must still load
SA_KEYS = ["norm.weight", "norm.bias", "attn.q.weight", "attn.q.bias", "attn.kv.weight", "attn.kv.bias",
           "attn.out.weight", "attn.out.bias", "mlp.norm.weight", "mlp.norm.bias", "mlp.net.0.weight",
           "mlp.net.0.bias", "mlp.net.2.weight", "mlp.net.2.bias"]
CA_KEYS = ["attn.proj_in.weight", "attn.proj_in.bias", "attn.norm_u.weight", "attn.norm_u.bias",
           "attn.norm_x.weight", "attn.norm_x.bias", "attn.q.weight", "attn.q.bias", "attn.kv.weight",
           "attn.kv.bias", "attn.out.weight", "attn.out.bias", "attn.mlp.norm.weight", "attn.mlp.norm.bias",
           "attn.mlp.net.0.weight", "attn.mlp.net.0.bias", "attn.mlp.net.2.weight", "attn.mlp.net.2.bias"]


def test_state_dict_names_are_stable():
    keys = list(build_model("centroid_transformer", tiny=True, num_classes=5).state_dict())
    assert [k.split(".")[0] for k in keys] == ["embed"] * 14 + ["blocks"] * 64 + ["fuse"] * 7 + ["head"] * 9
    for i, names in enumerate([SA_KEYS, CA_KEYS, SA_KEYS, CA_KEYS]):
        assert [k[len(f"blocks.{i}."):] for k in keys if k.startswith(f"blocks.{i}.")] == names


def test_blocks_are_the_nn_blocks_in_a_stack():
    model = build_model("centroid_transformer", tiny=True, num_classes=5)
    assert isinstance(model.blocks, BlockStack)
    assert [type(b) for b in model.blocks] == [SABlock, CABlock, SABlock, CABlock]
    assert [b.dim_out for b in model.blocks] == list(MODELS["centroid_transformer"].tiny["widths"])
    sa = build_model("self_attention_transformer", tiny=True, num_classes=5)
    assert [type(b) for b in sa.blocks] == [SABlock] * 4


def test_returned_blocks_are_the_stack_outputs():
    torch.manual_seed(0)
    model = build_model("centroid_transformer", tiny=True, num_classes=5).eval()
    pos = torch.rand(2, 64, 3)
    out = model(pos, return_features=True)
    x = model.embed_points(pos, None)
    _, _, info = model.blocks(x, pos)
    for got, want in zip(out["blocks"], info["blocks"], strict=True):
        assert got.keys() == want.keys()
        for key in got:
            assert got[key] is None if want[key] is None else torch.equal(got[key], want[key])


@pytest.mark.parametrize("bad, error, match", [
    (torch.rand(64, 3), ValueError, r"pos must have shape \(B, N, 3\), got \(64, 3\)"),
    (torch.rand(2, 64, 2), ValueError, r"pos must have shape \(B, N, 3\), got \(2, 64, 2\)"),
    (torch.full((1, 64, 3), float("nan")), ValueError, "pos holds NaN or Inf values"),
    (torch.randint(0, 3, (1, 64, 3)), TypeError, "pos must be a floating-point tensor"),
    (torch.rand(1, 0, 3), ValueError, "pos must hold at least one cloud of at least one point"),
])
def test_forward_names_its_own_inputs(bad, error, match):
    model = build_model("centroid_transformer", tiny=True, num_classes=3)
    with pytest.raises(error, match=match):
        model(bad)


@pytest.mark.parametrize("cfg, match", [
    ({"heads": 0}, "heads must be a positive integer, got 0"),
    ({"heads": 3}, r"every block width must be divisible by heads = 3"),
    ({"k": 0}, r"k must be a positive integer or None \(full attention\), got 0"),
    ({"ratios": (0.5, 0.0)}, r"ratios must lie in \(0, 1\], got \(0.5, 0.0\)"),
])
def test_bad_configs_name_the_field(cfg, match):
    with pytest.raises(ValueError, match=match):
        build_model("centroid_transformer", tiny=True, **cfg)


def _embed_literal(model, pos, features=None):
    """The point embedding as written: the MLP applied to every (neighbour - point, point) edge."""
    from pointabstract.ops import gather_points, knn

    point = pos if features is None else torch.cat([pos, features], -1)
    _, idx = knn(pos, pos, min(model.cfg.embed_k, pos.shape[1]))
    rel = gather_points(pos, idx) - pos.unsqueeze(2)
    edge = torch.cat([rel, point.unsqueeze(2).expand(-1, -1, idx.shape[2], -1)], -1)
    return model.embed(edge).max(2).values


@pytest.mark.parametrize("in_channels, norm", [(0, "batch"), (3, "batch"), (0, "layer")])
def test_embedding_equals_the_edge_mlp_it_factorises(in_channels, norm):
    """The first linear layer is applied per point and gathered per edge (W (p_j - p_i) + V x_i =
    (W p)_j + ((V - W) p)_i): the same values and gradients as the MLP on every edge."""
    torch.manual_seed(0)
    model = build_model("centroid_transformer", tiny=True, num_classes=5, in_channels=in_channels, norm=norm).double().train()
    pos = torch.rand(3, 40, 3, dtype=torch.float64, requires_grad=True)
    features = torch.randn(3, 40, in_channels, dtype=torch.float64) if in_channels else None
    fast = model.embed_points(pos, features)
    fast_grads = torch.autograd.grad(fast.square().sum(), [pos, *model.embed.parameters()])
    slow = _embed_literal(model, pos, features)
    slow_grads = torch.autograd.grad(slow.square().sum(), [pos, *model.embed.parameters()])
    torch.testing.assert_close(fast, slow, rtol=1e-10, atol=1e-10)
    for a, b in zip(fast_grads, slow_grads, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-9)
