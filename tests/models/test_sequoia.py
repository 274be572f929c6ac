import pytest
import torch

from pointabstract.models.sequoia import SPECS, SequoiaSegConfig, SequoiaSegmenter
from pointabstract.ops.tree import PointTree


def _build(name, **overrides):
    spec = SPECS[name]
    torch.manual_seed(0)
    return spec.factory(spec.config(**{**spec.defaults, **spec.tiny, **overrides}))


@pytest.mark.parametrize("name", sorted(SPECS))
def test_tiny_forward_backward(name):
    spec = SPECS[name]
    model = _build(name)
    pos = torch.rand(2, 48, 3)
    if spec.task == "part_segmentation":
        out = model(pos, torch.tensor([0, 15]), return_features=True)
        assert out["logits"].shape == (2, 48, 50)
    else:
        assert spec.task == "classification"
        out = model(pos, return_features=True)
        assert out["logits"].shape == (2, 40)
    cfg = model.cfg
    assert len(out["blocks"]) == cfg.layers
    assert all(b["features"].shape == (2, 48, cfg.dim) for b in out["blocks"])
    assert isinstance(out["tree"], PointTree) == (cfg.attention == "sequoia")
    out["logits"].sum().backward()
    for pname, p in model.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all(), pname


def test_official_settings_and_variants():
    cfg = SPECS["sequoia_seg"].config()
    assert (cfg.dim, cfg.heads, cfg.layers, cfg.head_dim, cfg.num_parts, cfg.num_categories) == \
        (128, 4, 4, 512, 50, 16)
    model = SequoiaSegmenter(cfg)
    assert [type(m).__name__ for m in model.head] == ["Linear", "LayerNorm", "ReLU", "Linear"]
    assert model.head[0].in_features == 128 + 16
    soft = SPECS["softmax_seg"]
    soft_cfg = soft.config(**soft.defaults)
    assert soft_cfg.attention == "softmax" and (soft_cfg.dim, soft_cfg.layers) == (cfg.dim, cfg.layers)
    assert SPECS["sequoia_seg_parallel"].defaults["mode"] == "parallel"
    # model.rel_pos=false: the paper's eq. 1-2 as printed (no position terms in any proposal)
    plain = SequoiaSegmenter(SPECS["sequoia_seg"].config(rel_pos=False))
    names = [n for n, _ in plain.named_parameters()]
    assert names and not any("pos_bias" in n or "pos_value" in n for n in names)
    assert any("pos_bias" in n for n, _ in model.named_parameters())


def test_category_changes_the_logits_only_through_the_head():
    model = _build("sequoia_seg").eval()
    pos = torch.rand(1, 40, 3)
    a, b = model(pos, torch.tensor([2]), return_features=True), model(pos, torch.tensor([5]))
    assert not torch.allclose(a["logits"], b["logits"])


@pytest.mark.parametrize("name", ["sequoia_seg", "softmax_seg", "sequoia_seg_parallel"])
def test_point_order_does_not_matter(name):
    # dense attention is permutation-equivariant; the tree is too, up to ties in the slab sorts
    model = _build(name).double().eval()
    pos = torch.rand(2, 40, 3, dtype=torch.float64)
    perm = torch.randperm(40)
    cat = torch.tensor([1, 4])
    torch.testing.assert_close(model(pos, cat)["logits"][:, perm], model(pos[:, perm], cat)["logits"])


def test_normals_as_features():
    model = _build("sequoia_seg", in_channels=3)
    pos = torch.rand(2, 32, 3)
    assert model(pos, torch.tensor([0, 1]), features=torch.rand(2, 32, 3))["logits"].shape == (2, 32, 50)
    with pytest.raises(TypeError, match=r"features must be a torch.Tensor, got NoneType"):
        model(pos, torch.tensor([0, 1]))
    with pytest.raises(ValueError, match=r"features must have shape \(B, N, C\) = \(2, 32, 3\) matching pos "
                                         r"\(2, 32, 3\), got \(2, 32, 2\)"):
        model(pos, torch.tensor([0, 1]), features=torch.rand(2, 32, 2))
    cls = _build("sequoia_cls", num_classes=5)
    with pytest.raises(ValueError, match="features given but the model has in_channels=0"):
        cls(pos, features=torch.rand(2, 32, 3))


def test_bad_input():
    model = _build("sequoia_seg")
    pos = torch.rand(2, 32, 3)
    cat = torch.tensor([0, 1])
    with pytest.raises(ValueError, match=r"pos must have shape \(B, N, 3\), got \(32, 3\)"):
        model(pos[0], cat)
    with pytest.raises(ValueError, match=r"pos must have shape \(B, N, 3\), got \(2, 32, 2\)"):
        model(pos[..., :2], cat)
    bad = pos.clone()
    bad[1, 3, 0] = float("inf")
    with pytest.raises(ValueError, match=r"pos holds NaN or Inf values \(first at index \(1, 3, 0\)\)"):
        model(bad, cat)
    with pytest.raises(ValueError, match=r"category values must lie in \[0, 15\], got values in \[0, 16\]"):
        model(pos, torch.tensor([0, 16]))
    with pytest.raises(ValueError, match=r"category must have shape \(B,\) = \(2,\), got \(1,\)"):
        model(pos, cat[:1])
    with pytest.raises(TypeError, match="category must have dtype int64, got torch.int32"):
        model(pos, cat.int())
    with pytest.raises(TypeError, match="category must be a torch.Tensor of dtype int64, got list"):
        model(pos, [0, 1])
    with pytest.raises(ValueError, match="attention must be one of"):
        SequoiaSegmenter(SequoiaSegConfig(attention="linear"))
    with pytest.raises(ValueError, match="mode must be one of"):
        SequoiaSegmenter(SequoiaSegConfig(mode="topdown"))
    with pytest.raises(ValueError, match="layers must be a positive int, got 0"):
        SequoiaSegmenter(SequoiaSegConfig(layers=0))


def test_the_two_configs_share_the_backbone_fields_and_keep_their_names():
    # the model.* keys users set (CLI, presets, saved configs) are the same as before the shared
    # backbone config
    from dataclasses import fields

    from pointabstract.models.sequoia import SequoiaBackboneConfig, SequoiaClsConfig

    backbone = ["in_channels", "dim", "heads", "layers", "attention", "mode", "branching", "leaf_size",
                "siblings_k", "mlp_ratio", "rel_pos"]
    pool = [f.name for f in fields(SequoiaBackboneConfig) if f.name.startswith("context_pool")]
    assert [f.name for f in fields(SequoiaBackboneConfig)] == pool + backbone
    assert {f.name for f in fields(SequoiaSegConfig)} == {*pool, *backbone, "num_parts", "num_categories",
                                                          "head_dim"}
    assert {f.name for f in fields(SequoiaClsConfig)} == {*pool, *backbone, "num_classes", "head_dims",
                                                          "dropout"}
