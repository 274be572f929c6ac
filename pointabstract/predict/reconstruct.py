"""Reconstruction: a capsule autoencoder's decoded points, mapped back to the input's frame.

As in ``eval``: the N points are centred and scaled into the unit sphere (the task's own
transform), encoded and decoded (evaluation mode: the decoder's fixed grid, so the result does
not depend on a random draw), and scored with ``reconstruction_scores`` (Chamfer distance and
F-score in unit-sphere radii). The decoded points are then scaled and moved back.
"""

from __future__ import annotations

import torch

from ..engine.metrics import reconstruction_scores
from .batches import batches, sample_of, stacked
from .prepare import Prepared
from .results import Reconstruction

__all__ = ["reconstruct"]


@torch.no_grad()
def reconstruct(trained, prepared: list[Prepared], *, batch_size: int) -> list[Reconstruction]:
    """One :class:`Reconstruction` per prepared input, in order."""
    threshold = trained.task.s.fscore_threshold
    out = []
    for _, chunk in batches(prepared, batch_size):
        pos = stacked([sample_of(p) for p in chunk], trained.device)["pos"]
        result = trained.model(pos)
        points = result["points"].float()
        chamfer, fscore = reconstruction_scores(points, pos, threshold=threshold)
        if "capsule_index" in result:
            capsule = result["capsule_index"].cpu().numpy().astype("int64")
            caps = int(result["capsules"].shape[1])
        else:  # a plain autoencoder (no capsules): every point from the one code
            capsule, caps = torch.zeros(points.shape[1], dtype=torch.int64).numpy(), 1
        for p, q, cd, fs in zip(chunk, points.cpu().numpy(), chamfer.tolist(), fscore.tolist()):
            out.append(Reconstruction(p.cloud.name, p.to_input_frame(q), capsule, caps, p.seen, cd,
                                      cd * p.radius ** 2, fs, threshold, tuple(p.notes)))
    return out
