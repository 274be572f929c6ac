import pytest
import torch

from pointabstract.nn import MultiHeadSelfAttention, attend, attend_naive
from tests.fixtures import cloud


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


# ---- padded neighbours, both paths, against the loop reference -------------------------------

@pytest.fixture(params=["fused", "plain"])
def path(request, monkeypatch):
    """Force one of attend's two neighbour paths (compiled CPU products or gather)."""
    from pointabstract.nn import attention
    from pointabstract.ops import kernels

    if request.param == "fused":
        if not kernels.AVAILABLE:
            pytest.skip("numba kernels unavailable")
        monkeypatch.setattr(attention, "_fused_ok", lambda *a: True)
    else:
        monkeypatch.setattr(attention, "_fused_ok", lambda *a: False)
    return request.param


def _padded_inputs(seed=0, *, b=2, m=6, n=9, k=5, heads=2, dim=3):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(b, m, heads, dim, generator=g, dtype=torch.float64, requires_grad=True)
    kv = torch.randn(b, n, 2 * heads * dim, generator=g, dtype=torch.float64, requires_grad=True)
    idx = torch.randint(0, n, (b, m, k), generator=g)
    idx[torch.rand(b, m, k, generator=g) < 0.35] = -1  # about a third of the slots padded
    idx[0, 1] = -1  # a query with no neighbour at all
    idx[1, 2, :-1] = -1  # a query with one
    return q, kv, idx


@pytest.mark.parametrize("normalize", ["inputs", "centroids"])
def test_padded_neighbours_match_the_naive_reference(path, normalize):
    q, kv, idx = _padded_inputs()
    out, w = attend(q, kv, idx, normalize=normalize)
    ref_out, ref_w = attend_naive(q, kv, idx, normalize=normalize)
    torch.testing.assert_close(out, ref_out)
    torch.testing.assert_close(w, ref_w)
    assert (w[idx < 0] == 0).all()
    g = torch.randn_like(out)
    grads = torch.autograd.grad((out * g).sum() + w.square().sum(), (q, kv))
    ref_grads = torch.autograd.grad((ref_out * g).sum() + ref_w.square().sum(), (q, kv))
    for a, b in zip(grads, ref_grads):
        torch.testing.assert_close(a, b)


@pytest.mark.parametrize("normalize", ["inputs", "centroids"])
def test_padding_is_not_the_last_row(path, normalize):
    # numba wraps idx = -1 around to row N - 1: a huge last row must change nothing
    q, kv, idx = _padded_inputs(1)
    with torch.no_grad():
        loud = kv.clone()
        loud[:, -1] = 1e3
    keep = idx != kv.shape[1] - 1
    idx = idx.where(keep, -1)  # no real neighbour is the last row
    torch.testing.assert_close(attend(q, loud, idx, normalize=normalize),
                               attend(q, kv, idx, normalize=normalize))


@pytest.mark.parametrize("normalize", ["inputs", "centroids"])
@pytest.mark.filterwarnings("ignore:Anomaly Detection has been enabled")
def test_a_query_with_only_padding_gets_a_zero_update_and_no_nan(path, normalize):
    q, kv, idx = _padded_inputs(2)
    idx[:, 0] = -1
    with torch.autograd.detect_anomaly():  # raises on a NaN anywhere in the backward pass
        out, w = attend(q, kv, idx, normalize=normalize)
        (out.sum() + w.sum()).backward()
    assert (out[:, 0] == 0).all() and (w[:, 0] == 0).all()
    assert torch.isfinite(out).all() and torch.isfinite(q.grad).all() and torch.isfinite(kv.grad).all()
    assert (q.grad[:, 0] == 0).all()  # a query that sees nothing learns nothing


@pytest.mark.parametrize("normalize", ["inputs", "centroids"])
def test_unpadded_and_dense_match_the_naive_reference(path, normalize):
    torch.manual_seed(0)
    q, kv = torch.randn(2, 5, 2, 3, dtype=torch.float64), torch.randn(2, 7, 12, dtype=torch.float64)
    idx = torch.randint(0, 7, (2, 5, 4))
    for i in (idx, None):
        out, w = attend(q, kv, i, normalize=normalize)
        ref_out, ref_w = attend_naive(q, kv, i, normalize=normalize)
        torch.testing.assert_close(out, ref_out)
        torch.testing.assert_close(w, ref_w)


def test_hand_computed_padded_case(path):
    # one query, D = 1 (scale 1), keys 0 and ln 3 -> weights 1/4 and 3/4; values 4 and 8
    q = torch.ones(1, 1, 1, 1)
    kv = torch.tensor([[[0.0, 4.0], [3.0, 100.0], [float(torch.tensor(3.0).log()), 8.0]]])
    out, w = attend(q, kv, torch.tensor([[[0, -1, 2]]]))
    torch.testing.assert_close(w.flatten(), torch.tensor([0.25, 0.0, 0.75]))
    torch.testing.assert_close(out.flatten(), torch.tensor([7.0]))


def test_fused_products_gradcheck_with_padding():
    from pointabstract.nn.attention import _NeighbourDot, _NeighbourSum

    torch.manual_seed(0)
    q = torch.randn(2, 5, 2, 3, dtype=torch.float64, requires_grad=True)
    kv = torch.randn(2, 6, 12, dtype=torch.float64, requires_grad=True)
    w = torch.randn(2, 5, 4, 2, dtype=torch.float64, requires_grad=True)
    idx = torch.randint(-1, 6, (2, 5, 4))
    assert (idx < 0).any()
    assert (_NeighbourDot.apply(q, kv, idx)[idx < 0] == 0).all()
    torch.autograd.gradcheck(lambda a, b: _NeighbourDot.apply(a, b, idx), (q, kv))
    torch.autograd.gradcheck(lambda a, b: _NeighbourSum.apply(a, b, idx), (w, kv))


def test_attend_bad_arguments():
    q, kv, idx = torch.randn(2, 3, 2, 4), torch.randn(2, 5, 16), torch.zeros(2, 3, 2, dtype=torch.int64)
    with pytest.raises(ValueError, match=r"normalize must be one of \['inputs', 'centroids'\], got 'centroid'"):
        attend(q, kv, idx, normalize="centroid")
    with pytest.raises(ValueError, match=r"q must have shape \(B, M, H, D\), got \(2, 3, 8\)"):
        attend(q.flatten(2), kv, idx)
    with pytest.raises(ValueError, match=r"kv must have shape \(B, N, 2 H D\) = \(2, N, 16\), got \(2, 5, 8\)"):
        attend(q, kv[..., :8], idx)
    with pytest.raises(TypeError, match="kv must be a torch.Tensor, got list"):
        attend(q, [[0.0]], idx)
    with pytest.raises(TypeError, match="idx must be a torch.Tensor, got list"):
        attend(q, kv, [[[0]]])
    with pytest.raises(TypeError, match="idx must have dtype int64, got torch.int32"):
        attend(q, kv, idx.int())
    with pytest.raises(ValueError, match=r"idx must have shape \(B, M, K\) = \(2, 3, K\), got \(2, 4, 2\)"):
        attend(q, kv, torch.zeros(2, 4, 2, dtype=torch.int64))
    with pytest.raises(ValueError, match=r"idx values must lie in \[-1, 4\] \(-1: padding\), got values in \[0, 5\]"):
        attend(q, kv, idx + 5 * (torch.arange(2) == 1).view(2, 1, 1))
    with pytest.raises(ValueError, match=r"got values in \[-2, 0\]"):
        attend(q, kv, idx - 2 * (torch.arange(2) == 1).view(2, 1, 1))


# ---- dense attention: one function, SDPA when no weights are asked for -----------------------

@pytest.mark.parametrize("normalize", ["inputs", "centroids"])
def test_dense_attention_without_weights_matches_the_naive_reference(normalize):
    torch.manual_seed(0)
    q = torch.randn(2, 5, 2, 3, dtype=torch.float64, requires_grad=True)
    kv = torch.randn(2, 7, 12, dtype=torch.float64, requires_grad=True)
    out, w = attend(q, kv, normalize=normalize, need_weights=False)
    ref_out, _ = attend_naive(q, kv, normalize=normalize)
    assert w is None
    torch.testing.assert_close(out, ref_out)
    g = torch.randn_like(out)
    grads = torch.autograd.grad((out * g).sum(), (q, kv))
    ref_grads = torch.autograd.grad((ref_out * g).sum(), (q, kv))
    for a, b in zip(grads, ref_grads):
        torch.testing.assert_close(a, b)


def test_dense_attention_runs_sdpa_exactly_when_no_weights_are_needed(monkeypatch):
    from pointabstract.nn import attention

    calls = []
    sdpa = attention.F.scaled_dot_product_attention
    monkeypatch.setattr(attention.F, "scaled_dot_product_attention",
                        lambda *a, **k: calls.append(1) or sdpa(*a, **k))
    q, kv = torch.randn(1, 3, 2, 4), torch.randn(1, 6, 16)
    attend(q, kv, need_weights=False)
    assert len(calls) == 1
    attend(q, kv)  # weights asked for: the einsum path, which forms them
    attend(q, kv, normalize="centroids", need_weights=False)  # per-input softmax: not SDPA's
    attend(q, kv, torch.zeros(1, 3, 2, dtype=torch.int64), need_weights=False)  # neighbours
    assert len(calls) == 1


def test_knn_attention_without_weights_returns_none_and_the_same_output(path):
    q, kv, idx = _padded_inputs(3)
    out, w = attend(q, kv, idx, need_weights=False)
    ref_out, _ = attend(q, kv, idx)
    assert w is None
    torch.testing.assert_close(out, ref_out)


def test_self_attention_forward_with_and_without_weights_agree():
    torch.manual_seed(0)
    attn = MultiHeadSelfAttention(8, heads=2, k=None)
    x = cloud(2, 12, 8, seed=5)
    out, info = attn(x, return_attention=True)
    assert info["idx"] is None and info["weights"].shape == (2, 12, 12, 2)
    torch.testing.assert_close(attn(x), out)


def test_need_weights_must_be_a_bool():
    with pytest.raises(TypeError, match="need_weights must be a bool, got int"):
        attend(torch.randn(1, 2, 1, 2), torch.randn(1, 3, 4), need_weights=1)
