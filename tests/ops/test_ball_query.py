import pytest
import torch

from pointabstract.ops import backends, ball_query, ball_query_naive
from tests.helpers import cloud

BACKENDS = backends()["ball_query"]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("batch", [1, 3])
@pytest.mark.parametrize("n", [1, 7, 64, 1000])
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


@pytest.mark.parametrize("radius", [0, -1.0, float("nan"), float("inf"), "1", True])
def test_bad_radius(radius):
    with pytest.raises(ValueError, match="radius must be a positive finite number"):
        ball_query(cloud(1, 5), cloud(1, 5), radius, 2)


def test_bad_pad():
    with pytest.raises(ValueError, match="pad must be one of"):
        ball_query(cloud(1, 5), cloud(1, 5), 0.1, 2, pad="zero")
