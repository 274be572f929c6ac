import copy

import pytest
import torch

from pointabstract.nn.capsules import PrimaryPointCapsules, primary_capsules_naive, squash


def test_squash_hand_computed():
    # |s| = 5 -> length 25 / 26, direction kept; the zero vector stays zero
    s = torch.tensor([[3.0, 4.0], [0.0, 0.0]], dtype=torch.float64)
    v = squash(s)
    torch.testing.assert_close(v[0], s[0] / 5 * 25 / 26, rtol=1e-7, atol=0)
    assert torch.equal(v[1], torch.zeros(2, dtype=torch.float64))


def test_squash_norm_below_one_and_along_dim():
    torch.manual_seed(0)
    s = torch.randn(4, 7, 5) * torch.logspace(-3, 2, 5)  # lengths from tiny to large
    v = squash(s, dim=1)
    norms = v.norm(dim=1)
    assert (norms < 1).all()
    torch.testing.assert_close(norms, (s.norm(dim=1) ** 2 / (1 + s.norm(dim=1) ** 2)), rtol=1e-4,
                               atol=1e-6)


def test_squash_gradient_finite_at_zero():
    s = torch.zeros(3, 4, dtype=torch.float64, requires_grad=True)
    squash(s).sum().backward()
    assert torch.isfinite(s.grad).all()
    x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(squash, (x,))


def test_squash_rejects_bad_input():
    with pytest.raises(TypeError, match="s must be a floating-point tensor"):
        squash(torch.ones(3, dtype=torch.int64))
    with pytest.raises(ValueError, match="eps must be a positive finite number, got 0.0"):
        squash(torch.ones(3), eps=0.0)


def _pair(p=12, d=5, chunk=2, flip=True, pooled_norm=False):
    torch.manual_seed(0)
    lean = PrimaryPointCapsules(p, d, hidden=(8, 16), chunk=chunk, pooled_norm=pooled_norm).double()
    with torch.no_grad():  # negative BatchNorm scales take the max-pool at the minimum of z
        if flip:
            lean.bn_weight.uniform_(-1.5, 1.5)
        lean.bn_bias.normal_()
    return lean, copy.deepcopy(lean)


@pytest.mark.parametrize("chunk, pooled_norm", [(1, False), (2, False), (5, False), (9, False), (2, True)])
@pytest.mark.parametrize("train", [True, False])
def test_primary_capsules_match_naive(chunk, train, pooled_norm):
    lean, naive = _pair(chunk=chunk, pooled_norm=pooled_norm)
    lean.train(train)
    naive.train(train)
    pos = torch.randn(3, 40, 3, dtype=torch.float64)
    u, want = lean(pos), primary_capsules_naive(naive, pos)
    assert u.shape == (3, 12, 5)
    torch.testing.assert_close(u, want, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(lean.running_mean, naive.running_mean)
    torch.testing.assert_close(lean.running_var, naive.running_var)
    if pooled_norm:  # the pooled channels vary over the batch: normalised to mean 0 before the squash
        torch.testing.assert_close(lean.pooled_norm.running_mean, naive.pooled_norm.running_mean)
    (u * torch.linspace(-1, 1, 5, dtype=torch.float64)).sum().backward()
    (want * torch.linspace(-1, 1, 5, dtype=torch.float64)).sum().backward()
    for (name, a), b in zip(lean.named_parameters(), naive.parameters()):
        torch.testing.assert_close(a.grad, b.grad, rtol=1e-8, atol=1e-10, msg=name)


def test_primary_capsules_are_squashed_and_order_invariant():
    lean, _ = _pair(flip=False)
    pos = torch.randn(2, 30, 3, dtype=torch.float64)
    u = lean(pos)
    assert (u.norm(dim=-1) < 1).all()
    lean.eval()  # running statistics: the point order cannot matter
    torch.testing.assert_close(lean(pos), lean(pos[:, torch.randperm(30)]))


def test_primary_capsules_reject_bad_input():
    with pytest.raises(ValueError, match="num_caps must be a positive int"):
        PrimaryPointCapsules(0, 4)
    caps = PrimaryPointCapsules(4, 2, hidden=(8,))
    with pytest.raises(ValueError, match=r"pos must have shape \(B, N, 3\), got \(2, 10, 2\)"):
        caps(torch.randn(2, 10, 2))
    with pytest.raises(TypeError, match="pos must be a floating-point tensor"):
        caps(torch.ones(2, 10, 3, dtype=torch.int64))
