"""The ragged-batch contract of every registered model (docs/models.md#ragged-batches).

A cloud alone and the same cloud inside a padded batch (``lengths``) with a larger and a smaller
cloud give the same outputs (eval mode), and in train mode the BatchNorm running statistics
after one forward equal those of the same clouds without padding.
"""

import copy

import pytest
import torch

from pointabstract.models import MODELS, build_model

# float32: the same arithmetic on differently shaped tensors (BLAS blocking) differs in the
# last bits; 1e-4 absolute is about 1000 ulps of the outputs (|logits| < 10), far below the
# differences padding used to make (0.08)
ATOL = 1e-4
SIZES = (40, 64, 24)  # the cloud under test, a larger and a smaller one
# random centroid draws depend on the batch shape (torch.rand(B, N)): no two calls agree, alone or not
RANDOM = {"ct_random"}


def _clouds(seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [torch.rand(n, 3, generator=gen) * 2 - 1 for n in SIZES]


def _pad(clouds):
    n = max(len(c) for c in clouds)
    pos = torch.zeros(len(clouds), n, 3)
    for b, c in enumerate(clouds):
        pos[b, :len(c)] = c
        pos[b, len(c):] = 7.0  # far away: padding that took part would move every result
    return pos, torch.tensor([len(c) for c in clouds])


def _run(name, model, pos, lengths, first=0):
    """The model's outputs that must not depend on padding: per cloud (B, ...) tensors
    (cloud b of the batch is cloud ``first + b`` of the test: its part category)."""
    task = MODELS[name].task
    if task == "part_segmentation":
        category = (torch.arange(pos.shape[0]) + first) % 3
        return {"logits": model(pos, category, lengths=lengths)["logits"]}
    out = model(pos, lengths=lengths)
    if task == "classification":
        return {"logits": out["logits"]}
    return {k: out[k] for k in ("points", "capsules", "code") if k in out}


def _build(name):
    torch.manual_seed(0)
    args = {"num_classes": 5} if MODELS[name].task == "classification" else {}
    return build_model(name, tiny=True, **args)


@pytest.mark.parametrize("name", sorted(set(MODELS) - RANDOM))
def test_a_cloud_alone_equals_the_same_cloud_in_a_padded_batch(name):
    model = _build(name).eval()
    clouds = _clouds()
    pos, lengths = _pad(clouds)
    with torch.no_grad():
        batched = _run(name, model, pos, lengths)
        for b, cloud in enumerate(clouds):
            alone = _run(name, model, cloud[None], None, first=b)
            for key, value in alone.items():
                got = batched[key][b:b + 1]
                if key == "logits" and value.dim() == 3:  # per point: the cloud's own points
                    got = got[:, :len(cloud)]
                assert got.shape == value.shape, (key, b)
                diff = (got - value).abs().max().item()
                assert diff <= ATOL, f"{name} {key} cloud {b} ({len(cloud)} points): {diff:.3g}"


def _bn_buffers(model):
    return {k: v.clone() for k, v in model.state_dict().items()
            if k.endswith(("running_mean", "running_var"))}


@pytest.mark.parametrize("name", sorted(set(MODELS) - RANDOM))
def test_batchnorm_statistics_ignore_padding(name):
    model = _build(name).train()
    padded_model = copy.deepcopy(model)
    gen = torch.Generator().manual_seed(1)
    clouds = torch.rand(2, 40, 3, generator=gen) * 2 - 1
    pos = torch.cat([clouds, torch.full((2, 24, 3), 7.0)], 1)  # both padded to 64
    torch.manual_seed(2)
    _run(name, model, clouds, None)
    torch.manual_seed(2)
    _run(name, padded_model, pos, torch.tensor([40, 40]))
    want, got = _bn_buffers(model), _bn_buffers(padded_model)
    for key in want:
        assert torch.allclose(got[key], want[key], atol=1e-5), f"{name} {key}"


@pytest.mark.parametrize("name", sorted(RANDOM))
def test_random_centroids_are_never_padding(name):
    model = _build(name).eval()
    pos, lengths = _pad(_clouds())
    blocks = model(pos, lengths=lengths, return_features=True)["blocks"]
    for block in blocks:
        if block.get("init_idx") is not None:
            assert bool((block["init_idx"] < lengths[:, None]).all())


@pytest.mark.parametrize("name", sorted(MODELS))
def test_training_on_a_padded_batch_gives_finite_gradients_and_none_to_padding(name):
    model = _build(name).train()
    pos, lengths = _pad(_clouds())
    pos.requires_grad_(True)
    torch.manual_seed(3)
    out = _run(name, model, pos, lengths)
    real = torch.arange(pos.shape[1]) < lengths[:, None]
    if MODELS[name].task == "part_segmentation":  # per-point logits: the real points' only
        loss = out["logits"][real].pow(2).mean()
    else:
        loss = sum(v.pow(2).mean() for v in out.values())
    loss.backward()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)
    assert torch.isfinite(pos.grad).all() and bool((pos.grad[~real] == 0).all())


def test_what_cannot_take_padding_refuses_it_naming_lengths():
    pos, lengths = _pad(_clouds())
    with pytest.raises(ValueError, match=r"lengths must be at least 8 \(points per cloud\), got \[40, 5\]"):
        build_model("capsule_ae_demo_dr", tiny=True)(pos[:2], lengths=torch.tensor([40, 5]))
    pooled = build_model("centroid_transformer", tiny=True, num_classes=5, context_pool=True)
    with pytest.raises(ValueError, match=r"a post-module \(ContextPool\) does not take padded clouds"):
        pooled(pos, lengths=lengths)
    from pointabstract.nn import CentroidAttention

    linear = CentroidAttention(8, 8, heads=2, num_centroids=4, init="linear", num_inputs=64)
    with pytest.raises(ValueError, match=r"init='linear' was built for a fixed N: it takes no padded clouds "
                                         r"\(lengths\)"):
        linear(torch.rand(3, 64, 8), pos, lengths=lengths)
    with pytest.raises(ValueError, match=r"lengths must lie in \[1, 64\]"):
        build_model("sequoia_cls", tiny=True)(pos, lengths=torch.tensor([40, 65, 3]))
