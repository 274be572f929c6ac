"""What :meth:`Predictor.predict <pointabstract.predict.Predictor.predict>` returns: one small
frozen dataclass per input, by task. Points are in the input's own coordinates and precision
(float64 for a float64 input: a file storing doubles or text, a float64 array; float32 for a
float32 one); ``notes`` says what was done to the input on the way (sampling, FPS, repeated
points, a mesh read as a cloud).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["ClassPrediction", "PartPrediction", "Reconstruction"]


@dataclass(frozen=True)
class ClassPrediction:
    """The classes of one shape, most probable first.

    Attributes:
        source: the file path, or ``"cloud <i>"`` for an array.
        names: the top-k class names (k = ``top_k``, at most the number of classes).
        probabilities: their probabilities (softmax, averaged over the votes), descending.
        probs: (classes,) float32 every class's probability, in the order of ``class_names``.
        votes: how many copies were averaged (1: the shape alone).
        notes: what was done to the input.
    """

    source: str
    names: tuple[str, ...]
    probabilities: tuple[float, ...]
    probs: np.ndarray
    votes: int
    notes: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """The most probable class."""
        return self.names[0]


@dataclass(frozen=True)
class Reconstruction:
    """A capsule autoencoder's reconstruction of one cloud.

    Attributes:
        source: the file path, or ``"cloud <i>"``.
        points: (N_out, 3) decoded points, in the input's coordinates and precision.
        capsule: (N_out,) int64 the latent capsule that decoded each point, in [0, num_capsules).
        num_capsules: L, the model's latent capsules.
        input_points: (N, 3) the N points the model encoded, in the input's coordinates and precision.
        chamfer: Chamfer distance between ``points`` and ``input_points`` as ``eval`` reports
            it: squared Euclidean, mean per direction, both directions summed, in unit-sphere
            radii (the input's radius = 1), so comparable across inputs and with ``eval``.
        chamfer_input_units: the same in the input's squared units (``chamfer * radius**2``).
        fscore: F-score at ``fscore_threshold`` unit-sphere radii, as ``eval``.
        notes: what was done to the input.
    """

    source: str
    points: np.ndarray
    capsule: np.ndarray
    num_capsules: int
    input_points: np.ndarray
    chamfer: float
    chamfer_input_units: float
    fscore: float
    fscore_threshold: float
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class PartPrediction:
    """A part label for every point of one input, in the input's order.

    The model sees N points (sampled, reduced or repeated: ``notes``); every input point (a
    cloud's points, a mesh's vertices) takes the label of its nearest of those N points
    (``ops.knn``, k = 1, ties to the lower index).

    Attributes:
        source: the file path, or ``"cloud <i>"``.
        category: the ShapeNetPart category the logits were restricted to.
        labels: (V,) int64 global part id of each input point, in input order.
        points: (V, 3) the input points (input coordinates, order and precision).
        part_names: global part id -> name, for the category's parts.
        model_points: (N, 3) the points the model saw (input coordinates and precision).
        model_labels: (N,) int64 their predicted global part ids.
        votes: how many copies were averaged.
        notes: what was done to the input.
    """

    source: str
    category: str
    labels: np.ndarray
    points: np.ndarray
    part_names: dict
    model_points: np.ndarray
    model_labels: np.ndarray
    votes: int
    notes: tuple[str, ...] = ()

    def names(self) -> list[str]:
        """The part name of every input point, in input order."""
        return [self.part_names[int(p)] for p in self.labels]
