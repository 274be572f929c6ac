"""A linear probe of frozen features: the linear SVM 3D-PointCapsNet trains on its latent
capsules, written in torch because scikit-learn is not a dependency of this package.

:func:`fit_linear_svc` solves the problem scikit-learn's ``LinearSVC()`` solves with its
defaults (liblinear, primal): one-vs-rest over the classes, the squared hinge loss and an L2
penalty, the intercept learned as the weight of a constant feature 1 that is penalised like
the others (liblinear's ``intercept_scaling=1``)::

    min_w  1/2 |w_k|^2 + C sum_i max(0, 1 - y_ik <w_k, [x_i, 1]>)^2,   y_ik = +1 if class k else -1

for every class k. The objective is strictly convex and once differentiable, so L-BFGS (float64,
strong Wolfe line search) reaches the same unique optimum liblinear's trust-region Newton does, up
to the tolerance. The features are standardised first (train mean / std), as is usual before a
linear SVM, so capsules of different scale (squashed or not) are probed alike. One difference
from ``LinearSVC`` on two classes: both one-vs-rest problems are solved (scikit-learn solves one),
which gives the same predictions for a symmetric problem and is documented, not hidden.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .. import _validate as V

__all__ = ["LinearSVC", "fit_linear_svc", "probe_accuracy"]


@dataclass
class LinearSVC:
    """A fitted one-vs-rest linear SVM over standardised features."""

    weight: torch.Tensor  # (K, F + 1) float64: per class, feature weights then the intercept
    mean: torch.Tensor  # (F,) train feature mean
    scale: torch.Tensor  # (F,) train feature std (1 where a feature is constant)
    classes: torch.Tensor  # (K,) int64 class labels, in the rows' order

    def decision(self, x: torch.Tensor) -> torch.Tensor:
        """x: (S, F) features -> (S, K) decision values."""
        return _augment((x.double() - self.mean) / self.scale) @ self.weight.T

    def predict(self, x: torch.Tensor) -> torch.Tensor:
        """x: (S, F) -> (S,) int64 predicted labels (ties: the lowest class)."""
        return self.classes[self.decision(x).argmax(1)]


def _augment(x: torch.Tensor) -> torch.Tensor:
    return torch.cat([x, torch.ones(len(x), 1, dtype=x.dtype)], 1)  # (S, F + 1)


def _check(x, y) -> None:
    if not isinstance(x, torch.Tensor) or x.dim() != 2 or not x.is_floating_point():
        raise ValueError(f"x must be a (S, F) float tensor, got {getattr(x, 'shape', type(x).__name__)}")
    if not isinstance(y, torch.Tensor) or y.shape != (len(x),) or y.is_floating_point():
        raise ValueError(f"y must be a (S,) integer tensor matching x's {len(x)} rows, "
                         f"got {getattr(y, 'shape', type(y).__name__)}")
    if not torch.isfinite(x).all():
        raise ValueError("x contains NaN or Inf values")


def svc_objective(weight: torch.Tensor, x: torch.Tensor, targets: torch.Tensor, c: float) -> torch.Tensor:
    """The summed one-vs-rest primal objective. weight (K, F+1), x (S, F+1), targets (S, K) +-1."""
    margin = (1 - targets * (x @ weight.T)).clamp(min=0)  # (S, K)
    return 0.5 * (weight * weight).sum() + c * (margin * margin).sum()


def fit_linear_svc(x: torch.Tensor, y: torch.Tensor, *, c: float = 1.0, max_iter: int = 500,
                   tol: float = 1e-9) -> LinearSVC:
    """Fit the linear SVM of the module docstring.

    Args:
        x: (S, F) training features. y: (S,) int64 labels (at least two classes).
        c: the inverse regularisation strength (``LinearSVC(C=...)``, default 1).
        max_iter: L-BFGS iterations. tol: its gradient / step tolerance.

    Returns:
        The fitted :class:`LinearSVC`.
    """
    _check(x, y)
    V.check_positive("c", c)
    classes = y.unique()
    if len(classes) < 2:
        raise ValueError(f"y must hold at least two classes, got {classes.tolist()}")
    x = x.double()
    mean, scale = x.mean(0), x.std(0, unbiased=False)
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))
    xa = _augment((x - mean) / scale)  # (S, F + 1)
    targets = torch.where(y.unsqueeze(1) == classes, 1.0, -1.0).double()  # (S, K)
    weight = torch.zeros(len(classes), xa.shape[1], dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([weight], max_iter=max_iter, tolerance_grad=tol, tolerance_change=tol * 1e-3,
                            history_size=20, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = svc_objective(weight, xa, targets, c)
        loss.backward()
        return loss

    with torch.enable_grad():
        opt.step(closure)
    return LinearSVC(weight.detach(), mean, scale, classes)


def probe_accuracy(train_x, train_y, test_x, test_y, *, c: float = 1.0) -> float:
    """Test accuracy of :func:`fit_linear_svc` trained on (train_x, train_y)."""
    _check(test_x, test_y)
    model = fit_linear_svc(train_x, train_y, c=c)
    return float((model.predict(test_x) == test_y).double().mean())
