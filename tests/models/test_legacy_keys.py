"""Checkpoints written with the Sequoia family's older parameter names load into today's models
with the same outputs (models/legacy_keys.py, removed in 0.2.0)."""

import re

import pytest
import torch
import torch.nn.functional as F
from packaging.version import Version

import pointabstract
from pointabstract.engine.restored import load_weights
from pointabstract.models import build_model, upgrade_state_dict
from pointabstract.models.legacy_keys import REMOVE_IN
from pointabstract.nn import SABlock
from tests.fixtures import cloud

_NEW_FFN = {"mlp.norm.": "mlp.0.", "mlp.net.0.": "mlp.1.", "mlp.net.2.": "mlp.3."}


def _old_names(state: dict, *, softmax: bool) -> dict:
    """Today's state dict written the old way: inline MLPs, DenseAttentionBlock's fused qkv,
    ContextPools in backbone.pools.i (the inverse of the upgrade, spelled out independently)."""
    old = {}
    for key, value in state.items():
        m = re.fullmatch(r"backbone\.blocks\.(\d+)\.(post\.|block\.)?(.+)", key)
        if m is None:
            old[key] = value
            continue
        i, part, rest = m.groups()
        if part == "post.":
            old[f"backbone.pools.{i}.{rest}"] = value
            continue
        for new, was in _NEW_FFN.items():
            rest = was + rest[len(new):] if rest.startswith(new) else rest
        if softmax and rest.startswith("attn.kv."):
            continue  # joined with attn.q below
        if softmax and rest.startswith("attn.q."):
            kv = state[key.replace("attn.q.", "attn.kv.")]
            rest, value = "qkv." + rest[len("attn.q."):], torch.cat([value, kv])
        elif softmax and rest.startswith("attn.out."):
            rest = rest[len("attn."):]
        old[f"backbone.blocks.{i}.{rest}"] = value
    return old


@pytest.mark.parametrize("name", ["sequoia_seg", "sequoia_cls", "softmax_seg", "softmax_cls"])
@pytest.mark.parametrize("pooled", [False, True])
def test_old_names_map_back_exactly(name, pooled):
    model = build_model(name, tiny=True, **({"context_pool": True, "context_pool_k": 4} if pooled else {}))
    state = model.state_dict()
    old = _old_names(state, softmax=name.startswith("softmax"))
    assert set(old) != set(state)  # the old layout really differs
    new = upgrade_state_dict(model, old)
    assert set(new) == set(state)
    for key, value in state.items():
        assert torch.equal(new[key], value), key
    assert upgrade_state_dict(model, state).keys() == state.keys()  # today's names pass unchanged


def test_the_old_dense_attention_block_and_the_dense_sablock_compute_the_same():
    # DenseAttentionBlock (before 0.2.0): x + out(SDPA(qkv(LN(x)))), then + mlp(.) with
    # mlp = LN -> Linear -> GELU -> Linear; its weights, renamed, in a dense SABlock
    torch.manual_seed(0)
    c, heads = 8, 2
    old = {"norm.weight": torch.rand(c) + 0.5, "norm.bias": torch.randn(c), "qkv.weight": torch.randn(3 * c, c),
           "qkv.bias": torch.randn(3 * c), "out.weight": torch.randn(c, c), "out.bias": torch.randn(c),
           "mlp.0.weight": torch.rand(c) + 0.5, "mlp.0.bias": torch.randn(c), "mlp.1.weight": torch.randn(16, c),
           "mlp.1.bias": torch.randn(16), "mlp.3.weight": torch.randn(c, 16), "mlp.3.bias": torch.randn(c)}
    x = cloud(2, 10, c, seed=3)
    h = F.layer_norm(x, (c,), old["norm.weight"], old["norm.bias"])
    q, k, v = F.linear(h, old["qkv.weight"], old["qkv.bias"]).view(2, 10, 3, heads, -1).permute(2, 0, 3, 1, 4)
    y = x + F.linear(F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(2, 10, c),
                     old["out.weight"], old["out.bias"])
    hidden = F.gelu(F.linear(F.layer_norm(y, (c,), old["mlp.0.weight"], old["mlp.0.bias"]),
                             old["mlp.1.weight"], old["mlp.1.bias"]))
    want = y + F.linear(hidden, old["mlp.3.weight"], old["mlp.3.bias"])
    model = build_model("softmax_cls", tiny=True)  # an upgrade is per model family
    prefixed = upgrade_state_dict(model, {f"backbone.blocks.0.{k}": v for k, v in old.items()})
    block = SABlock(c, c, heads=heads, k=None, knn_space="xyz", act="gelu")
    block.load_state_dict({k.removeprefix("backbone.blocks.0."): v for k, v in prefixed.items()})
    torch.testing.assert_close(block(x, cloud(2, 10, seed=4))[0], want)


def test_load_weights_reads_an_old_checkpoint_with_the_same_outputs():
    torch.manual_seed(0)
    model = build_model("softmax_seg", tiny=True, context_pool=True, context_pool_k=4).eval()
    fresh = build_model("softmax_seg", tiny=True, context_pool=True, context_pool_k=4).eval()
    load_weights(fresh, _old_names(model.state_dict(), softmax=True), "old checkpoint")
    pos, category = cloud(2, 24, seed=5), torch.tensor([0, 3])
    with torch.no_grad():
        torch.testing.assert_close(fresh(pos, category)["logits"], model(pos, category)["logits"])


def test_other_models_are_left_alone_and_the_mapping_has_a_removal_version():
    model = build_model("centroid_transformer", tiny=True)
    state = {"backbone.pools.0.x": torch.zeros(1), "blocks.0.mlp.0.weight": torch.zeros(1)}
    assert upgrade_state_dict(model, state) is state
    # fails once the package reaches the removal version: delete models/legacy_keys.py then
    assert Version(pointabstract.__version__) < Version(REMOVE_IN)


def test_resuming_a_run_with_old_names_is_refused_in_one_line(tmp_path):
    """Eval / view / predict read an old checkpoint; --resume cannot match its optimizer state to
    the renamed (and reordered) parameters, so it says so instead of failing inside a step."""
    from pointabstract.engine import load_config, train
    from pointabstract.engine.checkpoint import atomic_save, load_checkpoint
    from tests.fixtures import TASK_DATA, tiny_sizes, write_tiny_synthetic

    root = write_tiny_synthetic(tmp_path / "data")
    overrides = {"model": "softmax_seg", "data.root": str(root), "data.num_points": 48, "device": "cpu",
                 "optim.epochs": 1, "log.out_dir": str(tmp_path / "run"), "log.progress": False,
                 "log.tensorboard": False, **TASK_DATA["part_segmentation"], **tiny_sizes("softmax_seg")}
    train(load_config(None, overrides))
    ckpt = load_checkpoint(tmp_path / "run" / "last.pt")
    ckpt["model"] = _old_names(ckpt["model"], softmax=True)
    atomic_save(ckpt, tmp_path / "run" / "last.pt")
    with pytest.raises(ValueError, match=r"last\.pt was written with the parameter names of an older "
                                         r"pointabstract: .* start a new run \(--overwrite\)"):
        train(load_config(None, {**overrides, "optim.epochs": 2}), resume=True)
