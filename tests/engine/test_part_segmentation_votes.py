"""Test-time voting of the part-segmentation task (``task.votes``): the restricted softmax summed
over the shape itself and ``votes - 1`` copies scaled and shifted per shape, drawn from one
generator seeded by ``cfg.seed`` (scale, then shift, per vote, batch after batch).

A probe model gives every point the same probabilities, linear in the shape's mean x: the first
part of its category gets ``a + x``, the second ``a - x``. The vote average then picks the first
part exactly when the mean over the votes of x is positive, which is known by hand."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from pointabstract.data.categories import SHAPENET_PART
from pointabstract.engine.config import RunConfig
from pointabstract.engine.tasks.part_segmentation import PartSegmentationTask, shape_ious

SEED, A, EPS = 5, 0.4, 0.01
# shape b: category b, 8 points whose mean x is MEAN_X[b]; 6 points of the category's first part, 2 of its second
MEAN_X = np.array([-0.05, -0.03, -0.01, -0.004, 0.006, 0.025, 0.04, 0.06])
OFFSETS = np.array([[0.3, 0.1, 0.0], [-0.3, -0.1, 0.2], [0.2, 0.0, -0.1], [-0.2, 0.3, 0.1],
                    [0.1, -0.2, 0.0], [-0.1, 0.1, -0.3], [0.05, -0.3, 0.2], [-0.05, 0.1, -0.1]])
BATCH = 4  # two batches: the vote generator runs on from one batch to the next


class MeanXProbe(torch.nn.Module):
    """Per-point log-probabilities: ``a + x`` and ``a - x`` for the first two parts of the shape's
    category, ``EPS`` for its other parts and every other part (x: the cloud's mean x)."""

    def forward(self, pos: torch.Tensor, category: torch.Tensor, features=None) -> dict:
        x = pos.double()[..., 0].mean(1)  # (B,)
        probs = torch.full((*pos.shape[:2], 50), EPS, dtype=torch.float64)
        for b, c in enumerate(category.tolist()):
            first, second = SHAPENET_PART[c].parts[:2]
            probs[b, :, first], probs[b, :, second] = A + x[b], A - x[b]
        return {"logits": probs.log().float()}


def _parts(c: int) -> torch.Tensor:
    first, second = SHAPENET_PART[c].parts[:2]
    return torch.tensor([first] * 6 + [second] * 2)


def _batches() -> list[dict]:
    """The shapes collated in batches of BATCH, as the task's loader hands them over."""
    pos = torch.tensor(MEAN_X[:, None, None] * np.array([1.0, 0, 0]) + OFFSETS, dtype=torch.float32)
    category = torch.arange(len(MEAN_X))
    part = torch.stack([_parts(c) for c in category.tolist()])
    return [{"pos": pos[i:i + BATCH], "category": category[i:i + BATCH], "part": part[i:i + BATCH]}
            for i in range(0, len(MEAN_X), BATCH)]


def _vote_mean_x(votes: int) -> np.ndarray:
    """(votes, S) mean x of each vote by hand: vote 0 is the shape; each further vote of a batch
    draws a scale (B, 1, 3) in [0.8, 1.25], then a shift (B, 1, 3) in [-0.1, 0.1]."""
    gen = torch.Generator().manual_seed(SEED)
    out = np.zeros((votes, len(MEAN_X)))
    out[0] = MEAN_X
    for start in range(0, len(MEAN_X), BATCH):
        m = MEAN_X[start:start + BATCH]
        for v in range(1, votes):
            scale = torch.rand(len(m), 1, 3, generator=gen, dtype=torch.float32) * 0.45 + 0.8
            shift = (torch.rand(len(m), 1, 3, generator=gen, dtype=torch.float32) * 2 - 1) * 0.1
            out[v, start:start + BATCH] = m * scale[:, 0, 0].double().numpy() + shift[:, 0, 0].double().numpy()
    return out


def _expected(first_wins: np.ndarray) -> dict[str, float]:
    """{category: IoU of its one shape} when every point is given the first (True) or second part."""
    out = {}
    for c, first in enumerate(first_wins):
        truth = _parts(c)[None]
        pred = torch.full_like(truth, SHAPENET_PART[c].parts[0 if first else 1])
        out[SHAPENET_PART[c].name] = shape_ious(pred, truth, torch.tensor([c])).item()
    return out


def _evaluate(votes: int) -> dict[str, float]:
    cfg = RunConfig(model="sequoia_seg", task="part_segmentation", seed=SEED)
    cfg.task_args = {"votes": votes}
    metrics = PartSegmentationTask(cfg).evaluate(MeanXProbe(), _batches(), torch.device("cpu"))
    return {name: iou for name, iou in metrics["per_category"].items() if iou is not None}


def test_three_votes_give_every_point_the_part_of_the_averaged_mean_x():
    x = _vote_mean_x(3).mean(0)
    assert np.abs(x).min() > 1e-3  # no shape at the tie
    # the hand-computed answer differs from one vote (the shape unaugmented) and from the last vote alone
    assert ((x > 0) != (MEAN_X > 0)).sum() >= 2
    assert ((x > 0) != (_vote_mean_x(3)[-1] > 0)).sum() >= 2
    assert _evaluate(3) == pytest.approx(_expected(x > 0))


def test_one_vote_reads_the_shapes_unaugmented():
    assert _evaluate(1) == pytest.approx(_expected(MEAN_X > 0))
