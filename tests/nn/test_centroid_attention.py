import pytest
import torch

from pointabstract.nn import INITS, CentroidAttention, MultiHeadSelfAttention
from tests.fixtures import cloud


def _zero_mlp(module):
    with torch.no_grad():
        last = module.mlp.net[-1]
        last.weight.zero_()
        last.bias.zero_()


@pytest.mark.parametrize("k", [None, 20])
def test_equals_self_attention_plus_skip_when_m_equals_n(k):
    # the paper's special case: M = N, u^0 = x (FPS with ratio 1 picks every input, in FPS
    # order), T = 1, softmax over each centroid's inputs -> u = x + SA(x), permuted
    torch.manual_seed(0)
    x, pos = cloud(2, 20, 8, seed=1), cloud(2, 20, seed=2)
    ca = CentroidAttention(8, 8, heads=2, ratio=1.0, init="fps", iters=1, k=k,
                           knn_space="feature", normalize="inputs")
    _zero_mlp(ca)
    sa = MultiHeadSelfAttention(8, heads=2, k=k, knn_space="feature")
    for name in ("q", "kv", "out"):  # share Q, K, V and the output projection
        getattr(sa, name).load_state_dict(getattr(ca, name).state_dict())
    u, pos_u, details = ca(x, pos, return_details=True)
    order = details["init_idx"]
    assert sorted(order[0].tolist()) == list(range(20))
    want = x + sa(ca.norm_x(x))
    torch.testing.assert_close(u, torch.stack([want[b, order[b]] for b in range(2)]),
                               rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(pos_u, torch.stack([pos[b, order[b]] for b in range(2)]))


@pytest.mark.parametrize("normalize", ["centroids", "inputs"])
def test_knn_with_k_equal_n_is_dense(normalize):
    torch.manual_seed(0)
    x, pos = cloud(2, 24, 8, seed=3), cloud(2, 24, seed=4)
    dense = CentroidAttention(8, 16, heads=4, num_centroids=6, k=None, normalize=normalize)
    full = CentroidAttention(8, 16, heads=4, num_centroids=6, k=24, normalize=normalize)
    full.load_state_dict(dense.state_dict())
    torch.testing.assert_close(full(x, pos)[0], dense(x, pos)[0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("init", INITS)
@pytest.mark.parametrize("iters", [0, 1, 3])
def test_every_init_shapes_and_gradients(init, iters):
    torch.manual_seed(0)
    x, pos = cloud(2, 32, 8, seed=5).requires_grad_(), cloud(2, 32, seed=6)
    ca = CentroidAttention(8, 12, heads=3, ratio=0.25, init=init, iters=iters, k=6,
                           num_inputs=32)
    u, pos_u, details = ca(x, pos, return_details=True)
    assert u.shape == (2, 8, 12) and pos_u.shape == (2, 8, 3)
    assert torch.isfinite(u).all() and torch.isfinite(pos_u).all()
    if iters:
        assert details["idx"].shape == (2, 8, 6) and details["weights"].shape == (2, 8, 6, 3)
    u.sum().backward()
    assert torch.isfinite(x.grad).all() and x.grad.abs().sum() > 0


def test_fps_init_is_independent_of_point_order():
    torch.manual_seed(0)
    x, pos = cloud(1, 50, 8, seed=7), cloud(1, 50, seed=8)
    ca = CentroidAttention(8, 8, heads=2, num_centroids=10, k=8)
    perm = torch.randperm(50)
    u1, p1 = ca(x, pos)
    u2, p2 = ca(x[:, perm], pos[:, perm])
    torch.testing.assert_close(p1, p2)
    torch.testing.assert_close(u1, u2, rtol=1e-5, atol=1e-5)


def test_bad_arguments():
    with pytest.raises(ValueError, match="exactly one of num_centroids and ratio"):
        CentroidAttention(8, 8, heads=2)
    with pytest.raises(ValueError, match=r"init must be one of \['fps'"):
        CentroidAttention(8, 8, heads=2, ratio=0.5, init="grid")
    with pytest.raises(ValueError, match=r"normalize must be one of \['inputs', 'centroids'\], got 'softmax'"):
        CentroidAttention(8, 8, heads=2, ratio=0.5, normalize="softmax")
    with pytest.raises(ValueError, match="init='linear' needs num_inputs"):
        CentroidAttention(8, 8, heads=2, ratio=0.5, init="linear")
    with pytest.raises(ValueError, match="init='soft_average' needs num_inputs"):
        CentroidAttention(8, 8, heads=2, ratio=0.5, init="soft_average")
    with pytest.raises(ValueError, match="init='fps' has no learned weights"):
        CentroidAttention(8, 8, heads=2, ratio=0.5).initial_weights()
    with pytest.raises(ValueError, match="num_centroids = 40 exceeds the number of inputs N = 30"):
        CentroidAttention(8, 8, heads=2, num_centroids=40)(cloud(1, 30, 8), cloud(1, 30))
    with pytest.raises(ValueError, match="built for N = 32 inputs, got 30"):
        CentroidAttention(8, 8, heads=2, ratio=0.5, init="linear", num_inputs=32)(cloud(1, 30, 8), cloud(1, 30))
