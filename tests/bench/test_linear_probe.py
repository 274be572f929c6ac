import pytest
import torch

from pointabstract.bench.linear_probe import _augment, fit_linear_svc, probe_accuracy, svc_objective


def test_hand_computed_one_feature():
    # x = +-1 (already standardised), y = 1 / 0: by symmetry the intercept is 0 and
    # 1/2 w^2 + 2 C (1 - w)^2 is smallest at w = 4C / (1 + 4C)
    x, y = torch.tensor([[1.0], [-1.0]]), torch.tensor([1, 0])
    for c in (1.0, 0.25):
        svc = fit_linear_svc(x, y, c=c)
        w = 4 * c / (1 + 4 * c)
        torch.testing.assert_close(svc.weight, torch.tensor([[-w, 0.0], [w, 0.0]], dtype=torch.float64),
                                   atol=1e-6, rtol=0)
    assert svc.predict(torch.tensor([[3.0], [-0.1]])).tolist() == [1, 0]


def test_optimum_has_zero_gradient_and_separates_blobs():
    g = torch.Generator().manual_seed(0)
    centres = torch.eye(4, 6) * 10  # blobs 14 standard deviations apart
    y = torch.arange(4).repeat_interleave(30)
    x = centres[y] + torch.randn(120, 6, generator=g)
    svc = fit_linear_svc(x, y)
    w = svc.weight.clone().requires_grad_(True)
    xa = _augment((x.double() - svc.mean) / svc.scale)
    targets = torch.where(y.unsqueeze(1) == svc.classes, 1.0, -1.0).double()
    svc_objective(w, xa, targets, 1.0).backward()
    assert w.grad.abs().max() < 1e-4 * w.abs().max()  # the unique optimum of the convex objective
    assert probe_accuracy(x[::2], y[::2], x[1::2], y[1::2]) == 1.0
    # labels that are not 0..K-1 come back as themselves
    assert set(fit_linear_svc(x, y * 10 + 3).predict(x).tolist()) == {3, 13, 23, 33}


def test_bad_input():
    x, y = torch.zeros(4, 2), torch.tensor([0, 1, 0, 1])
    with pytest.raises(ValueError, match=r"x must be a \(S, F\) float tensor, got torch.Size\(\[4\]\)"):
        fit_linear_svc(torch.zeros(4), y)
    with pytest.raises(ValueError, match="y must be a .* integer tensor matching x's 4 rows"):
        fit_linear_svc(x, y.float())
    with pytest.raises(ValueError, match="x contains NaN"):
        fit_linear_svc(torch.full((4, 2), float("nan")), y)
    with pytest.raises(ValueError, match=r"y must hold at least two classes, got \[0\]"):
        fit_linear_svc(x, torch.zeros(4, dtype=torch.int64))
    with pytest.raises(ValueError, match="c must be a positive finite number, got 0.0"):
        fit_linear_svc(x, y, c=0)
