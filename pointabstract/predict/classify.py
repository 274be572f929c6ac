"""Classification: top-k classes of each input, with ``eval``'s test-time votes.

Votes, as :meth:`ClassificationTask.evaluate <pointabstract.engine.tasks.ClassificationTask.evaluate>`
draws them: with ``votes = V > 1`` the softmax is averaged over V copies of each shape under
the task's training augmentation (``task.train_transform()``), copy ``v`` of the ``i``-th input
of a call drawing from ``sample_rng(seed, v, i)``: the generator ``eval`` uses for copy ``v`` of
sample ``i`` of the test split. With ``votes = 1`` the shape is classified as it is.
"""

from __future__ import annotations

import torch

from ..data import sample_rng
from .batches import batches, sample_of, stacked
from .prepare import Prepared
from .results import ClassPrediction

__all__ = ["classify"]


@torch.no_grad()
def classify(trained, prepared: list[Prepared], *, top_k: int, votes: int,
             batch_size: int) -> list[ClassPrediction]:
    """One :class:`ClassPrediction` per prepared input, in order."""
    names = trained.task.class_names
    k = min(top_k, len(names))
    out = []
    for first, chunk in batches(prepared, batch_size):
        probs = _probabilities(trained, chunk, votes, first)  # (B, classes)
        top = probs.topk(k, dim=-1)
        for p, row, values, index in zip(chunk, probs, top.values, top.indices):
            out.append(ClassPrediction(p.cloud.name, tuple(names[i] for i in index.tolist()),
                                       tuple(float(v) for v in values), row.numpy(), votes, tuple(p.notes)))
    return out


def _probabilities(trained, chunk: list[Prepared], votes: int, first: int) -> torch.Tensor:
    """(B, classes) softmax averaged over ``votes`` copies (module docstring)."""
    task, seed = trained.task, trained.config.seed
    augment = task.train_transform() if votes > 1 else None
    passes = []
    for v in range(votes):
        samples = [sample_of(p) for p in chunk]
        if augment is not None:
            samples = [augment(s, sample_rng(seed, v, first + i)) for i, s in enumerate(samples)]
        logits = task.forward(trained.model, stacked(samples, trained.device), trained.device)
        passes.append(logits.float().softmax(-1).cpu())
    return torch.stack(passes).mean(0)
