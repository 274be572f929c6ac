"""Point-wise MLPs (channels last: they act on the last dimension of (B, N, C))."""

from __future__ import annotations

import torch.nn.functional as F
from torch import nn

__all__ = ["ACTIVATIONS", "MLP", "FeedForward", "PointBatchNorm", "make_activation", "make_norm"]

# the activations the package's MLPs use, by name: LeakyReLU(0.2) (Centroid Transformers and the
# capsule networks), GELU (Sequoia's layers) and ReLU (Sequoia's segmentation head)
ACTIVATIONS = {"leaky_relu": lambda: nn.LeakyReLU(0.2), "gelu": nn.GELU, "relu": nn.ReLU}


class PointBatchNorm(nn.BatchNorm1d):
    """BatchNorm over the channel (last) dimension of (..., C) tensors: every point of every
    cloud in the batch is one sample of the per-channel statistics. A single sample in
    training mode (a batch of one cloud at the classification head) is normalised with the
    running statistics instead of failing."""

    def forward(self, x):
        flat = x.reshape(-1, x.shape[-1])
        if self.training and flat.shape[0] == 1:
            out = F.batch_norm(flat, self.running_mean, self.running_var, self.weight, self.bias,
                               False, 0.0, self.eps)
        else:
            out = super().forward(flat)
        return out.view(x.shape)


def make_norm(kind: str | None, dim: int) -> nn.Module:
    """``"batch"`` (PointBatchNorm), ``"layer"`` (LayerNorm) or ``None`` (identity)."""
    if kind == "batch":
        return PointBatchNorm(dim)
    if kind == "layer":
        return nn.LayerNorm(dim)
    if kind is None:
        return nn.Identity()
    raise ValueError(f"norm must be 'batch', 'layer' or None, got {kind!r}")


def make_activation(name: str) -> nn.Module:
    """A new activation module by name: ``"leaky_relu"`` (slope 0.2), ``"gelu"`` or ``"relu"``."""
    if name not in ACTIVATIONS:
        raise ValueError(f"act must be one of {sorted(ACTIVATIONS)}, got {name!r}")
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

    def forward(self, x):
        """x: (B, N, C) -> (B, N, C)."""
        return x + self.net(self.norm(x))
