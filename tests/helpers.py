"""Helpers shared by the tests (import as ``from tests.helpers import ...``)."""

from __future__ import annotations

import torch


def cloud(batch: int, n: int, c: int = 3, *, dtype=torch.float32, seed: int = 0) -> torch.Tensor:
    """A reproducible random cloud (B, N, C) with coordinates in [-1, 1)."""
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(batch, n, c, generator=g, dtype=torch.float64) * 2 - 1).to(dtype)
