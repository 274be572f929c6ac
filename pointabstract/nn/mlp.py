"""Point-wise MLPs (channels last: they act on the last dimension of (B, N, C))."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .. import _validate as V

__all__ = ["ACTIVATIONS", "MLP", "FeedForward", "PointBatchNorm", "make_activation", "make_norm",
           "run_masked"]

# the activations the package's MLPs use, by name: LeakyReLU(0.2) (Centroid Transformers and the
# capsule networks), GELU (Sequoia's layers) and ReLU (Sequoia's segmentation head)
ACTIVATIONS = {"leaky_relu": lambda: nn.LeakyReLU(0.2), "gelu": nn.GELU, "relu": nn.ReLU}


class PointBatchNorm(nn.BatchNorm1d):
    """BatchNorm over the channel (last) dimension of (..., C) tensors: every point of every
    cloud in the batch is one sample of the per-channel statistics. A single sample in
    training mode (a batch of one cloud at the classification head) is normalised with the
    running statistics instead of failing.

    ``mask`` (x.shape[:-1] bool, True at real points) keeps padding out of the batch
    statistics in training mode: they are those of the real rows alone (the running ones are
    updated from them as for an unpadded batch); padded rows come out as 0. In evaluation mode
    every row is normalised alone, so the mask changes nothing there.
    """

    def forward(self, x, mask=None):
        if mask is not None and self.training and not bool(mask.all()):
            out = torch.zeros_like(x)
            out[mask] = self.forward(x[mask])  # (V, C): the real rows only
            return out
        flat = x.reshape(-1, x.shape[-1])
        if self.training and flat.shape[0] == 1:
            out = F.batch_norm(flat, self.running_mean, self.running_var, self.weight, self.bias,
                               False, 0.0, self.eps)
        else:
            out = super().forward(flat)
        return out.view(x.shape)


def run_masked(layers, x, mask=None):
    """``layers`` (an iterable of modules) applied in order to ``x`` (..., C), ``mask``
    (x.shape[:-1] bool, True at real points) passed to every :class:`PointBatchNorm`, so padded
    rows stay out of batch statistics (see there)."""
    for layer in layers:
        x = layer(x, mask=mask) if isinstance(layer, (PointBatchNorm, MLP)) else layer(x)
    return x


def make_norm(kind: str | None, dim: int) -> nn.Module:
    """``"batch"`` (PointBatchNorm), ``"layer"`` (LayerNorm) or ``None`` (identity)."""
    V.check_choice("norm", kind, ("batch", "layer"), allow_none=True)
    if kind == "batch":
        return PointBatchNorm(dim)
    if kind == "layer":
        return nn.LayerNorm(dim)
    return nn.Identity()


def make_activation(name: str) -> nn.Module:
    """A new activation module by name: ``"leaky_relu"`` (slope 0.2), ``"gelu"`` or ``"relu"``."""
    V.check_choice("act", name, sorted(ACTIVATIONS))
    return ACTIVATIONS[name]()


class MLP(nn.Sequential):
    """Linear layers with an activation between them (none after the last).

    Args:
        dims: channel sizes ``(C_in, hidden..., C_out)``, at least two.
        norm: ``"batch"`` (per-channel over all points of the batch, the usual choice for point
            networks), ``"layer"`` or ``None``: a normalisation before each hidden activation.
        dropout: dropout probability after each hidden activation.
        act: the activation, a name of :data:`ACTIVATIONS` (default LeakyReLU(0.2)).

    The modules sit in one ``nn.Sequential``: ``Linear, [norm], act, [Dropout], ..., Linear``.
    """

    def __init__(self, dims, *, norm: str | None = None, dropout: float = 0.0, act: str = "leaky_relu"):
        dims = list(dims)
        if len(dims) < 2:
            raise ValueError(f"dims must list at least an input and an output size, got {dims}")
        make_norm(norm, 1)  # validates the name
        make_activation(act)  # validates the name
        layers = []
        for i, (a, b) in enumerate(zip(dims[:-1], dims[1:])):
            layers.append(nn.Linear(a, b))
            if i < len(dims) - 2:
                if norm is not None:
                    layers.append(make_norm(norm, b))
                layers.append(make_activation(act))
                if dropout:
                    layers.append(nn.Dropout(dropout))
        super().__init__(*layers)

    def forward(self, x, mask=None):
        """x: (..., C_in) -> (..., C_out); ``mask`` (x.shape[:-1] bool): see :func:`run_masked`."""
        return run_masked(self, x, mask)


class FeedForward(nn.Module):
    """The pre-norm transformer MLP sub-block with its residual: ``x + W2 act(W1 norm(x))``.

    The one feed-forward layer of every model (centroid attention, self-attention blocks,
    Sequoia's layers and its softmax baseline); parameters ``norm.*``, ``net.0.*`` (W1) and
    ``net.2.*`` (W2).

    Args:
        dim: channels C.
        hidden: hidden channels (default 2 C).
        norm: ``"layer"`` (default), ``"batch"`` or ``None`` (see :func:`make_norm`).
        act: the activation, a name of :data:`ACTIVATIONS` (default LeakyReLU(0.2)).
    """

    def __init__(self, dim: int, *, hidden: int | None = None, norm: str | None = "layer",
                 act: str = "leaky_relu"):
        super().__init__()
        self.norm = make_norm(norm, dim)
        self.net = MLP([dim, 2 * dim if hidden is None else hidden, dim], act=act)

    def forward(self, x, mask=None):
        """x: (B, N, C) -> (B, N, C); ``mask`` (B, N) bool: see :func:`run_masked`."""
        return x + self.net(run_masked([self.norm], x, mask))
