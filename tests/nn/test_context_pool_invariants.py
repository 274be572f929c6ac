"""Invariants of ContextPool taken from the paper's eq. 4 (the fidelity audit, docs/fidelity_sequoia_contextpool.md).

``y_i = sum_j x_j w_j g_ij / sum_j w_j g_ij`` with ``g^i`` a Gaussian of standard deviation
``sigma_i``. On the same weights:

- a support that vanishes (``s_i -> 0``) pools the point alone: the identity, whatever the
  weights;
- a support far wider than the neighbourhood (``g_ij -> 1``) leaves the weights alone: the
  paper's "No locality prior (w only)" row, and with uniform weights plain average pooling of
  the neighbourhood;
- ``w`` is a softmax over the cloud, so adding a constant to every weight logit changes
  nothing (the normalisation ``C(X) = sum_j w_j g_ij`` cancels it);
- plugged after every layer of a model, an identity ContextPool leaves the model's outputs
  exactly as without it (the pooled features only replace the block outputs).
"""

import re

import pytest
import torch

from pointabstract.models import build_model
from pointabstract.nn import ContextPool
from tests.fixtures import cloud


def _pool(weights="learned", locality="gaussian", *, k=6, r=0.1, seed=0):
    torch.manual_seed(seed)
    return ContextPool(5, k=k, weights=weights, locality=locality, r=r).double()


def _set_size(pool, logit):
    """Every point's size logit b_i = ``logit`` (the mapping's last output), so s_i = sigmoid(logit)."""
    with torch.no_grad():
        pool.map2.weight[-1].zero_()
        pool.map2.bias[-1] = logit


def _inputs(seed=1, n=24):
    return cloud(2, n, 5, dtype=torch.float64, seed=seed), cloud(2, n, dtype=torch.float64, seed=seed + 1)


@pytest.mark.parametrize("weights", ["learned", "uniform", "nonlocal"])
def test_a_vanishing_support_is_the_identity_whatever_the_weights(weights):
    pool = _pool(weights)
    x, pos = _inputs()
    assert not torch.allclose(pool(x, pos), x)  # a real pooling at initialisation
    _set_size(pool, -1e4)  # s_i = 0 exactly: sigma_i = 0
    y, info = pool(x, pos, return_info=True)
    assert bool((info["sigma"] == 0).all())
    torch.testing.assert_close(y, x, rtol=0, atol=1e-12)


def _knn_mean(x, pos, k):
    """Brute force: the mean of each point's k nearest points (itself included)."""
    out = torch.empty_like(x)
    for b in range(x.shape[0]):
        for i in range(x.shape[1]):
            d = [(float(((pos[b, j] - pos[b, i]) ** 2).sum()), j) for j in range(x.shape[1])]
            near = [j for _, j in sorted(d)[:k]]
            out[b, i] = x[b, near].mean(0)
    return out


def test_uniform_weights_and_a_huge_support_are_neighbourhood_average_pooling():
    pool = _pool("uniform", r=1e9)
    _set_size(pool, 30.0)  # s_i = 1: sigma_i = 1e9 K h_i, g_ij = 1 to double precision
    x, pos = _inputs(seed=3)
    torch.testing.assert_close(pool(x, pos), _knn_mean(x, pos, 6))


def test_learned_weights_and_a_huge_support_are_the_no_locality_pooling_on_the_same_weights():
    gauss = _pool("learned", "gaussian", seed=4)
    flat = _pool("learned", "none", seed=5)
    with torch.no_grad():  # the same mapping: layer 1, and layer 2's weight output a_i
        flat.map1.load_state_dict(gauss.map1.state_dict())
        flat.map2.weight.copy_(gauss.map2.weight[:1])
        flat.map2.bias.copy_(gauss.map2.bias[:1])
    x, pos = _inputs(seed=6)
    assert not torch.allclose(gauss(x, pos), flat(x, pos))  # a learned support is not 'none'
    gauss.r = 1e9
    _set_size(gauss, 30.0)  # s_i = 1: sigma_i = 1e9 K h_i
    y, info = gauss(x, pos, return_info=True)
    torch.testing.assert_close(y, flat(x, pos))
    # and both are the weights alone: y_i = sum_j w_j x_j / sum_j w_j over i's neighbours
    w = info["weight"]
    for b in range(2):
        idx = info["idx"][b]  # (N, K)
        wn = w[b][idx]
        torch.testing.assert_close(y[b], (wn.unsqueeze(-1) * x[b][idx]).sum(1) / wn.sum(1, keepdim=True))


def test_eq4_coefficients_are_weights_times_gaussian_normalised():
    # coef_ij = w_j g_ij / sum_j w_j g_ij, with w the cloud softmax and g_ij = exp(-d^2 / 2 sigma_i^2)
    pool = _pool("learned", r=0.5, seed=7)
    x, pos = _inputs(seed=8)
    y, info = pool(x, pos, return_info=True)
    idx, w, sigma = info["idx"], info["weight"], info["sigma"]
    for b in range(2):
        d2 = ((pos[b][idx[b]] - pos[b].unsqueeze(1)) ** 2).sum(-1)  # (N, K)
        g = torch.exp(-d2 / (2 * sigma[b].unsqueeze(-1) ** 2))
        prod = w[b][idx[b]] * g
        # sigma is far above the 1e-4-radius floor here, so the floor is invisible
        torch.testing.assert_close(info["coef"][b], prod / prod.sum(1, keepdim=True))
        torch.testing.assert_close(y[b], (info["coef"][b].unsqueeze(-1) * x[b][idx[b]]).sum(1))
    # a constant added to every weight logit is normalised away (w is a softmax over the cloud)
    with torch.no_grad():
        pool.map2.bias[0] += 3.0
    torch.testing.assert_close(pool(x, pos), y)


@pytest.mark.parametrize("attention", ["sequoia", "softmax"])
def test_an_identity_context_pool_after_every_layer_leaves_the_model_unchanged(attention):
    torch.manual_seed(0)
    plain = build_model("sequoia_cls", tiny=True, num_classes=5, attention=attention).double().eval()
    torch.manual_seed(1)
    pooled = build_model("sequoia_cls", tiny=True, num_classes=5, attention=attention,
                         context_pool=True).double().eval()
    # the same layers under the pools' BlockStack names: backbone.blocks.i.block.*
    state = {re.sub(r"^backbone\.blocks\.(\d+)\.", r"backbone.blocks.\1.block.", k): v
             for k, v in plain.state_dict().items()}
    missing, unexpected = pooled.load_state_dict(state, strict=False)
    assert not unexpected and missing and all(".post." in m for m in missing)
    pos = cloud(2, 40, dtype=torch.float64, seed=9)
    with torch.no_grad():
        assert not torch.allclose(pooled(pos)["logits"], plain(pos)["logits"])  # the pools act
        for pool in (block.post for block in pooled.backbone.blocks):
            _set_size(pool, -1e4)
        torch.testing.assert_close(pooled(pos)["logits"], plain(pos)["logits"], rtol=0, atol=1e-10)
