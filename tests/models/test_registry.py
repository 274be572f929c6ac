"""Every registered model, built at its tiny size, through one training step of its own task."""

import dataclasses

import pytest
import torch

from pointabstract.data import collate
from pointabstract.engine import build_task, load_config, task_class
from pointabstract.models import MODELS, build_model, model_config, model_task
from tests.fixtures import TASK_DATA, write_tiny_synthetic


@pytest.fixture(scope="module")
def synthetic_root(tmp_path_factory):
    return write_tiny_synthetic(tmp_path_factory.mktemp("synthetic"))


def test_every_spec_declares_a_known_task_and_a_tiny_size():
    for name, spec in MODELS.items():
        task_class(spec.task)  # raises for an unknown task
        fields = {f.name for f in dataclasses.fields(spec.config)}
        assert set(spec.tiny) <= fields and set(spec.defaults) <= fields, name
        assert spec.tiny, f"{name} has no tiny size"


@pytest.mark.parametrize("name", sorted(MODELS))
def test_one_step_through_its_own_task(name, synthetic_root):
    torch.manual_seed(0)
    cfg = load_config(None, {"model": name, "data.root": str(synthetic_root), "data.num_points": 48,
                             "device": "cpu", **TASK_DATA[model_task(name)]})
    task = build_task(cfg)
    dataset = task.dataset("train", train=True)
    batch = collate([dataset[i] for i in range(3)])
    model = build_model(name, tiny=True, **task.model_args())
    loss, stats = task.step(model, batch, torch.device("cpu"))
    assert loss.ndim == 0 and torch.isfinite(loss)
    assert all(isinstance(v, float) for v in stats.values())
    loss.backward()
    grads = [p.grad for p in model.parameters() if p.requires_grad]
    assert any(g is not None for g in grads)
    assert all(g is None or torch.isfinite(g).all() for g in grads)


def test_a_run_asking_another_task_is_refused():
    name = next(n for n, s in MODELS.items() if s.task == "classification")
    with pytest.raises(ValueError, match=f"model '{name}' serves the 'classification' task, the config "
                                         "asks for task 'reconstruction'"):
        load_config(None, {"model": name, "task": "reconstruction"})


@pytest.mark.parametrize("name", [n for n, s in MODELS.items() if s.task == "classification"
                                  and s.factory.__name__ == "CentroidTransformer"])
def test_centroid_transformer_blocks(name):
    model = build_model(name, tiny=True, num_classes=5)
    pos = torch.rand(2, 64, 3)
    out = model(pos, return_features=True)
    assert out["logits"].shape == (2, 5) and len(out["blocks"]) == 4
    for block in out["blocks"]:
        m = block["features"].shape[1]
        assert block["pos"].shape == (2, m, 3) and torch.isfinite(block["features"]).all()


def test_downsampling_follows_the_ratios():
    out = build_model("centroid_transformer", tiny=True, num_classes=5)(torch.rand(1, 64, 3), return_features=True)
    assert [b["features"].shape[1] for b in out["blocks"]] == [64, 32, 32, 8]
    assert [b["features"].shape[2] for b in out["blocks"]] == list(MODELS["centroid_transformer"].tiny["widths"])
    sa = build_model("self_attention_transformer", tiny=True, num_classes=5)(torch.rand(1, 64, 3), return_features=True)
    assert [b["features"].shape[1] for b in sa["blocks"]] == [64, 64, 64, 64]


def test_registry_errors():
    with pytest.raises(ValueError, match=r"unknown model 'pointnet'; choose from \['"):
        build_model("pointnet")
    with pytest.raises(ValueError, match=r"unknown config key\(s\) \['depth'\]"):
        build_model("centroid_transformer", depth=3)
    assert model_config("ct_kmeans").init == "kmeans" and model_config("ct_kmeans").iters == 0


def test_normals_as_extra_features():
    model = build_model("centroid_transformer", tiny=True, num_classes=5, in_channels=3)
    pos = torch.rand(2, 64, 3)
    assert model(pos, features=torch.rand(2, 64, 3))["logits"].shape == (2, 5)
    with pytest.raises(TypeError, match=r"features must be a torch.Tensor, got NoneType"):
        model(pos)
    with pytest.raises(ValueError, match=r"features must have shape \(B, N, C\) = \(2, 64, 3\) matching pos "
                                         r"\(2, 64, 3\), got \(2, 63, 3\)"):
        model(pos, features=torch.rand(2, 63, 3))


@pytest.mark.parametrize("name", ["centroid_transformer", "ct_kmeans", "self_attention_transformer"])
def test_logits_are_invariant_to_point_order(name):
    torch.manual_seed(0)
    model = build_model(name, tiny=True, num_classes=5).double().eval()
    pos = torch.rand(2, 64, 3, dtype=torch.float64)
    perm = torch.randperm(64)
    torch.testing.assert_close(model(pos)["logits"], model(pos[:, perm])["logits"])


def test_tiny_batch_overfits():
    torch.manual_seed(0)
    model = build_model("centroid_transformer", tiny=True, num_classes=5, dropout=0.0)
    pos = torch.rand(4, 48, 3)
    labels = torch.tensor([0, 1, 2, 3])
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(150):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(pos)["logits"], labels)
        loss.backward()
        opt.step()
    assert loss.item() < 0.05


@pytest.mark.parametrize("name", sorted(MODELS))
def test_huge_finite_coordinates_are_handled_or_refused_naming_pos(name):
    """Below the float32 square limit (5.3e18) every model gives finite outputs; beyond it, where
    distances, attention and LayerNorm would overflow into NaN, the model refuses ``pos`` in one
    line instead of returning NaN logits or blaming an inner tensor for NaN or Inf."""
    torch.manual_seed(0)
    model = build_model(name, tiny=True).eval()
    task = MODELS[name].task

    def run(scale):
        pos = (torch.rand(2, 64, 3) * 2 - 1) * scale
        with torch.no_grad():
            out = model(pos, torch.zeros(2, dtype=torch.int64)) if task == "part_segmentation" else model(pos)
        return out["logits" if "logits" in out else "points"]

    assert torch.isfinite(run(5e18)).all()
    with pytest.raises(ValueError, match=r"^pos holds coordinates up to .*e\+19 in absolute value: their squared "
                                         r"distances overflow float32"):
        run(9e19)
