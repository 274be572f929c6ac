import pytest
import torch

from pointabstract.ops import gather_points, knn_interpolate, nearest_upsample
from tests.fixtures import cloud


def test_gather_by_hand():
    x = torch.arange(12.0).view(2, 3, 2)  # cloud 0 rows (0,1) (2,3) (4,5); cloud 1 (6,7)...
    idx = torch.tensor([[2, 0], [1, -1]])
    assert gather_points(x, idx).tolist() == [[[4, 5], [0, 1]], [[8, 9], [0, 0]]]


def test_gather_knn_shaped_indices():
    x = cloud(3, 20, 5, seed=1)
    idx = torch.randint(0, 20, (3, 7, 4), generator=torch.Generator().manual_seed(0))
    out = gather_points(x, idx)
    assert out.shape == (3, 7, 4, 5)
    for b in range(3):
        assert torch.equal(out[b], x[b][idx[b]])


def test_gather_gradcheck():
    x = cloud(2, 6, 3, dtype=torch.float64, seed=2).requires_grad_()
    idx = torch.tensor([[0, 0, 5, -1], [3, 2, 2, 1]])  # repeats accumulate gradient
    torch.autograd.gradcheck(lambda t: gather_points(t, idx), (x,))


def test_gather_bad_indices():
    x = cloud(2, 6, 3)
    with pytest.raises(ValueError, match=r"idx values must lie in \[-1, 5\], got values in \[0, 6\]"):
        gather_points(x, torch.tensor([[0, 6], [1, 2]]))
    with pytest.raises(TypeError, match="idx must have dtype int64, got torch.int32"):
        gather_points(x, torch.zeros(2, 2, dtype=torch.int32))
    with pytest.raises(ValueError, match="idx must have shape"):
        gather_points(x, torch.zeros(3, 2, dtype=torch.int64))


def test_knn_interpolate_matches_formula():
    pos_x, pos_y = cloud(2, 30, seed=3), cloud(2, 50, seed=4)
    x = cloud(2, 30, 8, seed=5)
    got = knn_interpolate(x, pos_x, pos_y, k=3)
    for b in range(2):
        d2 = torch.cdist(pos_y[b].double(), pos_x[b].double()) ** 2
        near = d2.topk(3, largest=False)
        w = 1 / near.values.clamp(min=1e-16)
        want = (x[b][near.indices].double() * w[..., None]).sum(1) / w.sum(1, keepdim=True)
        torch.testing.assert_close(got[b].double(), want, rtol=1e-4, atol=1e-5)


def test_knn_interpolate_copies_coincident_sources_and_is_differentiable():
    pos = cloud(1, 20, seed=6)
    x = cloud(1, 20, 4, dtype=torch.float64, seed=7).requires_grad_()
    torch.testing.assert_close(knn_interpolate(x, pos, pos), x)
    torch.autograd.gradcheck(lambda t: knn_interpolate(t, pos, cloud(1, 9, seed=8)), (x,))


def test_nearest_upsample():
    pos_x = torch.tensor([[[0.0, 0, 0], [10, 0, 0]]])
    pos_y = torch.tensor([[[1.0, 0, 0], [9, 0, 0], [5, 0, 0]]])  # 5 is a tie: lower index
    x = torch.tensor([[[1.0], [2.0]]])
    assert nearest_upsample(x, pos_x, pos_y).tolist() == [[[1.0], [2.0], [1.0]]]


def test_feature_shape_must_match_positions():
    with pytest.raises(ValueError, match="x must have shape"):
        nearest_upsample(cloud(1, 5, 4), cloud(1, 6), cloud(1, 3))


@pytest.mark.parametrize("threads", [1, 2])
def test_gather_backward_sums_repeats_like_index_add(threads):
    # the compiled scatter-add of the backward pass (ops/kernels/scatter_rows.py), parallel and
    # serial drivers, against torch's index_add_; large enough for the parallel driver
    old = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        gen = torch.Generator().manual_seed(7)
        x = torch.randn(3, 40, 33, dtype=torch.float64, generator=gen).requires_grad_()
        idx = torch.randint(-1, 40, (3, 300, 16), generator=gen)  # many repeats, some padding
        grad = torch.randn(3, 300, 16, 33, dtype=torch.float64, generator=gen)
        gather_points(x, idx).backward(grad)
    finally:
        torch.set_num_threads(old)
    flat = (idx.clamp(min=0) + torch.arange(3).view(3, 1, 1) * 40).reshape(-1)
    keep = (idx >= 0).reshape(-1, 1).to(grad.dtype)  # padded slots are zeroed in the forward
    ref = torch.zeros(120, 33, dtype=torch.float64).index_add_(0, flat, grad.reshape(-1, 33) * keep)
    torch.testing.assert_close(x.grad, ref.view(3, 40, 33), rtol=1e-12, atol=1e-12)
