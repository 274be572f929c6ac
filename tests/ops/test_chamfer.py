import time

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from pointabstract.ops import chamfer_distance, chamfer_distance_naive
from tests.fixtures import cloud, degenerate_cloud


@pytest.mark.parametrize("squared", [True, False])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("batch,n,m", [(1, 1, 1), (3, 7, 64), (3, 1000, 700)])
def test_matches_naive(squared, dtype, batch, n, m):
    x, y = cloud(batch, n, dtype=dtype, seed=n), cloud(batch, m, dtype=dtype, seed=m + 1)
    got = chamfer_distance(x, y, squared=squared, batch_reduction=None)
    torch.testing.assert_close(got, chamfer_distance_naive(x, y, squared=squared))
    torch.testing.assert_close(chamfer_distance(x, y, squared=squared), got.mean())


def test_hand_computed():
    # x = {0, 2} on a line, y = {1}: x->y mean of (1, 1) = 1; y->x min(1, 1) = 1; total 2
    x = torch.tensor([[[0.0, 0, 0], [2, 0, 0]]])
    y = torch.tensor([[[1.0, 0, 0]]])
    assert chamfer_distance(x, y).item() == 2.0
    assert chamfer_distance(x, y, single_directional=True).item() == 1.0
    assert chamfer_distance(x, y, point_reduction="sum").item() == 3.0
    x2 = torch.tensor([[[0.0, 0, 0], [4, 0, 0]]])  # distances 1 and 3: squared 1, 9
    assert chamfer_distance(x2, y, squared=False, single_directional=True).item() == 2.0
    assert chamfer_distance(x2, y, single_directional=True).item() == 5.0


def test_reductions_and_per_point_output():
    x, y = cloud(4, 30, seed=1), cloud(4, 20, seed=2)
    per_point = chamfer_distance(x, y, point_reduction=None, batch_reduction=None)
    assert per_point[0].shape == (4, 30) and per_point[1].shape == (4, 20)
    per_cloud = chamfer_distance(x, y, batch_reduction=None)
    torch.testing.assert_close(per_cloud, per_point[0].mean(1) + per_point[1].mean(1))
    torch.testing.assert_close(chamfer_distance(x, y, batch_reduction="sum"), per_cloud.sum())
    only_x = chamfer_distance(x, y, point_reduction=None, batch_reduction=None,
                              single_directional=True)
    torch.testing.assert_close(only_x, per_point[0])
    with pytest.raises(ValueError, match="batch_reduction must be None"):
        chamfer_distance(x, y, point_reduction=None)


def test_lengths_equal_truncated_clouds():
    x, y = cloud(2, 50, seed=3), cloud(2, 40, seed=4)
    xl, yl = torch.tensor([50, 17]), torch.tensor([9, 40])
    got = chamfer_distance(x, y, x_lengths=xl, y_lengths=yl, batch_reduction=None)
    for b in range(2):
        want = chamfer_distance(x[b : b + 1, : xl[b]], y[b : b + 1, : yl[b]])
        torch.testing.assert_close(got[b], want)


def test_gradcheck():
    x = cloud(2, 8, dtype=torch.float64, seed=5).requires_grad_()
    y = cloud(2, 6, dtype=torch.float64, seed=6).requires_grad_()
    torch.autograd.gradcheck(lambda a, b: chamfer_distance(a, b), (x, y))
    torch.autograd.gradcheck(lambda a, b: chamfer_distance(a, b, squared=False), (x, y))


@pytest.mark.parametrize("squared", [True, False])
def test_gradient_is_finite_and_zero_at_zero_distance(squared):
    x = cloud(2, 16, seed=7).requires_grad_()
    y = x.detach().clone().requires_grad_()
    loss = chamfer_distance(x, y, squared=squared)
    loss.backward()
    assert loss.item() == 0.0
    assert torch.isfinite(x.grad).all() and (x.grad == 0).all() and (y.grad == 0).all()


def test_gradient_matches_dense_reference():
    x = cloud(2, 40, dtype=torch.float64, seed=8).requires_grad_()
    y = cloud(2, 30, dtype=torch.float64, seed=9).requires_grad_()
    chamfer_distance(x, y).backward()
    gx, gy = x.grad.clone(), y.grad.clone()
    x.grad = y.grad = None
    chamfer_distance_naive(x, y).mean().backward()
    torch.testing.assert_close(gx, x.grad)
    torch.testing.assert_close(gy, y.grad)


@given(st.integers(1, 30), st.integers(1, 30), st.integers(0, 2**31 - 1))
def test_properties_symmetric_zero_on_self_order_invariant(n, m, seed):
    x, y = cloud(2, n, seed=seed), cloud(2, m, seed=seed + 1)
    torch.testing.assert_close(chamfer_distance(x, y), chamfer_distance(y, x))
    assert chamfer_distance(x, x).item() == 0.0
    g = torch.Generator().manual_seed(seed)
    px, py = torch.randperm(n, generator=g), torch.randperm(m, generator=g)
    torch.testing.assert_close(chamfer_distance(x[:, px], y[:, py]), chamfer_distance(x, y))


def test_empty_clouds_are_refused():
    with pytest.raises(ValueError, match="x must hold at least one cloud of at least one point"):
        chamfer_distance(torch.zeros(1, 0, 3), cloud(1, 4))
    with pytest.raises(ValueError, match=r"y_lengths must lie in \[1, 4\]"):
        chamfer_distance(cloud(1, 4), cloud(1, 4), y_lengths=torch.tensor([0]))


def test_identical_points_are_fast():
    # 20k identical points in each cloud: the nearest-neighbour search used to visit every
    # point for every query (about 1 s here, 19 s at 100k)
    x = torch.full((1, 20_000, 3), 0.5)
    chamfer_distance(x[:, :100], x[:, :50])  # compiled
    start = time.perf_counter()
    d = chamfer_distance(x, x + 1.0)
    elapsed = time.perf_counter() - start
    assert float(d) == 6.0
    assert elapsed < 0.5, f"{elapsed:.2f} s"


def test_half_duplicates_match_naive():
    x, y = degenerate_cloud("half duplicates", seed=1), degenerate_cloud("few values", seed=2)
    torch.testing.assert_close(chamfer_distance(x, y, batch_reduction=None),
                               chamfer_distance_naive(x, y))


@pytest.mark.parametrize("flag", ["squared", "single_directional"])
def test_flags_must_be_bools(flag):
    x = torch.rand(1, 4, 3)
    # the string "False" is truthy: it used to select the squared / one-directional distance
    with pytest.raises(TypeError, match=rf"{flag} must be True or False, got str 'False'"):
        chamfer_distance(x, x, **{flag: "False"})
