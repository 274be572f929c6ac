"""Duplicate-heavy test clouds for the neighbour ops (degenerate geometry)."""

from __future__ import annotations

import torch

__all__ = ["degenerate_cloud"]


def degenerate_cloud(kind: str, *, batch: int = 2, n: int = 600, seed: int = 0) -> torch.Tensor:
    """A (B, N, 3) float32 cloud full of exact duplicates and exactly tied distances.

    ``kind``: ``"identical"`` (one point repeated), ``"half duplicates"`` (every other point
    at one spot, the rest uniform), ``"few values"`` (7 distinct points repeated at random),
    ``"lattice"`` (a shuffled 7^3 grid of spacing 0.125 plus repeats of some of its points).
    """
    g = torch.Generator().manual_seed(seed)
    rand = torch.rand(batch, n, 3, generator=g)
    if kind == "identical":
        return torch.full((batch, n, 3), 0.25)
    if kind == "half duplicates":
        return torch.where(torch.arange(n).view(1, n, 1) % 2 == 0, torch.tensor(0.5), rand)
    if kind == "few values":
        return rand[:, :7][:, torch.randint(0, 7, (n,), generator=g)]
    if kind == "lattice":
        axis = torch.arange(7.0) * 0.125  # exact in binary: many exactly equal distances
        grid = torch.stack(torch.meshgrid(axis, axis, axis, indexing="ij"), -1).reshape(-1, 3)
        pick = torch.cat([torch.randperm(343, generator=g), torch.randint(0, 343, (n - 343,), generator=g)])
        return grid[pick[torch.randperm(n, generator=g)]].expand(batch, n, 3).contiguous()
    raise ValueError(f"kind must be identical, half duplicates, few values or lattice, got {kind!r}")
