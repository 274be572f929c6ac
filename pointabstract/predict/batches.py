"""Prepared inputs stacked into model batches (padded with ``lengths`` when their sizes differ)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import torch

from .prepare import Prepared

__all__ = ["batches", "stacked"]


def batches(prepared: list[Prepared], size: int) -> Iterator[tuple[int, list[Prepared]]]:
    """``(index of the first, chunk)`` for consecutive chunks of at most ``size`` inputs."""
    for start in range(0, len(prepared), size):
        yield start, prepared[start:start + size]


def stacked(samples: list[dict], device: torch.device) -> dict:
    """A list of ``{"pos": (N_b, 3), "normal"?: (N_b, 3)}`` numpy samples as one batch of tensors
    ``{"pos": (B, N, 3), "normal"?: (B, N, 3)}`` on ``device``, float32, N = max N_b; clouds of
    different sizes (a model of every stored point) are zero-padded and the batch gets
    ``lengths`` (B,), which the model reads (docs/models.md#ragged-batches)."""
    n = max(len(s["pos"]) for s in samples)

    def stack(key: str) -> torch.Tensor:
        out = np.zeros((len(samples), n, 3), np.float32)
        for b, s in enumerate(samples):
            out[b, :len(s[key])] = s[key]
        return torch.from_numpy(out).to(device)

    batch = {"pos": stack("pos")}
    if samples and all(s.get("normal") is not None for s in samples):
        batch["normal"] = stack("normal")
    sizes = [len(s["pos"]) for s in samples]
    if len(set(sizes)) > 1:
        batch["lengths"] = torch.tensor(sizes, dtype=torch.int64, device=device)
    return batch


def sample_of(p: Prepared) -> dict:
    """A prepared input as a dataset-style sample dict (what the tasks' transforms take)."""
    return {"pos": p.pos, **({"normal": p.normal} if p.normal is not None else {})}
