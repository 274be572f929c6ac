"""Point-wise MLPs (channels last: they act on the last dimension of (B, N, C))."""

from __future__ import annotations

from torch import nn

__all__ = ["MLP", "FeedForward"]


class MLP(nn.Sequential):
    """Linear layers with LeakyReLU(0.2) between them (none after the last).

    Args:
        dims: channel sizes ``(C_in, hidden..., C_out)``, at least two.
        norm: ``"layer"`` puts a LayerNorm before each activation, ``None`` none.
        dropout: dropout probability after each hidden activation.
    """

    def __init__(self, dims, *, norm: str | None = None, dropout: float = 0.0):
        dims = list(dims)
        if len(dims) < 2:
            raise ValueError(f"dims must list at least an input and an output size, got {dims}")
        if norm not in (None, "layer"):
            raise ValueError(f"norm must be None or 'layer', got {norm!r}")
        layers = []
        for i, (a, b) in enumerate(zip(dims[:-1], dims[1:])):
            layers.append(nn.Linear(a, b))
            if i < len(dims) - 2:
                if norm == "layer":
                    layers.append(nn.LayerNorm(b))
                layers.append(nn.LeakyReLU(0.2))
                if dropout:
                    layers.append(nn.Dropout(dropout))
        super().__init__(*layers)


class FeedForward(nn.Module):
    """The transformer MLP sub-block with its residual: ``x + W2 act(W1 LN(x))``.

    Args:
        dim: channels C.
        hidden: hidden channels (default 2 C).
    """

    def __init__(self, dim: int, *, hidden: int | None = None):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.net = MLP([dim, hidden or 2 * dim, dim])

    def forward(self, x):
        """x: (B, N, C) -> (B, N, C)."""
        return x + self.net(self.norm(x))
