"""Part segmentation: a part label for every input point, in the input's order.

The model labels the N points it sees, with the ``eval`` protocol: logits restricted to the
shape's category, softmax summed over the votes (vote 0 the shape itself, the others scaled
and shifted by the task's ``_vote`` with one generator seeded by the run's seed, drawn batch by
batch as ``eval`` draws them), argmax. Every input point (a cloud's points, a mesh's vertices)
then takes the label of its nearest of the N points (``ops.knn``, k = 1, in the input's
coordinates): labels are carried over by nearest neighbour, not predicted in chunks.
"""

from __future__ import annotations

import numpy as np
import torch

from ..data import SHAPENET_PART
from ..engine.tasks.base import lengths_arg
from ..engine.tasks.part_segmentation import restrict_to_category
from ..ops import knn
from .batches import batches, sample_of, stacked
from .prepare import Prepared
from .results import PartPrediction

__all__ = ["carry_labels", "segment"]


@torch.no_grad()
def segment(trained, prepared: list[Prepared], categories: list[int], *, votes: int,
            batch_size: int) -> list[PartPrediction]:
    """One :class:`PartPrediction` per prepared input; ``categories[i]`` is input ``i``'s
    ShapeNetPart category index."""
    gen = torch.Generator().manual_seed(trained.config.seed)
    out = []
    for first, chunk in batches(prepared, batch_size):
        category = torch.tensor(categories[first:first + len(chunk)], dtype=torch.int64)
        pred = _labels(trained, chunk, category, votes, gen)  # (B, N)
        for p, c, labels in zip(chunk, category.tolist(), pred):  # a padded batch: the cloud's own rows
            out.append(_result(p, SHAPENET_PART[c], labels[:len(p.pos)].numpy(), votes))
    return out


def _labels(trained, chunk: list[Prepared], category: torch.Tensor, votes: int, gen) -> torch.Tensor:
    """(B, N) int64 predicted global part ids of the N points of each input."""
    batch = stacked([sample_of(p) for p in chunk], trained.device)
    pos, cat = batch["pos"], category.to(trained.device)
    features = batch.get("normal") if trained.config.data.use_normals else None
    probs = 0
    for v in range(max(1, votes)):
        seen = pos if v == 0 else trained.task._vote(pos, gen)
        logits = trained.model(seen, cat, features=features, **lengths_arg(batch, trained.device))["logits"]
        probs = probs + restrict_to_category(logits.float(), cat).softmax(-1)
    return probs.argmax(-1).cpu()


def carry_labels(points: np.ndarray, seen: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """(V,) labels of ``points`` (V, 3): each takes the label of its nearest point of ``seen``
    (N, 3), whose labels are ``labels`` (N,) (``ops.knn`` k = 1; ties to the lower index).

    Both are brought into the unit sphere of ``seen`` in float64 before the float32 search (nearest
    neighbours do not change under a shift and a scale), so clouds far from the origin (UTM
    coordinates) or beyond float32's range are matched at their own precision, not float32's."""
    from ..data import NormalizeUnitSphere

    centre, radius = NormalizeUnitSphere.frame(seen)

    def local(a: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray((a - centre) / radius, dtype=np.float32))[None]

    query, ref = local(points), local(seen)
    _, idx = knn(query, ref, 1)  # (1, V, 1) indexes seen
    return np.asarray(labels)[idx[0, :, 0].numpy()]


def _result(p: Prepared, category, model_labels: np.ndarray, votes: int) -> PartPrediction:
    labels = carry_labels(p.cloud.points, p.seen, model_labels)
    names = dict(zip(category.parts, category.part_names))
    return PartPrediction(p.cloud.name, category.name, labels.astype(np.int64), p.cloud.points, names,
                          p.seen, model_labels.astype(np.int64), votes, tuple(p.notes))
