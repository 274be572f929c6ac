"""``model.context_pool=true`` in every attention model: smoke step, checkpoint round trip, and
models without it unchanged."""

import pytest
import torch

from pointabstract.data import collate
from pointabstract.engine import build_task, load_checkpoint, load_config, restore, to_flat, train
from pointabstract.models import MODELS, build_model, model_task
from pointabstract.nn import ContextPool
from tests.fixtures import TASK_DATA, tiny_model, write_tiny_synthetic

HOSTS = ["centroid_transformer", "self_attention_transformer", "sequoia_seg", "sequoia_cls", "softmax_seg"]
CP = {"context_pool": True, "context_pool_k": 4}


@pytest.fixture(scope="module")
def synthetic_root(tmp_path_factory):
    return write_tiny_synthetic(tmp_path_factory.mktemp("synthetic"))


@pytest.mark.parametrize("name", HOSTS)
def test_registry_smoke_step_with_context_pool(name, synthetic_root):
    torch.manual_seed(0)
    overrides = {f"model.{k}": v for k, v in CP.items()}
    cfg = load_config(None, {"model": name, "data.root": str(synthetic_root), "data.num_points": 48,
                             "device": "cpu", **TASK_DATA[model_task(name)], **overrides})
    task = build_task(cfg)
    batch = collate([task.dataset("train", train=True)[i] for i in range(3)])
    model = build_model(name, tiny=True, **task.model_args(), **cfg.model_args)
    pools = [m for m in model.modules() if isinstance(m, ContextPool)]
    layers = model.cfg.layers if hasattr(model.cfg, "layers") else len(model.cfg.widths)
    assert len(pools) == layers  # one after every attention block
    loss, _ = task.step(model, batch, torch.device("cpu"))
    loss.backward()
    for pool in pools:
        assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in pool.parameters())
    assert any(p.grad.abs().sum() > 0 for pool in pools for p in pool.parameters())


def test_parameter_names_with_and_without_context_pool():
    plain = build_model("centroid_transformer", tiny=True).state_dict()
    pooled = build_model("centroid_transformer", tiny=True, **CP).state_dict()
    assert "blocks.0.attn.q.weight" in plain and not any(".post." in k or ".block." in k for k in plain)
    assert "blocks.0.block.attn.q.weight" in pooled and "blocks.3.post.map2.bias" in pooled
    seq = build_model("sequoia_seg", tiny=True).state_dict()
    seq_cp = build_model("sequoia_seg", tiny=True, **CP).state_dict()
    assert not any(".post." in k or ".block." in k for k in seq)  # the same plug point as above
    assert {k for k in seq_cp if ".post." in k} == {f"backbone.blocks.{i}.post.{n}" for i in range(2)
                                                   for n in ("map1.weight", "map1.bias", "map2.weight",
                                                             "map2.bias")}
    assert {k.replace(".block.", ".", 1) for k in seq_cp if ".post." not in k} == set(seq)


def test_off_by_default_and_variant_options_reach_the_module():
    for name in HOSTS:
        assert MODELS[name].config().context_pool is False
    model = build_model("sequoia_cls", tiny=True, context_pool=True, context_pool_weights="nonlocal",
                        context_pool_locality="fixed", context_pool_window=3, context_pool_k=6)
    pool = model.backbone.blocks[1].post
    assert (pool.weights, pool.locality, pool.window, pool.k) == ("nonlocal", "fixed", 3, 6)
    paper = build_model("centroid_transformer", tiny=True, context_pool=True, context_pool_sizes="softmax",
                        context_pool_mapping="point").blocks[0].post
    assert (paper.sizes, paper.mapping) == ("softmax", "point")
    with pytest.raises(ValueError, match=r"context_pool options .*locality must be one of .*got .box."):
        build_model("softmax_seg", tiny=True, context_pool=True, context_pool_locality="box")
    with pytest.raises(TypeError, match=r"context_pool must be True or False, got str 'yes'"):
        build_model("sequoia_seg", tiny=True, context_pool="yes")


def test_fewer_attention_blocks():
    model = build_model("centroid_transformer", tiny=True, widths=(8, 16), ratios=(0.5,), **CP)
    out = model(torch.rand(2, 32, 3), return_features=True)
    assert out["logits"].shape[0] == 2 and [b["features"].shape[1] for b in out["blocks"]] == [32, 16]
    with pytest.raises(ValueError, match=r"widths must list 2 block widths and ratios 1 ratios, got \(8, 16, 16\)"):
        build_model("centroid_transformer", tiny=True, widths=(8, 16, 16), ratios=(0.5,))


def test_flat_config_remembers_context_pool():
    cfg = load_config(None, {"model": "softmax_seg", "model.context_pool": True, "model.context_pool_r": 0.3,
                             "model.context_pool_normalize": False})
    flat = to_flat(cfg)
    assert flat["model.context_pool"] is True and flat["model.context_pool_r"] == 0.3
    again = load_config(None, flat)
    model = build_model("softmax_seg", tiny=True, **again.model_args)
    pools = [m for m in model.modules() if isinstance(m, ContextPool)]
    assert pools and all(p.r == 0.3 and p.normalize is False for p in pools)
    old = {k: v for k, v in flat.items() if not k.startswith("model.context_pool")}  # older checkpoint
    assert load_config(None, old).model_config().context_pool is False


@pytest.mark.slow  # trains a tiny run (about 15 s on 2 cores)
def test_checkpoint_remembers_context_pool(tiny_data, tmp_path):
    run = tmp_path / "run"
    cfg = load_config(None, [f"data.root={tiny_data}", "data.num_points=48", "data.batch_size=8",
                             "data.workers=0", "optim.epochs=1", f"log.out_dir={run}", "log.progress=false",
                             "log.tensorboard=false", "device=cpu", *tiny_model("centroid_transformer"), "model.context_pool=true",
                             "model.context_pool_k=5", "model.context_pool_weights=uniform"])
    train(cfg)
    ckpt = load_checkpoint(run / "last.pt")
    assert ckpt["config"]["model.context_pool"] is True and ckpt["config"]["model.context_pool_k"] == 5
    restored = restore(run / "last.pt", split="test")
    pools = [m for m in restored.model.modules() if isinstance(m, ContextPool)]
    assert len(pools) == 4 and all(p.k == 5 and p.weights == "uniform" for p in pools)
    state = restored.model.state_dict()
    assert set(state) == set(ckpt["model"]) and any(".post." in k for k in state)
    assert all(torch.equal(state[k], v) for k, v in ckpt["model"].items())


@pytest.fixture
def tiny_data(tmp_path):
    from tests.fixtures import write_tiny_modelnet

    write_tiny_modelnet(tmp_path / "data")
    return tmp_path / "data"
