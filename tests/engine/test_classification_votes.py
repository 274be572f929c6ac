"""Test-time voting of the classification task (``task.votes`` / ``eval --votes``): the softmax
averaged over copies of each test shape under the training augmentation of epochs 0..votes-1.

A probe model whose class probabilities are linear in the cloud's mean x makes the average
known by hand: the mean of the probabilities over the votes is the probability at the mean of
the votes' x, and the predicted class is the centre nearest to it."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
import torch

from pointabstract.data.datasets.base import sample_rng
from pointabstract.engine import load_config, task_class
from pointabstract.engine.trainer import ShardSampler, make_loader
from tests.fixtures import write_modelnet_hdf5

SEED = 7  # a seed under which averaging log-probabilities picks another class for one shape
# sample i (its own class i) is a cloud whose mean x is MEAN_X[i]; no value lies on a bin edge
MEAN_X = np.array([-0.17, -0.12, -0.04, -0.01, 0.03, 0.06, 0.13, 0.16])
CENTRES = (np.arange(len(MEAN_X)) - 3.5) * 0.1  # class c stands for mean x near CENTRES[c]
GAIN = 0.19  # the largest gain (< 0.198) keeping every probability positive for |x| < 0.8


def _probs(x, t):
    """Class probabilities ``p_c(x) = b + g (2 t_c x - t_c^2)`` of mean x values (B, 1) for the
    centres ``t`` (C,), numpy or torch: they sum to 1 (the ``t_c`` sum to 0) and are largest at
    the centre nearest to x (the tangents of x^2). Being linear in x, their mean over votes is
    ``p(mean of the votes' x)``."""
    base = (1 + GAIN * (t ** 2).sum()) / len(t)
    return base + GAIN * (2 * t * x - t ** 2)  # (B, C)


class MeanXProbe(torch.nn.Module):
    """A classifier whose logits are ``log _probs(mean x of the cloud)``."""

    def __init__(self):
        super().__init__()
        self.register_buffer("t", torch.tensor(CENTRES, dtype=torch.float64))

    def forward(self, pos: torch.Tensor, features=None) -> dict:
        probs = _probs(pos.double()[..., 0].mean(1, keepdim=True), self.t)  # (B, C)
        assert (probs > 0).all(), pos
        return {"logits": probs.log().float()}


def _clouds() -> np.ndarray:
    """(S, 4, 3) clouds: MEAN_X[i] plus four offsets that sum to zero."""
    offsets = np.array([[0.3, 0.1, -0.2], [-0.3, 0.2, 0.1], [0.1, -0.2, 0.3], [-0.1, -0.1, -0.2]])
    return MEAN_X[:, None, None] * np.array([1.0, 0, 0]) + offsets


def _nearest_centre(x: np.ndarray) -> np.ndarray:
    return np.abs(x[:, None] - CENTRES).argmin(1)


def _augmented_mean_x(votes: int) -> np.ndarray:
    """(votes, S) mean x of each vote by hand: scale_translate draws per sample from
    ``sample_rng(seed, epoch=vote, index)`` a per-axis scale in [2/3, 3/2], then a per-axis
    shift in [-0.2, 0.2]; the x mean moves as ``mean * scale_x + shift_x``."""
    out = np.zeros((votes, len(MEAN_X)))
    for v in range(votes):
        for i, m in enumerate(MEAN_X):
            rng = sample_rng(SEED, v, i)
            scale, shift = rng.uniform(2 / 3, 3 / 2, size=3), rng.uniform(-0.2, 0.2, size=3)
            out[v, i] = m * scale[0] + shift[0]
    return out


def _evaluate(root, votes: int) -> list[list[int]]:
    """The confusion matrix of the task's own evaluate over the test split, in batches of 3."""
    cfg = load_config(None, {"data.root": str(root), "data.num_points": 4, "data.eval_batch_size": 3,
                             "seed": SEED, "task.augment": "scale_translate", "task.votes": votes})
    task = task_class("classification")(cfg)
    data = task.dataset("test", train=False)
    loader = make_loader(data, ShardSampler(len(data)), cfg.data.eval_batch_size, 0)
    metrics = task.evaluate(MeanXProbe(), loader, torch.device("cpu"), autocast=contextlib.nullcontext)
    assert metrics["votes"] == votes and metrics["samples"] == len(MEAN_X)
    return metrics["confusion"]


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    root = tmp_path_factory.mktemp("votes")
    labels = np.arange(len(MEAN_X))
    write_modelnet_hdf5(root, [f"c{i}" for i in labels], {"train": (_clouds(), labels), "test": (_clouds(), labels)})
    return root


def _one_hot_rows(classes: np.ndarray) -> list[list[int]]:
    return np.eye(len(CENTRES), dtype=int)[classes].tolist()


def test_three_votes_predict_the_centre_nearest_the_averaged_augmented_mean(root):
    x = _augmented_mean_x(3).mean(0)
    assert np.abs(x * 10 - np.round(x * 10)).min() > 0.01  # at least 0.001 from a bin edge
    voted = _nearest_centre(x)
    # the hand-computed answer differs from an unaugmented pass, from the first vote alone and
    # from averaging log-probabilities instead of probabilities
    assert (voted != _nearest_centre(MEAN_X)).sum() >= 3
    assert (voted != _nearest_centre(_augmented_mean_x(1)[0])).sum() >= 3
    assert (voted != np.log(_probs(_augmented_mean_x(3)[..., None], CENTRES)).mean(0).argmax(1)).sum() == 1
    assert _evaluate(root, 3) == _one_hot_rows(voted)


def test_one_vote_reads_the_shapes_unaugmented(root):
    assert _evaluate(root, 1) == _one_hot_rows(_nearest_centre(MEAN_X))
