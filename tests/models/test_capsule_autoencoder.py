import pytest
import torch

from pointabstract.models.capsule_autoencoder import (
    SPECS,
    CapsuleAutoencoder,
    CapsuleAutoencoderConfig,
    DecoderNoiseSeed,
    PatchDecoder,
    fixed_grid,
)
from pointabstract.nn.routing import CentroidRouting, DynamicRouting, EMRouting
from pointabstract.ops import chamfer_distance


def _tiny(name, **over):
    spec = SPECS[name]
    return CapsuleAutoencoder(spec.config(**{**spec.defaults, **spec.tiny, **over}))


def test_registry_names_and_sizes():
    for size in ("small", "base", "demo"):
        for short, routing in [("dr", "dynamic"), ("em", "em"), ("ca", "centroid")]:
            spec = SPECS[f"capsule_ae_{size}_{short}"]
            assert spec.task == "reconstruction" and spec.defaults["routing"] == routing
    small, base = SPECS["capsule_ae_small_dr"].defaults, SPECS["capsule_ae_base_ca"].defaults
    assert [small[k] for k in ("primary_caps", "primary_dim", "latent_caps", "latent_dim")] == [512, 16, 12, 128]
    assert [base[k] for k in ("primary_caps", "primary_dim", "latent_caps", "latent_dim")] == [1024, 16, 64, 64]


@pytest.mark.parametrize("name", sorted(SPECS))
def test_tiny_forward_backward(name):
    torch.manual_seed(0)
    model = _tiny(name)
    out = model(torch.rand(2, 50, 3) * 2 - 1, return_features=True)
    cfg = model.cfg
    n_out = cfg.latent_caps * (cfg.num_points // cfg.latent_caps)
    assert out["points"].shape == (2, n_out, 3) and out["capsules"].shape == (2, cfg.latent_caps, cfg.latent_dim)
    assert out["assignments"].shape == (2, cfg.primary_caps, cfg.latent_caps)
    assert out["primary"].shape == (2, cfg.primary_caps, cfg.primary_dim)
    assert out["capsule_index"].shape == (n_out,) and out["capsule_index"].dtype == torch.int64
    chamfer_distance(out["points"], torch.rand(2, 50, 3)).backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters()
               if p.requires_grad and not (cfg.routing == "em" and p.grad is None))


@pytest.mark.parametrize("routing, cls", [("dynamic", DynamicRouting), ("em", EMRouting),
                                          ("centroid", CentroidRouting)])
def test_routing_switch(routing, cls):
    assert isinstance(_tiny("capsule_ae_small_dr", routing=routing).routing, cls)


def test_decoder_is_deterministic_in_eval_and_random_in_training():
    torch.manual_seed(0)
    model = _tiny("capsule_ae_demo_ca")
    pos = torch.rand(2, 40, 3)
    model(pos)  # one training step's statistics
    a, b = model(pos)["points"], model(pos)["points"]
    assert not torch.allclose(a, b)
    model.eval()
    torch.testing.assert_close(model(pos)["points"], model(pos)["points"], rtol=0, atol=0)


def test_a_samples_training_grid_follows_its_noise_seed_not_its_place_in_the_batch():
    # DDP splits a batch over processes: a sample's grid must not depend on its neighbours
    decoder = PatchDecoder(8, 6, decoders=2).train()
    like = torch.zeros(())
    whole = decoder.samples(3, 4, like, noise_seed=torch.tensor([11, 22, 33]))  # (B, L, S, 2)
    alone = decoder.samples(1, 4, like, noise_seed=torch.tensor([22]))
    torch.testing.assert_close(whole[1], alone[0], rtol=0, atol=0)
    assert whole.shape == (3, 4, 6, 2) and not torch.equal(whole[0], whole[1])
    torch.manual_seed(0)
    before = torch.rand(1)
    torch.manual_seed(0)
    decoder.samples(3, 4, like, noise_seed=torch.tensor([11, 22, 33]))
    assert torch.equal(torch.rand(1), before)  # the global RNG is left alone
    again = decoder.samples(3, 4, like, noise_seed=torch.tensor([11, 22, 33]))
    torch.testing.assert_close(whole, again, rtol=0, atol=0)
    decoder.eval()  # evaluation keeps the fixed grid whatever the seeds
    torch.testing.assert_close(decoder.samples(1, 4, like, noise_seed=torch.tensor([5]))[0, 0],
                               fixed_grid(6), rtol=0, atol=0)


def test_forward_takes_noise_seeds_and_checks_them():
    model = _tiny("capsule_ae_demo_dr")
    pos = torch.rand(2, 40, 3)
    a = model(pos, noise_seed=torch.tensor([1, 2]))["points"]
    b = model(pos, noise_seed=torch.tensor([1, 2]))["points"]
    torch.testing.assert_close(a, b, rtol=0, atol=0)
    assert not torch.equal(a, model(pos, noise_seed=torch.tensor([1, 3]))["points"])
    with pytest.raises(ValueError, match=r"noise_seed must have shape \(B,\) = \(2,\), got \(3,\)"):
        model(pos, noise_seed=torch.tensor([1, 2, 3]))
    with pytest.raises(TypeError, match=r"noise_seed must have dtype int64, got torch.float32"):
        model(pos, noise_seed=torch.tensor([1.0, 2.0]))


def test_noise_seed_transform_draws_from_the_samples_generator():
    import numpy as np

    t = DecoderNoiseSeed()
    sample = {"pos": np.zeros((4, 3), np.float32), "label": 2}
    a = t(sample, np.random.default_rng(7))
    assert a["noise_seed"] == t(sample, np.random.default_rng(7))["noise_seed"]
    assert a["noise_seed"] != t(sample, np.random.default_rng(8))["noise_seed"]
    assert 0 <= a["noise_seed"] < 2**63 and "noise_seed" not in sample and repr(t) == "DecoderNoiseSeed()"
    assert a["label"] == 2 and np.array_equal(a["pos"], sample["pos"]) and a["pos"] is not sample["pos"]
    with pytest.raises(TypeError, match="rng must be a numpy Generator, got NoneType"):
        t(sample, None)


@pytest.mark.parametrize("decoders", [0, 1, 4])
def test_capsule_index_follows_the_patch_layout(decoders):
    torch.manual_seed(0)
    dec = PatchDecoder(6, 8, decoders=decoders).double().eval()
    v = torch.randn(2, 3, 6, dtype=torch.float64)
    index = torch.arange(3).repeat_interleave(8)
    base = dec(v)
    for cap in range(3):
        moved = v.clone()
        moved[:, cap] += 1.0
        changed = (dec(moved) - base).abs().sum(-1).amax(0) > 0  # (N_out,)
        assert not changed[index != cap].any() and changed[index == cap].sum() >= 4
    model = _tiny("capsule_ae_demo_dr")
    assert torch.equal(model.capsule_index, torch.arange(4).repeat_interleave(16))


def test_fixed_grid_is_spread_over_the_unit_square():
    g = fixed_grid(170, dtype=torch.float64)
    assert g.shape == (170, 2) and (g >= 0).all() and (g < 1).all()
    assert torch.cdist(g, g).add(torch.eye(170) * 9).amin() > 0.03  # no two samples close together
    assert torch.equal(fixed_grid(5), fixed_grid(5))


def test_short_training_lowers_chamfer():
    torch.manual_seed(0)
    model = _tiny("capsule_ae_demo_ca")
    t = torch.linspace(0, 1, 64)
    shapes = torch.stack([torch.stack([t * 2 - 1, t * 0, t * 0], -1),  # a segment
                          torch.stack([torch.cos(6.28 * t), torch.sin(6.28 * t), t * 0], -1)])  # a circle

    def loss():
        return chamfer_distance(model(shapes)["points"], shapes)

    model.eval()
    with torch.no_grad():
        before = loss().item()
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(60):
        opt.zero_grad()
        loss().backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        after = loss().item()
    assert after < 0.5 * before, (before, after)


def test_bad_input_names_pos():
    model = _tiny("capsule_ae_demo_dr")
    with pytest.raises(ValueError, match=r"pos must have shape \(B, N, 3\), got \(2, 40, 2\)"):
        model(torch.rand(2, 40, 2))
    with pytest.raises(ValueError, match=r"pos holds NaN or Inf values"):
        model(torch.full((2, 40, 3), float("nan")))
    with pytest.raises(ValueError, match=r"pos must hold at least one cloud of at least 8 points, got \(2, 3, 3\)"):
        model(torch.rand(2, 3, 3))
    with pytest.raises(TypeError, match="pos must be a floating-point tensor"):
        model(torch.ones(2, 40, 3, dtype=torch.int64))


def test_bad_config():
    with pytest.raises(ValueError, match=r"routing must be one of \['dynamic', 'em', 'centroid'\], got 'x'"):
        CapsuleAutoencoder(CapsuleAutoencoderConfig(routing="x"))
    with pytest.raises(ValueError, match=r"decoders must be 0 or divide the points per capsule \(8\), got 3"):
        PatchDecoder(6, 8, decoders=3)
    with pytest.raises(ValueError, match=r"num_points \(4\) must be at least latent_caps \(64\)"):
        CapsuleAutoencoder(CapsuleAutoencoderConfig(num_points=4))
    # the config's names, not those of the layers they size (PrimaryPointCapsules' num_caps)
    with pytest.raises(ValueError, match=r"primary_caps must be a positive int, got 0"):
        CapsuleAutoencoder(CapsuleAutoencoderConfig(primary_caps=0))
    with pytest.raises(ValueError, match=r"decoders must be an int >= 0, got -1"):
        CapsuleAutoencoder(CapsuleAutoencoderConfig(decoders=-1))


@pytest.mark.parametrize("short, routing", [("dr", "dynamic"), ("ca", "centroid")])
def test_demo_presets(short, routing):
    from pointabstract.engine import load_config

    cfg = load_config(f"capsules_demo_{short}", [])
    assert cfg.model == f"capsule_ae_demo_{short}" and cfg.task_config().bn_batches > 0
    assert cfg.model_config().routing == routing and cfg.data.dataset == "shapenet_part"
    assert cfg.data.root == "datasets/synthetic" and cfg.log.out_dir == f"runs/demo/capsules_{short}"


# Invariants at initialisation (docs/fidelity.md), on the paper-sized 12-capsule models (512 x 16
# primary -> 12 x 128 latent capsules) and two different random shapes of 1,024 points.
def _two_shapes(n=1024, seed=0):
    g = torch.Generator().manual_seed(seed)
    sphere = torch.randn(n, 3, generator=g)
    sphere = sphere / sphere.norm(dim=-1, keepdim=True)
    slab = torch.rand(n, 3, generator=g) * 2 - 1
    slab[:, 1] *= 0.2
    return torch.stack([sphere, slab])  # (2, N, 3)


def _mean_pairwise_cosine(v):
    """(B, L, D) -> (B,) mean cosine over the L (L - 1) ordered pairs of distinct capsules."""
    v = torch.nn.functional.normalize(v, dim=-1)
    count = v.shape[1]
    return ((v @ v.transpose(1, 2)).sum((1, 2)) - count) / (count * (count - 1))


def _relative_change(x):
    """(2, ...) -> |x0 - x1| / mean(|x0|, |x1|): how much a code changes between the two shapes."""
    return float((x[0] - x[1]).norm() / x.flatten(1).norm(dim=1).mean())


# centroid routing, after its (now distinct, see test_routing.py) linear init, still ends with
# 12 nearly equal capsules: eq. 4 sums the values of all P = 512 primary capsules with weights
# ~1/L each, and those values share one direction, so every latent capsule receives the same
# update, ~100x the size of its initial value (docs/fidelity.md, "what the paper allows")
_EQ4 = pytest.mark.xfail(strict=True, reason="eq. 4's sum over the 512 primary capsules adds one shared "
                                             "update to every latent capsule (docs/fidelity.md)")
_OLD = pytest.mark.xfail(strict=True, reason="soft_average init: every latent capsule starts as the same mean")


def _initialised(routing):
    torch.manual_seed(0)
    short = {"dynamic": "dr", "em": "em"}.get(routing, "ca")
    model = CapsuleAutoencoder(SPECS[f"capsule_ae_small_{short}"].config(**SPECS[f"capsule_ae_small_{short}"].defaults))
    if routing == "centroid_soft_average":
        old = model.routing
        model.routing = CentroidRouting(old.in_caps, old.in_dim, old.out_caps, old.out_dim,
                                        heads=old.attention.heads, init="soft_average")
    return model.eval()


_ROUTINGS = ["dynamic", "em", pytest.param("centroid", marks=_EQ4),
             pytest.param("centroid_soft_average", marks=_OLD)]


@pytest.mark.parametrize("routing", _ROUTINGS)
def test_latent_capsules_of_one_cloud_are_not_all_the_same(routing):
    with torch.no_grad():
        v, _, _ = _initialised(routing).encode(_two_shapes())
    assert (_mean_pairwise_cosine(v) < 0.5).all()  # dynamic / EM: about 0.01


@pytest.mark.parametrize("routing", _ROUTINGS)
def test_latent_code_changes_with_the_input_shape(routing):
    with torch.no_grad():
        v, _, primary = _initialised(routing).encode(_two_shapes())
    # the primary capsules of a sphere and a slab differ by ~18 % of their norm; the latent code
    # must move by a comparable fraction (dynamic 19 %, EM 24 %), not be a near-constant vector
    assert _relative_change(v) > 0.25 * _relative_change(primary)


@pytest.mark.parametrize("init", ["linear", pytest.param("soft_average", marks=_OLD)])
def test_centroid_routing_initial_latent_capsules_are_distinct(init):
    model = _initialised("centroid" if init == "linear" else "centroid_soft_average")
    att = model.routing.attention
    with torch.no_grad():
        x = att.proj_in(model.primary(_two_shapes()))  # (2, P, D')
        u0 = torch.einsum("lp,bpc->blc", att.initial_weights(), x)  # (2, L, D')
    assert (_mean_pairwise_cosine(u0) < 0.5).all()  # linear: about -0.07; soft average: 1.0000
