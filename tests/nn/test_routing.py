import pytest
import torch

from pointabstract.nn.attention import attend
from pointabstract.nn.capsules import squash
from pointabstract.nn.routing import (
    ROUTINGS,
    CentroidRouting,
    DynamicRouting,
    EMRouting,
    build_routing,
    centroid_routing_naive,
    dynamic_routing_naive,
    em_routing_naive,
)

P, D, L, DO = 7, 4, 3, 8


def _capsules(batch=2, seed=0):
    g = torch.Generator().manual_seed(seed)
    return squash(torch.randn(batch, P, D, generator=g, dtype=torch.float64) * 2)


def _build(name, iters=3):
    torch.manual_seed(1)
    module = build_routing(name, P, D, L, DO, iters=iters, heads=2).double()
    with torch.no_grad():  # weights large enough for assignments far from uniform
        if name == "em":
            module.weight.normal_()
            module.beta_v.normal_()
            module.beta_a.normal_()
        elif name == "dynamic":
            module.weight.normal_()
        else:
            module.attention.q.weight.mul_(8)
            module.attention.kv.weight.mul_(8)
    return module


NAIVE = {"dynamic": dynamic_routing_naive, "em": em_routing_naive, "centroid": centroid_routing_naive}


@pytest.mark.parametrize("iters", [1, 2, 3])
@pytest.mark.parametrize("name", ROUTINGS)
def test_routing_matches_naive_values_and_gradients(name, iters):
    module, u = _build(name, iters), _capsules().requires_grad_()
    v, assign = module(u)
    assert v.shape == (2, L, DO) and assign.shape == (2, P, L)
    want_v, want_assign = NAIVE[name](module, u)
    torch.testing.assert_close(v, want_v, rtol=1e-9, atol=1e-11)
    torch.testing.assert_close(assign, want_assign, rtol=1e-9, atol=1e-11)
    probe = torch.randn_like(v)
    inputs = [u, *module.parameters()]  # EM's betas are unused with one iteration
    grads = torch.autograd.grad((v * probe).sum(), inputs, allow_unused=True)
    want = torch.autograd.grad((want_v * probe).sum(), inputs, allow_unused=True)
    for x, g, w in zip(inputs, grads, want):
        zero = torch.zeros_like(x)
        torch.testing.assert_close(zero if g is None else g, zero if w is None else w, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("iters", [1, 3])
def test_centroid_mean_update_matches_naive_and_is_the_sum_over_the_mass(iters):
    module = _build("centroid", iters)
    mean = CentroidRouting(P, D, L, DO, iters=iters, heads=2, update="mean").double()
    mean.load_state_dict(module.state_dict())
    u = _capsules().requires_grad_()
    v, assign = mean(u)
    want_v, want_assign = centroid_routing_naive(mean, u)
    torch.testing.assert_close(v, want_v, rtol=1e-9, atol=1e-11)
    torch.testing.assert_close(assign, want_assign, rtol=1e-9, atol=1e-11)
    g, w = torch.autograd.grad(v.sum(), u)[0], torch.autograd.grad(want_v.sum(), u)[0]
    torch.testing.assert_close(g, w, rtol=1e-8, atol=1e-10)
    # one step: the mean update is the sum update divided by each latent capsule's total weight
    if iters == 1:
        att = module.attention
        x = att.proj_in(u)
        u0 = torch.einsum("mn,bnc->bmc", att.initial_weights(), x)
        q = att.q(att.norm_u(u0)).view(2, L, 2, -1)
        upd, weights = attend(q, att.kv(att.norm_x(x)), normalize="centroids")
        mass = weights.sum(2).clamp(min=1e-6).unsqueeze(-1)  # (B, L, H, 1); floored (docstring)
        want = att.mlp(u0 + att.out((upd / mass).reshape(2, L, -1)))
        torch.testing.assert_close(v, want, rtol=1e-9, atol=1e-11)
        assert not torch.allclose(module(u)[0], v)  # the sum update differs


def test_centroid_update_is_checked():
    with pytest.raises(ValueError, match=r"update must be one of \['sum', 'mean'\], got 'avg'"):
        CentroidRouting(P, D, L, DO, update="avg")


@pytest.mark.parametrize("name", ROUTINGS)
def test_assignments_sum_to_one_over_latent_capsules(name):
    module = _build(name)
    _, assign = module(_capsules(batch=3, seed=5))
    assert (assign >= 0).all()
    torch.testing.assert_close(assign.sum(-1), torch.ones(3, P, dtype=torch.float64))


def test_dynamic_routing_hand_computed_single_iteration():
    # one iteration, one latent capsule: c = 1, s = 1 * 0.5 + 1 * 1.0 = 1.5, v = 1.5^2 / (1 + 1.5^2)
    module = DynamicRouting(2, 1, 1, 1, iters=1).double()
    with torch.no_grad():
        module.weight.fill_(1.0)
    u = torch.tensor([[[0.5], [1.0]]], dtype=torch.float64)
    v, c = module(u)
    torch.testing.assert_close(v, torch.tensor([[[1.5 ** 2 / (1 + 1.5 ** 2)]]], dtype=torch.float64))
    assert torch.equal(c, torch.ones(1, 2, 1, dtype=torch.float64))


def test_dynamic_routing_latent_capsules_are_squashed_and_finite_at_zero():
    module = _build("dynamic")
    v, _ = module(_capsules())
    assert (v.norm(dim=-1) < 1).all()
    u = torch.zeros(2, P, D, dtype=torch.float64, requires_grad=True)
    v, assign = module(u)
    v.sum().backward()
    assert torch.isfinite(u.grad).all() and torch.isfinite(assign).all()


def test_em_routing_finite_on_zero_capsules():
    module = _build("em")
    u = torch.zeros(2, P, D, dtype=torch.float64, requires_grad=True)
    v, assign = module(u)
    (v.sum() + assign.sum()).backward()
    assert torch.isfinite(v).all() and torch.isfinite(u.grad).all()
    assert module.last_activations.shape == (2, L)


def test_centroid_routing_uses_the_papers_setting():
    module = CentroidRouting(P, D, L, DO, heads=2)
    att = module.attention
    assert (att.init, att.iters, att.k, att.normalize) == ("linear", 3, None, "centroids")
    assert tuple(att.init_weight.shape) == (L, P) and not hasattr(att, "assign")
    bound = P ** -0.5  # nn.Linear's default: uniform(+-1/sqrt(P))
    assert att.init_weight.abs().max() <= bound and att.init_weight.std() > bound / 4


@pytest.mark.parametrize("cls", [DynamicRouting, EMRouting, CentroidRouting])
def test_routings_reject_bad_input(cls):
    module = cls(P, D, L, DO, iters=2)
    with pytest.raises(ValueError, match=r"u must have shape \(B, P, D\) = \(B, 7, 4\), got \(2, 6, 4\)"):
        module(torch.randn(2, 6, 4))
    with pytest.raises(ValueError, match=r"u must have shape \(B, P, D\) = \(B, 7, 4\), got \(7, 4\)"):
        module(torch.randn(P, D))
    with pytest.raises(TypeError, match="u must be a floating-point tensor, got dtype torch.int64"):
        module(torch.ones(2, P, D, dtype=torch.int64))
    with pytest.raises(ValueError, match="out_caps must be a positive int, got 0"):
        cls(P, D, 0, DO)
    with pytest.raises(TypeError, match="iters must be an int, got float 2.0"):
        cls(P, D, L, DO, iters=2.0)


def test_em_routing_rejects_a_non_positive_eps():
    with pytest.raises(ValueError, match="eps must be a positive finite number, got 0.0"):
        EMRouting(P, D, L, DO, eps=0.0)


def test_centroid_routing_rejects_unknown_init():
    with pytest.raises(ValueError, match=r"init must be one of \['linear', 'soft_average'\], got 'fps'"):
        CentroidRouting(P, D, L, DO, init="fps")


def test_old_centroid_routing_checkpoint_loads_with_the_same_outputs():
    # older checkpoints of init="linear" stored softmax logits `assign`; they convert exactly
    torch.manual_seed(3)
    old = CentroidRouting(P, D, L, DO, heads=2, init="soft_average").double()
    state = old.state_dict()
    assert "attention.assign" in state
    new = CentroidRouting(P, D, L, DO, heads=2).double()
    new.load_state_dict(state)  # strict: no missing or unexpected keys
    u = _capsules()
    torch.testing.assert_close(new(u)[0], old(u)[0], rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(new.attention.init_weight, old.attention.assign.softmax(-1))


def test_build_routing_rejects_unknown_name():
    with pytest.raises(ValueError, match=r"routing must be one of \['dynamic', 'em', 'centroid'\], got 'x'"):
        build_routing("x", P, D, L, DO)
