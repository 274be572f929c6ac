"""Routing invariants of the fidelity audit (docs/fidelity_capsules.md).

1. Dynamic routing equals a plain-loop transcription of the routing in the official
   3D-PointCapsNet code (``models/pointcapsnet_ae.py::LatentCapsLayer`` of
   github.com/yongheng1991/3D-point-capsule-networks), written here from a reading of it:
   ``u_hat = W u``, logits ``b`` start at 0, ``c = softmax over the latent capsules``,
   ``v = squash(sum_p c u_hat)``, ``b += u_hat . v``, three iterations, with ``u_hat`` detached
   in every iteration but the last (so no gradient reaches the coupling coefficients).
2. Every routing, given the same primary capsules, returns latent capsules (B, L, D') and
   assignments (B, P, L) whose rows are distributions over the latent capsules; the three
   registry autoencoders hand the decoder the same shape, and the 12-capsule models decode
   12 x 170 = 2,040 points (the paper's Fig. 5 caption).

None of these depends on how the centroid routing initialises its latent capsules.
"""

import pytest
import torch

from pointabstract.models import build_model, model_config
from pointabstract.nn.routing import ROUTINGS, DynamicRouting, build_routing

B, P, D, L, DO = 2, 6, 4, 3, 5


def _official_squash(s):
    """The original's squash: ``|s|^2 s / ((1 + |s|^2) |s|)`` (no epsilon)."""
    n2 = (s * s).sum(-1, keepdim=True)
    return n2 * s / ((1 + n2) * torch.sqrt(n2))


def pointcapsnet_routing_loop(weight, u, iters=3, *, detach=True):
    """Loop transcription of 3D-PointCapsNet's routing.

    weight: (L, P, D', D); u: (B, P, D). Returns v (B, L, D') and the last coupling
    coefficients c (B, P, L). ``detach=False`` is the variant without the original's detach
    (gradients through every iteration), used to show the gradient test can fail.
    """
    n_lat, n_prim = weight.shape[0], weight.shape[1]
    vs, cs = [], []
    for ub in u:
        u_hat = [[weight[j, i] @ ub[i] for i in range(n_prim)] for j in range(n_lat)]
        frozen = [[x.detach() if detach else x for x in row] for row in u_hat]
        b = [[torch.zeros((), dtype=u.dtype) for _ in range(n_prim)] for _ in range(n_lat)]
        for it in range(iters):
            last = it == iters - 1
            c = [[None] * n_prim for _ in range(n_lat)]
            for i in range(n_prim):  # softmax over the latent capsules, per primary capsule
                total = sum(torch.exp(b[k][i]) for k in range(n_lat))
                for j in range(n_lat):
                    c[j][i] = torch.exp(b[j][i]) / total
            src = u_hat if last else frozen
            v = [_official_squash(sum(c[j][i] * src[j][i] for i in range(n_prim))) for j in range(n_lat)]
            if not last:
                for j in range(n_lat):
                    for i in range(n_prim):
                        b[j][i] = b[j][i] + torch.dot(v[j], frozen[j][i])
        vs.append(torch.stack(v))
        cs.append(torch.stack([torch.stack([c[j][i] for j in range(n_lat)]) for i in range(n_prim)]))
    return torch.stack(vs), torch.stack(cs)


def _dynamic(iters=3):
    torch.manual_seed(0)
    module = DynamicRouting(P, D, L, DO, iters=iters).double()
    with torch.no_grad():  # votes of length ~1: squash's epsilon (1e-8 under the root) moves
        module.weight.normal_()  # values and gradients by ~1e-7 relative, far below the 1e-5 used
    return module


def _primary(seed=1):
    g = torch.Generator().manual_seed(seed)
    s = torch.randn(B, P, D, generator=g, dtype=torch.float64) * 2
    n2 = (s * s).sum(-1, keepdim=True)
    return s * n2 / ((1 + n2) * n2.sqrt())  # squashed, as the primary layer returns them


@pytest.mark.parametrize("iters", [1, 3])
def test_dynamic_routing_matches_pointcapsnet_loop_values_and_gradients(iters):
    module, u = _dynamic(iters), _primary().requires_grad_()
    v, c = module(u)
    want_v, want_c = pointcapsnet_routing_loop(module.weight, u, iters)
    torch.testing.assert_close(v, want_v, rtol=1e-5, atol=1e-8)
    torch.testing.assert_close(c, want_c, rtol=1e-5, atol=1e-8)
    probe = torch.randn_like(v)
    grads = torch.autograd.grad((v * probe).sum(), [u, module.weight])
    want = torch.autograd.grad((want_v * probe).sum(), [u, module.weight])
    for g, w in zip(grads, want):
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-8)


def test_dynamic_routing_gradients_skip_the_coupling_coefficients_as_the_original():
    module, u = _dynamic(3), _primary().requires_grad_()
    v, c = module(u)
    assert not c.requires_grad  # the original's c comes from detached votes only
    probe = torch.randn_like(v)
    grad = torch.autograd.grad((v * probe).sum(), module.weight)[0]
    # decisive: routing without the detach gives other gradients (same forward values)
    full_v, _ = pointcapsnet_routing_loop(module.weight, u, 3, detach=False)
    torch.testing.assert_close(full_v, v, rtol=1e-5, atol=1e-8)
    full = torch.autograd.grad((full_v * probe).sum(), module.weight)[0]
    assert (full - grad).abs().max() > 1e-3 * grad.abs().max()


def test_dynamic_routing_initial_weights_as_the_original():
    torch.manual_seed(0)
    w = DynamicRouting(64, 16, 12, 32).weight  # 0.01 * randn(L, P, D', D) in the original
    assert w.shape == (12, 64, 32, 16)
    assert abs(w.mean().item()) < 1e-3 and abs(w.std().item() - 0.01) < 5e-4


@pytest.mark.parametrize("name", ROUTINGS)
def test_every_routing_returns_documented_shapes_and_distributions(name):
    torch.manual_seed(0)
    module = build_routing(name, P, D, L, 6, iters=3, heads=2).double()
    u = _primary()
    v, assign = module(u)
    assert v.shape == (B, L, 6) and v.dtype == u.dtype and torch.isfinite(v).all()
    assert assign.shape == (B, P, L) and torch.isfinite(assign).all()
    assert (assign >= 0).all()
    torch.testing.assert_close(assign.sum(-1), torch.ones(B, P, dtype=torch.float64))
    if name == "em":  # the documented extra: activations of the last M-step, (B, L) in (0, 1)
        act = module.last_activations
        assert act.shape == (B, L) and (act > 0).all() and (act < 1).all()


def _decoder_inputs(kind, pos):
    torch.manual_seed(0)  # the primary layer is built first: the same weights for every routing
    model = build_model(f"capsule_ae_small_{kind}", tiny=True).eval()
    seen = []
    handle = model.decoder.register_forward_pre_hook(lambda mod, args: seen.append(args[0]))
    with torch.no_grad():
        out = model(pos, return_features=True)
    handle.remove()
    assert len(seen) == 1
    return model, out, seen[0]


def test_decoder_sees_the_same_input_shape_whichever_routing():
    pos = torch.rand(2, 64, 3, generator=torch.Generator().manual_seed(3)) * 2 - 1
    results = {kind: _decoder_inputs(kind, pos) for kind in ("dr", "em", "ca")}
    _, ref_out, ref_in = results["dr"]
    cfg = results["dr"][0].cfg
    for kind, (model, out, seen) in results.items():
        assert model.cfg.routing == {"dr": "dynamic", "em": "em", "ca": "centroid"}[kind]
        torch.testing.assert_close(out["primary"], ref_out["primary"])  # same primary capsules
        assert seen.shape == ref_in.shape == (2, cfg.latent_caps, cfg.latent_dim)
        assert seen is out["capsules"]  # the decoder gets the routing's output unchanged
        assert out["assignments"].shape == (2, cfg.primary_caps, cfg.latent_caps)
        assert out["points"].shape == ref_out["points"].shape
        assert torch.equal(out["capsule_index"], ref_out["capsule_index"])


@pytest.mark.parametrize("size, caps, dim, latent, latent_dim",
                         [("small", 512, 16, 12, 128), ("base", 1024, 16, 64, 64)])
def test_registry_sizes_are_the_papers(size, caps, dim, latent, latent_dim):
    for kind in ("dr", "em", "ca"):
        cfg = model_config(f"capsule_ae_{size}_{kind}")
        assert (cfg.primary_caps, cfg.primary_dim, cfg.latent_caps, cfg.latent_dim) == (
            caps, dim, latent, latent_dim)
        assert cfg.num_points == 2048 and cfg.iters == 3 and cfg.decoders == 0


def test_twelve_capsules_decode_twelve_times_170_points():
    # the small models' L = 12 and 2,048 points with tiny encoders: 2048 // 12 = 170 per capsule
    torch.manual_seed(0)
    model = build_model("capsule_ae_small_ca", tiny=True, latent_caps=12, num_points=2048).eval()
    pos = torch.rand(1, 256, 3, generator=torch.Generator().manual_seed(0)) * 2 - 1
    with torch.no_grad():
        out = model(pos)
    assert out["points"].shape == (1, 2040, 3)
    assert torch.equal(out["capsule_index"].bincount(), torch.full((12,), 170))
