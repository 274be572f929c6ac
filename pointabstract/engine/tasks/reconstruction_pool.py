"""The fixed pool of test shapes on which a reconstruction is scored against *other* inputs.

Chamfer distance alone cannot tell a reconstruction from a template (one mean shape returned for
every input). :class:`RetrievalPool` picks ``size`` test shapes with a fixed generator (the same
shapes for every run, model and seed on the same test split), reconstructs them in evaluation mode
and scores them with :func:`~pointabstract.engine.metrics.retrieval.retrieval_scores`; it also
measures the sampling floor: the Chamfer distance between two independent random samplings of the
same pool shapes (what a perfect model would still score against a new sampling of its input).
"""

from __future__ import annotations

import copy

import numpy as np
import torch

from ..metrics.capsule_spread import capsule_spread, kmeans_spread
from ..metrics.retrieval import TEMPLATE_WARNING, depends_on_input, retrieval_scores, sampling_floor

__all__ = ["POOL_SEED", "RetrievalPool", "retrieval_lines"]

POOL_SEED = 20261127  # the pool's generator: fixed, so every run scores the same shapes
_FLOOR_EPOCHS = (1_000_001, 1_000_002)  # epochs of the two floor samplings (never a training epoch)


def _resampled(dataset, epoch: int):
    """A shallow copy of ``dataset`` drawing its points at random (``sampling="random"``) in ``epoch``."""
    from ...data.datasets.base import PointDataset

    out = copy.copy(dataset)
    inner = getattr(out, "_part", None)  # ShapeNetCore over a ShapeNetPart layout
    if isinstance(inner, PointDataset):
        out._part = _resampled(inner, epoch)
    if hasattr(out, "sampling"):
        out.sampling = "random"
    out.set_epoch(epoch)
    return out


class RetrievalPool:
    """``size`` fixed test shapes of ``dataset`` (all of them when it holds fewer).

    Args:
        dataset: the test split (its transform normalises every cloud, as in evaluation).
        size: pool size Q >= 2.
        batch_size: shapes per forward pass.
    """

    def __init__(self, dataset, size: int, *, batch_size: int):
        from ...data import collate

        q = min(size, len(dataset))
        if q < 2:
            raise ValueError(f"task.retrieval_pool needs at least 2 test shapes, the test split has "
                             f"{len(dataset)}")
        rng = np.random.default_rng(POOL_SEED)
        self.indices = np.sort(rng.choice(len(dataset), size=q, replace=False))
        self.batch_size = batch_size
        self.inputs = collate([dataset[int(i)] for i in self.indices])["pos"]  # (Q, N, 3)
        first, second = (collate([_resampled(dataset, e)[int(i)] for i in self.indices])["pos"]
                         for e in _FLOOR_EPOCHS)
        self.floor = sampling_floor(first, second)
        self._kmeans: dict[int, float] = {}  # capsules L -> spread of a k-means partition into L parts

    @torch.no_grad()
    def score(self, model, device, *, autocast) -> dict:
        """Reconstruct the pool with ``model`` (left in the mode it was in) and score it:
        ``retrieval``, ``retrieval_chance``, ``specificity``, ``diversity``, ``retrieval_pool``,
        ``sampling_floor`` and, for a capsule model (outputs with ``capsule_index``),
        ``capsule_spread`` and ``kmeans_spread``: floats (``depends_on_input`` reads the first ones)."""
        was_training = model.training
        model.eval()
        outputs, index = [], None
        for s in range(0, len(self.inputs), self.batch_size):
            with autocast():
                out = model(self.inputs[s:s + self.batch_size].to(device))
            outputs.append(out["points"].float().cpu())
            index = out.get("capsule_index")
        model.train(was_training)
        points = torch.cat(outputs)
        scores = retrieval_scores(points, self.inputs)
        result = {"retrieval": scores["retrieval"], "retrieval_chance": scores["retrieval_chance"],
                  "specificity": scores["specificity"], "diversity": scores["diversity"],
                  "retrieval_pool": scores["pool"], "sampling_floor": self.floor}
        if index is not None:  # a capsule model: how compact the region each capsule decodes is
            index = index.cpu()
            caps = int(index.max()) + 1
            if caps not in self._kmeans:
                self._kmeans[caps] = kmeans_spread(self.inputs, caps)
            result.update(capsule_spread=capsule_spread(points, index), kmeans_spread=self._kmeans[caps])
        return result


def retrieval_lines(metrics: dict) -> list[str]:
    """The report's lines on the pool scores (none when the run did not measure them)."""
    if "retrieval" not in metrics:
        return []
    q = metrics["retrieval_pool"]
    lines = [f"- sampling floor {metrics['sampling_floor'] * 1e3:.3f} x 1e-3: the Chamfer distance between "
             "two independent samplings of the same test shapes (what a perfect model still scores)",
             f"- **retrieval {metrics['retrieval']:.3f}** among {q} fixed test shapes (chance "
             f"{metrics['retrieval_chance']:.3f}): the share of reconstructions whose nearest input is "
             "their own",
             f"- specificity {metrics['specificity']:.2f}: median Chamfer distance to the other inputs / to "
             "the own input (a template scores about 1)",
             f"- output diversity {metrics['diversity']:.2f}: mean distance between two reconstructions / "
             "between their inputs (a template scores 0, a faithful model about 1)"]
    if "capsule_spread" in metrics:
        lines.append(f"- capsule spread {metrics['capsule_spread']:.2f}: RMS distance of a capsule's decoded "
                     "points from their mean / the shape's radius of gyration (1: every capsule scattered "
                     f"over the whole shape; a k-means partition of the inputs into as many regions: "
                     f"{metrics['kmeans_spread']:.2f})")
    if not depends_on_input(metrics):
        lines.append(f"- **Warning: {TEMPLATE_WARNING}.**")
    return lines
