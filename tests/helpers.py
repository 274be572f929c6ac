"""Helpers shared by the tests (import as ``from tests.helpers import ...``)."""

from __future__ import annotations

import torch


def cloud(batch: int, n: int, c: int = 3, *, dtype=torch.float32, seed: int = 0) -> torch.Tensor:
    """A reproducible random cloud (B, N, C) with coordinates in [-1, 1)."""
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(batch, n, c, generator=g, dtype=torch.float64) * 2 - 1).to(dtype)


def check_png(path, size: tuple[int, int], out: str) -> None:
    """``path`` is a ``size`` PNG whose metadata names a backend, the one the CLI's ``out`` says."""
    from PIL import Image

    from pointabstract.viz.core.render import png_backend

    assert Image.open(path).size == size
    backend = png_backend(path)
    assert backend in ("offscreen", "legacy", "software") and f"drawn by the {backend} renderer" in out
