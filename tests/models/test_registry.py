"""Every registered model, built from the registry at tiny size (STYLE rule 11)."""

import pytest
import torch

from pointabstract.models import MODELS, build_model, model_config

TINY = {"widths": (8, 16, 16, 24), "heads": 2, "k": 6, "fuse_dim": 16, "head_dims": (16,),
        "num_classes": 5}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_forward_backward_tiny(name):
    torch.manual_seed(0)
    model = build_model(name, **TINY)
    pos = torch.rand(2, 64, 3)
    out = model(pos, return_features=True)
    assert out["logits"].shape == (2, 5) and torch.isfinite(out["logits"]).all()
    assert len(out["blocks"]) == 4
    for block in out["blocks"]:
        m = block["features"].shape[1]
        assert block["pos"].shape == (2, m, 3) and torch.isfinite(block["features"]).all()
    out["logits"].sum().backward()
    grads = [p.grad for p in model.parameters() if p.requires_grad]
    assert all(g is not None and torch.isfinite(g).all() for g in grads)


def test_downsampling_follows_the_ratios():
    out = build_model("centroid_transformer", **TINY)(torch.rand(1, 64, 3), return_features=True)
    assert [b["features"].shape[1] for b in out["blocks"]] == [64, 32, 32, 8]
    assert [b["features"].shape[2] for b in out["blocks"]] == [8, 16, 16, 24]
    sa = build_model("self_attention_transformer", **TINY)(torch.rand(1, 64, 3), return_features=True)
    assert [b["features"].shape[1] for b in sa["blocks"]] == [64, 64, 64, 64]


def test_registry_errors():
    with pytest.raises(ValueError, match=r"unknown model 'pointnet'; choose from \['centroid_transformer'"):
        build_model("pointnet")
    with pytest.raises(ValueError, match=r"unknown config key\(s\) \['depth'\]"):
        build_model("centroid_transformer", depth=3)
    assert model_config("ct_kmeans").init == "kmeans" and model_config("ct_kmeans").iters == 0


def test_normals_as_extra_features():
    model = build_model("centroid_transformer", **{**TINY, "in_channels": 3})
    pos = torch.rand(2, 64, 3)
    assert model(pos, features=torch.rand(2, 64, 3))["logits"].shape == (2, 5)
    with pytest.raises(ValueError, match=r"features must have shape \(B, N, 3\)"):
        model(pos)


@pytest.mark.parametrize("name", ["centroid_transformer", "ct_kmeans", "self_attention_transformer"])
def test_logits_are_invariant_to_point_order(name):
    torch.manual_seed(0)
    model = build_model(name, **TINY).double().eval()
    pos = torch.rand(2, 64, 3, dtype=torch.float64)
    perm = torch.randperm(64)
    torch.testing.assert_close(model(pos)["logits"], model(pos[:, perm])["logits"])


def test_tiny_batch_overfits():
    torch.manual_seed(0)
    model = build_model("centroid_transformer", **{**TINY, "dropout": 0.0})
    pos = torch.rand(4, 48, 3)
    labels = torch.tensor([0, 1, 2, 3])
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(150):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(pos)["logits"], labels)
        loss.backward()
        opt.step()
    assert loss.item() < 0.05
