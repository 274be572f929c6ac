import math

import pytest
import torch

from pointabstract.ops import max_over, max_over_naive
from pointabstract.ops.kernels import _PARALLEL_FROM, AVAILABLE

needs_kernel = pytest.mark.skipif(not AVAILABLE, reason="numba kernels unavailable")


def _values_and_grad(fn, x, dim, grad):
    x = x.detach().clone().requires_grad_()
    out = fn(x, dim)
    out.backward(grad)
    return out.detach(), x.grad


def test_max_over_by_hand():
    # (1, 3, 2): column 0 peaks at k = 2, column 1 ties at k = 0 and k = 1 (the first index wins)
    x = torch.tensor([[[1.0, 5.0], [0.0, 5.0], [3.0, -1.0]]])
    out, grad = _values_and_grad(max_over, x, 1, torch.tensor([[10.0, 20.0]]))
    assert out.tolist() == [[3.0, 5.0]]
    assert grad.tolist() == [[[0.0, 20.0], [0.0, 0.0], [10.0, 0.0]]]


def test_max_over_nan_propagates_from_first_nan():
    x = torch.tensor([[[1.0], [math.nan], [7.0], [math.nan]]]).expand(1, 4, 3).contiguous()
    out, grad = _values_and_grad(max_over, x, 1, torch.ones(1, 3))
    assert torch.isnan(out).all()
    assert grad[0, :, 0].tolist() == [0.0, 1.0, 0.0, 0.0]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize(("shape", "dim"), [((4, 9, 5, 3), 2), ((3, 17, 6), 1), ((5, 4), 0),
                                            ((2, 3, 4), -2), ((6, 1, 4), 1), ((3, 5), 1)])
def test_max_over_equals_torch_max(shape, dim, dtype):
    gen = torch.Generator().manual_seed(sum(shape))
    x = torch.randn(shape, generator=gen, dtype=dtype).round(decimals=1)  # rounding makes ties
    grad = torch.randn(max_over_naive(x, dim).shape, generator=gen, dtype=dtype)
    out, gx = _values_and_grad(max_over, x, dim, grad)
    ref, gref = _values_and_grad(max_over_naive, x, dim, grad)
    assert torch.equal(out, ref) and torch.equal(gx, gref)


@needs_kernel
@pytest.mark.parametrize("threads", [1, 2])
def test_max_over_parallel_and_serial_drivers_agree(threads):
    old = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        x = torch.randn(64, 40, 33, generator=torch.Generator().manual_seed(3))  # above the threshold
        assert x.numel() > _PARALLEL_FROM
        grad = torch.randn(64, 33, generator=torch.Generator().manual_seed(4))
        out, gx = _values_and_grad(max_over, x, 1, grad)
        ref, gref = _values_and_grad(max_over_naive, x, 1, grad)
    finally:
        torch.set_num_threads(old)
    assert torch.equal(out, ref) and torch.equal(gx, gref)


def test_max_over_non_contiguous_and_other_dtypes():
    x = torch.randn(5, 6, 7, generator=torch.Generator().manual_seed(5)).transpose(0, 2)  # (7, 6, 5)
    assert torch.equal(max_over(x, 1), x.max(1).values)
    half = x.to(torch.bfloat16)  # no kernel: torch.max
    assert torch.equal(max_over(half, 1), half.max(1).values)


def test_max_over_gradcheck():
    x = torch.randn(3, 4, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(6))
    torch.autograd.gradcheck(lambda t: max_over(t, 1), (x.requires_grad_(),))


def test_max_over_bad_input():
    with pytest.raises(TypeError, match="x must be a torch.Tensor, got list"):
        max_over([1.0, 2.0], 0)
    with pytest.raises(ValueError, match=r"dim must be an int in \[-3, 2\] \(x has 3 dimensions\), got 3"):
        max_over(torch.zeros(2, 3, 4), 3)
    with pytest.raises(ValueError, match="x has no entries along dim 1"):
        max_over(torch.zeros(2, 0, 4), 1)
