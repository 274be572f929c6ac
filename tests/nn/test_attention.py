import pytest
import torch

from pointabstract.nn import MultiHeadSelfAttention, attend
from tests.helpers import cloud


def test_knn_attention_with_k_equal_n_is_dense_attention():
    torch.manual_seed(0)
    x, pos = cloud(2, 30, 16, seed=1), cloud(2, 30, seed=2)
    dense = MultiHeadSelfAttention(16, heads=4, k=None)
    local = MultiHeadSelfAttention(16, heads=4, k=30, knn_space="xyz")
    local.load_state_dict(dense.state_dict())
    torch.testing.assert_close(local(x, pos), dense(x, pos), rtol=1e-5, atol=1e-6)
    feat = MultiHeadSelfAttention(16, heads=4, k=30, knn_space="feature")
    feat.load_state_dict(dense.state_dict())
    torch.testing.assert_close(feat(x), dense(x), rtol=1e-5, atol=1e-6)


def test_knn_attention_looks_only_at_neighbours():
    torch.manual_seed(0)
    attn = MultiHeadSelfAttention(8, heads=2, k=5, knn_space="xyz")
    x, pos = cloud(1, 40, 8, seed=3).requires_grad_(), cloud(1, 40, seed=4)
    out, info = attn(x, pos, return_attention=True)
    assert info["idx"].shape == (1, 40, 5) and info["weights"].shape == (1, 40, 5, 2)
    torch.testing.assert_close(info["weights"].sum(2), torch.ones(1, 40, 2))
    out[0, 7].sum().backward()  # point 7's output depends on its 5 neighbours only
    touched = set(torch.nonzero(x.grad[0].abs().sum(-1)).flatten().tolist())
    assert touched == set(info["idx"][0, 7].tolist())


@pytest.mark.parametrize("with_idx", [False, True])
def test_centroid_normalisation_sums_to_one_per_input(with_idx):
    torch.manual_seed(0)
    q, kv = torch.randn(2, 6, 3, 4), torch.randn(2, 10, 24)
    idx = torch.randint(0, 10, (2, 6, 4)) if with_idx else None
    _, w = attend(q, kv, idx, normalize="centroids")
    b_idx = idx if with_idx else torch.arange(10).expand(2, 6, 10)
    totals = torch.zeros(2, 10, 3).scatter_add(1, b_idx.reshape(2, -1, 1).expand(-1, -1, 3),
                                               w.reshape(2, -1, 3))
    connected = torch.zeros(2, 10, dtype=torch.bool).scatter(1, b_idx.reshape(2, -1), True)
    torch.testing.assert_close(totals[connected], torch.ones_like(totals[connected]))
    assert (totals[~connected] == 0).all()


def test_bad_arguments():
    with pytest.raises(ValueError, match="dim must be divisible by heads"):
        MultiHeadSelfAttention(10, heads=4)
    with pytest.raises(ValueError, match="knn_space must be 'feature' or 'xyz'"):
        MultiHeadSelfAttention(8, heads=2, k=3, knn_space="uv")
    with pytest.raises(ValueError, match="pos is required"):
        MultiHeadSelfAttention(8, heads=2, k=3, knn_space="xyz")(cloud(1, 5, 8))


@pytest.mark.parametrize("normalize", ["inputs", "centroids"])
def test_fused_cpu_products_match_the_gather_reference(normalize, monkeypatch):
    from pointabstract.nn import attention

    torch.manual_seed(0)
    q = torch.randn(3, 7, 2, 4, dtype=torch.float64, requires_grad=True)
    kv = torch.randn(3, 11, 16, dtype=torch.float64, requires_grad=True)
    idx = torch.randint(0, 11, (3, 7, 5))
    out, w = attend(q, kv, idx, normalize=normalize)
    g_out = torch.randn_like(out)
    gq, gkv = torch.autograd.grad((out * g_out).sum() + w.sum(), (q, kv))
    monkeypatch.setattr(attention, "_fused_ok", lambda *a: False)  # the plain gather path
    ref_out, ref_w = attend(q, kv, idx, normalize=normalize)
    rq, rkv = torch.autograd.grad((ref_out * g_out).sum() + ref_w.sum(), (q, kv))
    for a, b in [(out, ref_out), (w, ref_w), (gq, rq), (gkv, rkv)]:
        torch.testing.assert_close(a, b)


def test_fused_products_gradcheck():
    from pointabstract.nn.attention import _NeighbourDot, _NeighbourSum

    torch.manual_seed(0)
    q = torch.randn(2, 5, 2, 3, dtype=torch.float64, requires_grad=True)
    kv = torch.randn(2, 6, 12, dtype=torch.float64, requires_grad=True)
    w = torch.randn(2, 5, 4, 2, dtype=torch.float64, requires_grad=True)
    idx = torch.randint(0, 6, (2, 5, 4))
    torch.autograd.gradcheck(lambda a, b: _NeighbourDot.apply(a, b, idx), (q, kv))
    torch.autograd.gradcheck(lambda a, b: _NeighbourSum.apply(a, b, idx), (w, kv))
