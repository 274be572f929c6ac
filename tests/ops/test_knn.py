import time

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from pointabstract.ops import knn, knn_naive
from tests.fixtures import cloud, degenerate_cloud, over_shape_grid, split_backends

EXACT, LIBRARIES = split_backends("knn")


@pytest.mark.parametrize("backend", EXACT)
@over_shape_grid
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
    # channels may be summed in another order than the reference's (C > 3): distances agree
    # to rounding, and indices too unless two distances tie within that rounding
    torch.testing.assert_close(d, d_ref, rtol=1e-5, atol=1e-6)
    gap = (d_ref[..., 1:] - d_ref[..., :-1]).abs().min()
    if gap > 1e-4:
        assert torch.equal(i, i_ref)
    else:
        assert (i == i_ref).float().mean() > 0.999


@pytest.mark.parametrize("backend", ["numba", "torch"])
@pytest.mark.parametrize("channels", [2, 16, 64])
@pytest.mark.parametrize("offset", [0.0, 2.0**20])
def test_feature_space_is_exact_with_ties_and_large_magnitudes(backend, channels, offset):
    # small integers (plus a large offset): every distance is an exact integer whatever the
    # summation order, so results must equal the reference bit for bit, ties to the lowest
    # index. With the offset, |q|^2 + |r|^2 - 2 q.r loses all its digits in float32 (error
    # ~C * 2^16 against distances of at most C * 9): a search that trusts it is wrong.
    g = torch.Generator().manual_seed(channels)
    feats = torch.randint(0, 4, (2, 300, channels), generator=g).float() + offset
    d, i = knn(feats[:, :120], feats, 10, backend=backend)
    d_ref, i_ref = knn_naive(feats[:, :120], feats, 10)
    assert torch.equal(i, i_ref) and torch.equal(d, d_ref)


@pytest.mark.parametrize("backend", ["numba", "torch"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_feature_space_near_ties_are_resolved_exactly(backend, dtype):
    # every ref point at distance 1 or one ulp above it from a query far from the origin:
    # the matmul distances cannot tell them apart, the exact check must
    query = torch.full((1, 1, 8), 100.0, dtype=dtype)
    query[..., 0] = 0.0
    ref = query.expand(1, 400, 8).clone()
    ref[0, :, 0] = 1.0
    ref[0, ::3, 0] = 1.0 + torch.finfo(dtype).eps  # every third point one ulp farther
    d, i = knn(query, ref, 30, backend=backend)
    d_ref, i_ref = knn_naive(query, ref, 30)
    assert torch.equal(i, i_ref) and torch.equal(d, d_ref)
    assert (d == 1).all() and (i % 3 != 0).all()


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


@pytest.mark.parametrize("backend", EXACT)
def test_exact_under_bf16_autocast(backend):
    """Autocast (the trainer's amp on CUDA) must not lower the distance matmul to bfloat16: the
    candidates' rounding bound assumes the input dtype (before: the numba path failed on a
    bfloat16 array, the torch path ranked with bfloat16 distances)."""
    feats = cloud(2, 300, 32, seed=14) + 3.0
    with torch.autocast("cpu", dtype=torch.bfloat16):
        d, i = knn(feats, feats, 10, backend=backend)
    d_ref, i_ref = knn(feats, feats, 10, backend=backend)  # feature space: a few ulps from knn_naive's
    assert torch.equal(i, knn_naive(feats, feats, 10)[1])
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


def test_identical_points_are_fast_and_tie_to_the_lowest_indices():
    # 20k identical points: every distance ties, the neighbours are indices 0..k-1. The KD-tree
    # used to visit every leaf for every query (O(N^2): about 0.5 s here, 11 s at 100k)
    pos = torch.full((1, 20_000, 3), -3.5)
    knn(pos[:, :100], pos[:, :100], 4)  # compiled
    start = time.perf_counter()
    d, i = knn(pos, pos, 16)
    elapsed = time.perf_counter() - start
    assert (i == torch.arange(16)).all() and (d == 0).all()
    assert elapsed < 0.25, f"{elapsed:.2f} s"


@pytest.mark.parametrize("backend", EXACT + LIBRARIES)
@pytest.mark.parametrize("kind", ["identical", "half duplicates", "few values", "lattice"])
def test_duplicate_heavy_clouds_match_naive(backend, kind):
    pos = degenerate_cloud(kind)
    query = torch.cat([pos[:, :100], cloud(2, 50, seed=9)], 1)  # members and outsiders
    for k in (1, 7, 50):
        d, i = knn(pos, pos, k, backend=backend)
        d_ref, i_ref = knn_naive(pos, pos, k)
        # libraries may pick other members of an exact tie (their distances are the same)
        assert torch.equal(d, d_ref) and (backend not in EXACT or torch.equal(i, i_ref))
        d, i = knn(query, pos, k, backend=backend)
        d_ref, i_ref = knn_naive(query, pos, k)
        assert torch.equal(d, d_ref) and (backend not in EXACT or torch.equal(i, i_ref))


@pytest.mark.parametrize("backend", EXACT + LIBRARIES)
@pytest.mark.parametrize("dtype,big", [(torch.float32, 1e20), (torch.float32, 1e37),
                                       (torch.float64, 1e160), (torch.float64, 1e300)])
def test_huge_coordinates_give_the_true_neighbours(backend, dtype, big):
    # squared distances overflow the dtype (used to give idx = -1 everywhere): such clouds are
    # ranked in (scaled) float64; dist2 is the true value rounded to the dtype (inf if too big)
    pos = cloud(3, 200, dtype=torch.float64, seed=5).to(dtype)
    pos[1] *= big
    pos[2, :100] *= big  # mixed: half huge, half ordinary
    d, i = knn(pos, pos, 8, backend=backend)
    d_ref, i_ref = knn_naive(pos, pos, 8)
    assert (i >= 0).all() and torch.equal(d, d_ref)
    if backend in EXACT:
        assert torch.equal(i, i_ref)
    truth = torch.cdist(pos[1].double() / big, pos[1].double() / big).topk(8, largest=False).indices
    assert (i[1].sort(-1).values == truth.sort(-1).values).float().mean() > 0.99
    torch.testing.assert_close(d[0], knn(pos[:1], pos[:1], 8, backend=backend)[0][0])


def test_numpy_integer_k():
    pos = cloud(2, 50, seed=6)
    d, i = knn(pos, pos, np.int64(5))
    assert i.shape == (2, 50, 5)
    with pytest.raises(TypeError, match="k must be an int, got bool"):
        knn(pos, pos, np.bool_(True))
