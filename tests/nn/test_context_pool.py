import itertools

import pytest
import torch

from pointabstract.nn import BlockStack, ContextPool, SABlock
from pointabstract.nn.context_pool_naive import context_pool_naive
from tests.fixtures import cloud

VARIANTS = [  # (weights, normalize, locality)
    *((w, True, loc) for w, loc in itertools.product(("learned", "uniform", "nonlocal"),
                                                      ("gaussian", "none", "fixed"))),
    ("learned", False, "gaussian"), ("nonlocal", False, "fixed"), ("learned", False, "none")]


def _pool(weights="learned", normalize=True, locality="gaussian", *, dim=6, k=5, seed=0, **kw):
    torch.manual_seed(seed)
    return ContextPool(dim, k=k, weights=weights, normalize=normalize, locality=locality, **kw).double()


@pytest.mark.parametrize("weights,normalize,locality", VARIANTS)
def test_matches_naive_reference(weights, normalize, locality):
    pool = _pool(weights, normalize, locality, r=0.5)
    x, pos = cloud(2, 11, 6, dtype=torch.float64, seed=1), cloud(2, 11, dtype=torch.float64, seed=2)
    torch.testing.assert_close(pool(x, pos), context_pool_naive(pool, x, pos))


@pytest.mark.parametrize("weights,normalize", [("learned", True), ("uniform", True), ("learned", False)])
def test_paper_sizes_match_naive_reference(weights, normalize):
    pool = _pool(weights, normalize, "gaussian", r=0.5, sizes="softmax")
    x, pos = cloud(2, 11, 6, dtype=torch.float64, seed=1), cloud(2, 11, dtype=torch.float64, seed=2)
    torch.testing.assert_close(pool(x, pos), context_pool_naive(pool, x, pos))


def test_paper_sizes_sum_to_one_over_the_cloud_and_sigma_is_r_n_s_h():
    # sizes="softmax": the paper's s = softmax(b) over the N tokens and sigma = r n s, n = N here;
    # on a unit-spaced line (h_i = 1) sigma is r N s_i exactly, so its mean over the cloud is r
    pos = torch.zeros(2, 12, 3)
    pos[:, :, 0] = torch.arange(12.0)
    pool = ContextPool(4, k=5, r=0.1, sizes="softmax")
    _, info = pool(torch.randn(2, 12, 4), pos, return_info=True)
    torch.testing.assert_close(info["size"].sum(-1), torch.ones(2))
    torch.testing.assert_close(info["sigma"], 0.1 * 12 * info["size"])
    torch.testing.assert_close(info["sigma"].mean(-1), torch.full((2,), 0.1))
    assert "sizes='softmax'" in repr(pool) and "sizes" not in repr(ContextPool(4))


@pytest.mark.parametrize("weights,locality", [("learned", "gaussian"), ("learned", "none"),
                                               ("uniform", "gaussian")])
def test_mlp_mapping_matches_naive_reference(weights, locality):
    pool = _pool(weights, True, locality, r=0.5, mapping="point")
    x, pos = cloud(2, 11, 6, dtype=torch.float64, seed=1), cloud(2, 11, dtype=torch.float64, seed=2)
    torch.testing.assert_close(pool(x, pos), context_pool_naive(pool, x, pos))


def test_mlp_mapping_predicts_from_each_point_alone():
    # the paper's "MLP-based CP": changing one point's features changes only its own weight and
    # size; with the neighbourhood mapping its neighbours' predictions change too
    x, pos = cloud(1, 20, 6, seed=5), cloud(1, 20, seed=6)
    bumped = x.clone()
    bumped[0, 3] += 1.0
    for mapping, others_move in (("point", False), ("neighbourhood", True)):
        pool = _pool(mapping=mapping).float()
        (_, a), (_, b) = pool(x, pos, return_info=True), pool(bumped, pos, return_info=True)
        moved = (a["size"] != b["size"])[0]
        assert bool(moved[3]) and bool(moved[torch.arange(20) != 3].any()) == others_move, mapping


@pytest.mark.parametrize("n,k", [(1, 4), (3, 5), (9, 9)])
def test_matches_naive_when_the_cloud_is_small(n, k):
    pool = _pool(k=k)
    x, pos = cloud(1, n, 6, dtype=torch.float64, seed=3), cloud(1, n, dtype=torch.float64, seed=4)
    y = pool(x, pos)
    torch.testing.assert_close(y, context_pool_naive(pool, x, pos))
    if n == 1:
        torch.testing.assert_close(y, x)  # one point pools only itself


def test_uniform_weights_and_fixed_window_are_mean_pooling():
    x, pos = cloud(2, 30, 6, seed=5), cloud(2, 30, seed=6)
    pool = ContextPool(6, k=8, weights="uniform", locality="fixed", window=3)
    # brute force: mean of each point's 3 nearest points (itself included)
    d = torch.cdist(pos, pos)
    idx = d.topk(3, largest=False).indices  # (B, N, 3)
    expected = torch.stack([x[b][idx[b]].mean(1) for b in range(2)])
    torch.testing.assert_close(pool(x, pos), expected)
    assert not list(pool.parameters())  # nothing learned


def test_uniform_weights_without_locality_average_the_k_neighbours_hand_computed():
    pos = torch.tensor([[[0.0, 0, 0], [1, 0, 0], [3, 0, 0], [7, 0, 0]]])
    x = torch.tensor([[[1.0], [2.0], [4.0], [8.0]]])
    y = ContextPool(1, k=2, weights="uniform", locality="none")(x, pos)
    # neighbours: 0 -> {0, 1}, 1 -> {1, 0}, 2 -> {2, 1}, 3 -> {3, 2}
    torch.testing.assert_close(y, torch.tensor([[[1.5], [1.5], [3.0], [6.0]]]))


def test_weights_and_sizes_are_normalised_as_documented():
    pool = _pool(dim=6, k=6).float()
    x, pos = cloud(3, 25, 6, seed=7), cloud(3, 25, seed=8)
    _, info = pool(x, pos, return_info=True)
    w, s, sigma, coef = info["weight"], info["size"], info["sigma"], info["coef"]
    assert w.shape == s.shape == sigma.shape == (3, 25) and coef.shape == (3, 25, 6)
    torch.testing.assert_close(w.sum(-1), torch.ones(3))  # softmax over each cloud
    assert bool((w > 0).all()) and bool(((s > 0) & (s < 1)).all())  # s in (0, 1)
    torch.testing.assert_close(coef.sum(-1), torch.ones(3, 25))  # y_i is a weighted mean
    # sigma = r K s h with h the mean nearest-other distance over the neighbourhood
    d = torch.cdist(pos, pos) + torch.eye(25) * 1e9
    nearest = d.min(-1).values  # (B, N)
    h = torch.stack([nearest[b][info["idx"][b]].mean(-1) for b in range(3)])
    torch.testing.assert_close(sigma, 0.1 * 6 * s * h)


def test_sigma_is_r_n_s_on_a_unit_spaced_line():
    # the paper's sequence case: tokens one unit apart, so h_i = 1 and sigma_i = r K s_i
    pos = torch.zeros(1, 12, 3)
    pos[0, :, 0] = torch.arange(12.0)
    _, info = ContextPool(4, k=5, r=0.1)(torch.randn(1, 12, 4), pos, return_info=True)
    torch.testing.assert_close(info["sigma"], 0.1 * 5 * info["size"])


def test_a_vanishing_size_pools_the_point_alone_with_finite_gradients():
    # seen in training: the pool after the last centroid block drove s to 1e-11 and, before the
    # floor on sigma, its gradients to NaN
    pool = _pool("uniform", True, "gaussian", dim=6, k=5).float()
    with torch.no_grad():
        pool.map2.bias.fill_(-60.0)  # s = sigmoid(-60) ~ 1e-26
    x = cloud(2, 16, 6, seed=15).requires_grad_()
    y = pool(x, cloud(2, 16, seed=16))
    torch.testing.assert_close(y, x)
    y.square().sum().backward()
    assert all(torch.isfinite(p.grad).all() for p in pool.parameters()) and torch.isfinite(x.grad).all()


def test_unnormalised_weights_are_the_raw_predictions():
    pool = _pool("learned", False, "none", dim=4, k=3)
    x, pos = cloud(1, 7, 4, dtype=torch.float64, seed=9), cloud(1, 7, dtype=torch.float64, seed=10)
    y, info = pool(x, pos, return_info=True)
    a = info["weight"]  # raw, may be negative, does not sum to 1
    idx = info["idx"][0]
    torch.testing.assert_close(y[0], (a[0][idx].unsqueeze(-1) * x[0][idx]).sum(1) / 3)


def test_gradients_reach_the_mapping():
    for weights, locality in (("learned", "gaussian"), ("nonlocal", "gaussian"), ("learned", "fixed")):
        pool = _pool(weights, True, locality).float()
        x = cloud(2, 16, 6, seed=11).requires_grad_()
        pool(x, cloud(2, 16, seed=12)).square().sum().backward()
        for name, p in pool.named_parameters():
            assert p.grad is not None and bool(p.grad.abs().sum() > 0), (weights, locality, name)
        assert bool(x.grad.abs().sum() > 0)


def test_gradcheck_float64():
    pool = _pool(r=0.5)
    x = cloud(1, 8, 6, dtype=torch.float64, seed=13).requires_grad_()
    pos = cloud(1, 8, dtype=torch.float64, seed=14)
    assert torch.autograd.gradcheck(lambda t: pool(t, pos), (x,))


def test_as_a_post_module_after_every_block():
    torch.manual_seed(0)
    blocks = [SABlock(4, 8, heads=2, k=5, knn_space="xyz"), SABlock(8, 8, heads=2, k=5, knn_space="xyz")]
    stack = BlockStack(blocks, post=lambda i, b: ContextPool(b.dim_out, k=4))
    y, _, _ = stack(cloud(2, 12, 4, seed=1), cloud(2, 12, seed=2))
    assert y.shape == (2, 12, 8)
    assert "1.post.map1.weight" in stack.state_dict()


@pytest.mark.parametrize("kwargs,error,match", [
    ({"dim": 0}, ValueError, r"dim must be a positive int, got 0"),
    ({"dim": 4, "k": 1}, ValueError, r"k must be an int >= 2, got 1"),
    ({"dim": 4, "k": 2.5}, TypeError, r"k must be an int, got float 2.5"),
    ({"dim": 4, "weights": "softmax"}, ValueError, r"weights must be one of .*'learned'.*got 'softmax'"),
    ({"dim": 4, "locality": "box"}, ValueError, r"locality must be one of .*got 'box'"),
    ({"dim": 4, "normalize": "yes"}, TypeError, r"normalize must be True or False, got str 'yes'"),
    ({"dim": 4, "weights": "uniform", "normalize": False}, ValueError, r"normalize=False needs learned"),
    ({"dim": 4, "k": 4, "locality": "fixed", "window": 5}, ValueError, r"window must be at most k = 4, got 5"),
    ({"dim": 4, "window": 3}, ValueError, r"window is only used with locality='fixed'"),
    ({"dim": 4, "r": 0.0}, ValueError, r"r must be a positive finite number, got 0.0"),
    ({"dim": 4, "r": "0.1"}, TypeError, r"r must be a real number, got str '0.1'"),
    ({"dim": 4, "mapping": "conv"}, ValueError, r"mapping must be one of .*'point'.*got 'conv'"),
    ({"dim": 4, "sizes": "tanh"}, ValueError, r"sizes must be one of .*'softmax'.*got 'tanh'"),
    ({"dim": 4, "sizes": "softmax", "locality": "none"}, ValueError, r"sizes='softmax' needs locality='gaussian'"),
])
def test_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        ContextPool(**kwargs)


def test_bad_inputs():
    pool = ContextPool(4, k=3)
    x, pos = cloud(2, 5, 4), cloud(2, 5)
    with pytest.raises(ValueError, match=r"x must have shape \(B, N, C\) = \(2, 5, 4\) matching pos \(2, 5, 3\), "
                                         r"got \(2, 5, 3\)"):
        pool(x[..., :3], pos)
    with pytest.raises(ValueError, match=r"x must have shape \(B, N, C\) = \(2, 4, 4\) matching pos \(2, 4, 3\), "
                                         r"got \(2, 5, 4\)"):
        pool(x, pos[:, :4])
    with pytest.raises(ValueError, match=r"pos must have shape \(B, N, 3\), got \(2, 5, 2\)"):
        pool(x, pos[..., :2])
    with pytest.raises(TypeError, match=r"x must be a floating-point tensor, got dtype torch.int64"):
        pool(x.long(), pos)
    with pytest.raises(TypeError, match=r"pos must be a torch.Tensor, got list"):
        pool(x, pos.tolist())
    bad = pos.clone()
    bad[0, 1, 2] = float("nan")
    with pytest.raises(ValueError, match=r"pos holds NaN or Inf values"):
        pool(x, bad)
