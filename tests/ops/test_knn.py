import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from pointabstract.ops import backends, knn, knn_naive
from tests.helpers import cloud

EXACT = ["numba", "torch"]
LIBRARIES = [b for b in backends()["knn"] if b not in EXACT]


@pytest.mark.parametrize("backend", EXACT)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("batch", [1, 3])
@pytest.mark.parametrize("n", [1, 7, 64, 1000])
def test_self_knn_matches_naive_over_grid(backend, dtype, batch, n):
    pos = cloud(batch, n, dtype=dtype, seed=n)
    for k in sorted({1, min(n, 5), min(n, 20), n if n <= 64 else 1}):
        d, i = knn(pos, pos, k, backend=backend)
        d_ref, i_ref = knn_naive(pos, pos, k)
        assert d.shape == i.shape == (batch, n, k) and d.dtype == dtype and i.dtype == torch.int64
        assert torch.equal(i, i_ref)
        assert torch.equal(d, d_ref)


@pytest.mark.parametrize("backend", EXACT)
@pytest.mark.parametrize("m", [1, 33, 500])
def test_query_differs_from_ref(backend, m):
    query, ref = cloud(3, m, seed=1), cloud(3, 700, seed=2)
    d, i = knn(query, ref, 16, backend=backend)
    d_ref, i_ref = knn_naive(query, ref, 16)
    assert torch.equal(i, i_ref) and torch.equal(d, d_ref)


@pytest.mark.parametrize("backend", EXACT + LIBRARIES)
def test_lengths_pad_missing_neighbours(backend):
    query, ref = cloud(3, 40, seed=3), cloud(3, 30, seed=4)
    qlen, rlen = torch.tensor([40, 10, 1]), torch.tensor([30, 4, 12])
    d, i = knn(query, ref, 6, query_lengths=qlen, ref_lengths=rlen, backend=backend)
    d_ref, i_ref = knn_naive(query, ref, 6, query_lengths=qlen, ref_lengths=rlen)
    assert torch.equal(i, i_ref) and torch.equal(d, d_ref)
    assert (i[1, :10, 4:] == -1).all() and torch.isinf(d[1, :10, 4:]).all()  # cloud 1: 4 refs
    assert (i[1, 10:] == -1).all() and (i[2, 1:] == -1).all()  # rows past query_lengths


@pytest.mark.parametrize("backend", LIBRARIES)
def test_library_backends_match_naive(backend):
    query, ref = cloud(2, 200, seed=5), cloud(2, 300, seed=6)
    d, i = knn(query, ref, 10, backend=backend)
    d_ref, i_ref = knn_naive(query, ref, 10)
    assert torch.equal(i, i_ref) and torch.equal(d, d_ref)


@pytest.mark.parametrize("backend", ["numba", "torch"])
@pytest.mark.parametrize("channels", [1, 2, 16, 128])
def test_feature_space(backend, channels):
    feats = cloud(2, 256, channels, seed=channels)
    d, i = knn(feats, feats, 12, backend=backend)
    d_ref, i_ref = knn_naive(feats, feats, 12)
    torch.testing.assert_close(d, d_ref, rtol=1e-5, atol=1e-6)
    # indices agree except, possibly, between neighbours whose distances tie within rounding
    gap = (d_ref[..., 1:] - d_ref[..., :-1]).abs().min()
    if gap > 1e-4:
        assert torch.equal(i, i_ref)
    else:
        assert (i == i_ref).float().mean() > 0.999


def test_torch_backend_is_exact_on_a_lattice_full_of_ties():
    # integer coordinates: many neighbours tie exactly at the k-th distance, and more points
    # than candidates, so the (distance, index) order must survive the candidate selection
    g = torch.stack(torch.meshgrid(*[torch.arange(12.0)] * 3, indexing="ij"), -1).reshape(1, -1, 3)
    pos = torch.cat([g, g.flip(1)])
    for k in (1, 6, 7, 8, 19, 27):  # k = 8 cuts through 12 ties: redone by brute force
        d, i = knn(pos, pos, k, backend="torch")
        d_ref, i_ref = knn_naive(pos, pos, k)
        assert torch.equal(i, i_ref) and torch.equal(d, d_ref)


def test_torch_backend_redoes_queries_it_cannot_prove():
    # far from the origin the matmul distances lose most digits in float32: the rounding
    # bound then fails for most queries and they are redone by brute force
    pos = cloud(2, 600, seed=11) * 1e-3 + 300.0
    d, i = knn(pos, pos, 8, backend="torch")
    d_ref, i_ref = knn_naive(pos, pos, 8)
    assert torch.equal(i, i_ref) and torch.equal(d, d_ref)


@pytest.mark.parametrize("precision", ["high", "medium"])
def test_torch_backend_stays_exact_with_reduced_matmul_precision(precision):
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision(precision)
    try:
        feats = cloud(2, 400, 32, seed=12)
        d, i = knn(feats, feats, 10, backend="torch")
    finally:
        torch.set_float32_matmul_precision(before)
    d_ref, i_ref = knn_naive(feats, feats, 10)
    assert torch.equal(i, i_ref) and torch.equal(d, d_ref)


def test_torch_backend_is_exact_in_feature_space():
    feats = cloud(3, 700, 64, seed=13)
    d, i = knn(feats[:, :300], feats, 40, backend="torch")
    d_ref, i_ref = knn_naive(feats[:, :300], feats, 40)
    assert torch.equal(i, i_ref) and torch.equal(d, d_ref)


def test_hand_computed_line():
    # points at x = 0, 1, 3, 6; query x = 2.5: neighbours 3 (0.25), 1 (2.25), 0 (6.25)
    ref = torch.tensor([[[0.0, 0, 0], [1, 0, 0], [3, 0, 0], [6, 0, 0]]])
    query = torch.tensor([[[2.5, 0, 0]]])
    d, i = knn(query, ref, 3)
    assert i.tolist() == [[[2, 1, 0]]]
    assert d.tolist() == [[[0.25, 2.25, 6.25]]]


@pytest.mark.parametrize("backend", ["numba", "torch", "pykdtree"])
def test_ties_and_duplicates(backend):
    # the query sits at equal distance from refs 1 and 2; duplicates 0 and 3 coincide
    ref = torch.tensor([[[5.0, 0, 0], [1, 0, 0], [-1, 0, 0], [5, 0, 0]]], dtype=torch.float64)
    d, i = knn(torch.zeros(1, 1, 3, dtype=torch.float64), ref, 4, backend=backend)
    assert i.tolist() == [[[1, 2, 0, 3]]] and d.tolist() == [[[1.0, 1.0, 25.0, 25.0]]]


def test_self_query_detection_does_not_change_answers():
    pos = cloud(2, 300, seed=8)
    d1, i1 = knn(pos, pos, 9)
    d2, i2 = knn(pos, pos.clone(), 9)
    assert torch.equal(i1, i2) and torch.equal(d1, d2)
    assert (i1[..., 0] == torch.arange(300)).all()


def test_distances_are_differentiable():
    query = cloud(1, 6, dtype=torch.float64, seed=1).requires_grad_()
    ref = cloud(1, 9, dtype=torch.float64, seed=2).requires_grad_()
    torch.autograd.gradcheck(lambda q, r: knn(q, r, 3)[0], (query, ref))


@given(st.integers(1, 60), st.integers(1, 60), st.integers(0, 2**31 - 1), st.data())
def test_property_sorted_and_equal_to_brute_force(m, n, seed, data):
    k = data.draw(st.integers(1, n))
    query, ref = cloud(2, m, seed=seed), cloud(2, n, seed=seed + 1)
    d, i = knn(query, ref, k)
    assert (d[..., 1:] >= d[..., :-1]).all()
    brute = torch.cdist(query.double(), ref.double()) ** 2
    expected = brute.sort(-1).values[..., :k]
    torch.testing.assert_close(d.double(), expected, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(torch.gather(brute, -1, i), d.double(), rtol=1e-5, atol=1e-6)


def test_agrees_with_torch_cluster():
    torch_cluster = pytest.importorskip("torch_cluster")
    pos = cloud(1, 500, seed=3)
    row, col = torch_cluster.knn(pos[0], pos[0], 8)
    _, i = knn(pos, pos, 8)
    assert torch.equal(torch.sort(col.view(500, 8), -1).values, torch.sort(i[0], -1).values)


def test_real_scannet_scene_matches_reference(realdata):
    files = sorted((realdata / "scenes").glob("*_xyzrgb.npy"))
    if not files:
        pytest.skip("no ScanNet scene in realdata/scenes")
    xyz = torch.from_numpy(np.load(files[0])[:, :3].copy()).float()[None]  # (1, 81k, 3)
    d, i = knn(xyz, xyz, 16)
    pick = torch.randperm(xyz.shape[1], generator=torch.Generator().manual_seed(0))[:400]
    d_ref, i_ref = knn_naive(xyz[:, pick], xyz, 16)
    assert torch.equal(d[:, pick], d_ref)
    assert torch.equal(i[:, pick], i_ref)
