import time

import numpy as np
import pytest
import torch

from pointabstract.ops import backends, ball_query, ball_query_naive
from tests.fixtures import cloud, degenerate_cloud, over_shape_grid

BACKENDS = backends()["ball_query"]


@pytest.mark.parametrize("backend", BACKENDS)
@over_shape_grid
def test_matches_naive_over_grid(backend, dtype, batch, n):
    ref = cloud(batch, n, dtype=dtype, seed=n)
    query = ref[:, : max(1, n // 4)].clone()
    for radius, k in [(0.2, 8), (0.5, 32), (3.0, n)]:
        d, i = ball_query(query, ref, radius, min(k, n), pad="invalid", backend=backend)
        d_ref, i_ref = ball_query_naive(query, ref, radius, min(k, n))
        assert torch.equal(i, i_ref) and torch.equal(d, d_ref)


@pytest.mark.parametrize("backend", BACKENDS)
def test_self_query_and_lengths(backend):
    pos = cloud(2, 300, seed=1)
    lengths = torch.tensor([300, 120])
    d, i = ball_query(pos, pos, 0.3, 16, query_lengths=lengths, ref_lengths=lengths,
                      pad="invalid", backend=backend)
    d_ref, i_ref = ball_query_naive(pos, pos, 0.3, 16, query_lengths=lengths, ref_lengths=lengths)
    assert torch.equal(i, i_ref) and torch.equal(d, d_ref)
    assert (i[1, 120:] == -1).all() and (i[1] < 120).all()


def test_hand_computed_index_order_and_padding():
    # points at x = 0, 0.5, 3, 0.2, 0.9; ball of radius 1 around x = 0 holds 0, 1, 3, 4
    ref = torch.tensor([[[0.0, 0, 0], [0.5, 0, 0], [3, 0, 0], [0.2, 0, 0], [0.9, 0, 0]]])
    query = torch.zeros(1, 1, 3)
    d, i = ball_query(query, ref, 1.0, 3)
    assert i.tolist() == [[[0, 1, 3]]]  # lowest indices, in index order, not by distance
    torch.testing.assert_close(d, torch.tensor([[[0.0, 0.25, 0.04]]]))
    d, i = ball_query(query, ref, 0.3, 4)  # only 0 and 3 inside
    assert i.tolist() == [[[0, 3, 0, 0]]]  # pad="first" repeats the first neighbour
    d, i = ball_query(query, ref, 0.3, 4, pad="invalid")
    assert i.tolist() == [[[0, 3, -1, -1]]] and torch.isinf(d[0, 0, 2:]).all()


def test_radius_boundary_is_inclusive_in_the_input_dtype():
    ref = torch.tensor([[[1.0, 0, 0], [0, 2, 0]]])
    _, i = ball_query(torch.zeros(1, 1, 3), ref, 1.0, 2, pad="invalid")
    assert i.tolist() == [[[0, -1]]]


def test_query_with_empty_ball_is_invalid_in_both_modes():
    ref = torch.zeros(1, 4, 3)
    query = torch.full((1, 1, 3), 5.0)
    for pad in ("first", "invalid"):
        d, i = ball_query(query, ref, 0.5, 3, pad=pad)
        assert (i == -1).all() and torch.isinf(d).all()


@pytest.mark.parametrize("radius", [0, -1.0, float("nan"), float("inf"), np.float32(-0.5)])
def test_bad_radius(radius):
    with pytest.raises(ValueError, match="radius must be a positive finite number"):
        ball_query(cloud(1, 5), cloud(1, 5), radius, 2)


@pytest.mark.parametrize("radius", ["1", True, np.bool_(True), torch.tensor(0.5), None])
def test_radius_of_the_wrong_type(radius):
    with pytest.raises(TypeError, match="radius must be a real number, got "):
        ball_query(cloud(1, 5), cloud(1, 5), radius, 2)


@pytest.mark.parametrize("radius", [np.float32(0.4), np.float64(0.4), np.float16(0.4)])
def test_numpy_radius_is_the_same_number(radius):
    pos = cloud(2, 200, seed=3)
    d, i = ball_query(pos, pos, radius, np.int64(9), pad="invalid")
    d_ref, i_ref = ball_query_naive(pos, pos, float(radius), 9)
    assert torch.equal(i, i_ref) and torch.equal(d, d_ref)


def test_identical_points_are_fast_and_lowest_indices_first():
    # 20k identical points: every point is inside every ball and the answer is indices
    # 0..k-1; the KD-tree used to visit the whole cloud for every query (about 0.5 s here,
    # 11 s at 100k points), it now takes the first k and stops
    pos = torch.full((1, 20_000, 3), 0.25)
    ball_query(pos[:, :100], pos[:, :100], 0.1, 4, backend="numba")  # compiled
    start = time.perf_counter()
    d, i = ball_query(pos, pos, 0.1, 32, backend="numba")
    elapsed = time.perf_counter() - start
    assert (i == torch.arange(32)).all() and (d == 0).all()
    assert elapsed < 0.25, f"{elapsed:.2f} s"


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", ["half duplicates", "few values", "lattice"])
def test_duplicate_heavy_clouds_match_naive(backend, kind):
    pos = degenerate_cloud(kind)
    for radius, k in [(0.05, 4), (0.3, 40)]:
        d, i = ball_query(pos, pos, radius, k, pad="invalid", backend=backend)
        d_ref, i_ref = ball_query_naive(pos, pos, radius, k)
        assert torch.equal(i, i_ref) and torch.equal(d, d_ref)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_huge_coordinates_are_compared_without_overflow(backend, dtype):
    # squared distances of 1e20-scale (1e160 in float64) coordinates overflow the dtype: the
    # clouds are tested in (scaled) float64, so the balls still hold the right points
    big = 1e20 if dtype == torch.float32 else 1e160
    pos = cloud(2, 300, dtype=torch.float64, seed=4).to(dtype)
    pos[1] *= big  # cloud 0 stays ordinary
    radius = 0.3 * big
    d, i = ball_query(pos, pos, radius, 16, pad="invalid", backend=backend)
    d_ref, i_ref = ball_query_naive(pos, pos, radius, 16)
    assert torch.equal(i, i_ref) and torch.equal(d, d_ref)
    assert (i[1] >= 0).sum() > 300 and (i[1, :, 0] >= 0).all()
    true = torch.cdist(pos[1].double() / big, pos[1].double() / big)  # (N, N)
    found = i[1] >= 0
    assert (true.gather(1, i[1].clamp(min=0))[found] <= 0.3 * (1 + 1e-6)).all()  # none outside
    assert ((true <= 0.3 * (1 - 1e-6)).sum(1).clamp(max=16) <= found.sum(1)).all()  # all inside


def test_bad_pad():
    with pytest.raises(ValueError, match="pad must be one of"):
        ball_query(cloud(1, 5), cloud(1, 5), 0.1, 2, pad="zero")
