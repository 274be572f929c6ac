"""Prepared inputs stacked into model batches (all of N points, so no padding is needed)."""

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
    """A list of ``{"pos": (N, 3), "normal"?: (N, 3)}`` numpy samples as one batch of tensors
    ``{"pos": (B, N, 3), "normal"?: (B, N, 3)}`` on ``device``, float32."""
    def stack(key: str) -> torch.Tensor:
        return torch.from_numpy(np.stack([s[key] for s in samples]).astype(np.float32)).to(device)

    batch = {"pos": stack("pos")}
    if samples and all(s.get("normal") is not None for s in samples):
        batch["normal"] = stack("normal")
    return batch


def sample_of(p: Prepared) -> dict:
    """A prepared input as a dataset-style sample dict (what the tasks' transforms take)."""
    return {"pos": p.pos, **({"normal": p.normal} if p.normal is not None else {})}
