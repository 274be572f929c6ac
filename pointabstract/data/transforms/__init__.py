"""Augmentation and normalisation transforms for point-cloud samples.

Every transform is called as ``transform(sample, rng) -> new sample`` (see
:mod:`pointabstract.data.transforms.base` for the protocol): it never mutates its input,
draws its randomness once per call from the numpy Generator it is given and applies that
draw to every field (``pos``, ``normal``, ``part``), and shows its arguments in ``repr``.
A :class:`~pointabstract.data.PointDataset` passes the generator seeded from
(seed, epoch, index), so a sample is the same with any number of DataLoader workers.

================================  ==============================================================
transform                         effect
================================  ==============================================================
``NormalizeUnitSphere()``         centroid to the origin, farthest point on the unit sphere
``NormalizeUnitCube()``           bounding box centred, longest side spanning [-1, 1]
``RandomScale(2/3, 3/2)``         per-axis scale (normals by the inverse transpose)
``RandomTranslate(0.2)``          per-axis shift
``RandomRotate("y")``             rotation about an up axis (normals too)
``RandomSO3Rotation()``           uniform random rotation (normals too)
``Jitter(0.01, clip=0.05)``       clipped Gaussian noise on positions
``RandomDropout(0.875)``          removes up to 87.5 % of the points: N shrinks, no duplicates
``Shuffle()``                     random permutation of the points
``Resample(n)``                   exactly n points (duplicates only when N < n)
``Compose([...])``                applies a list in order
================================  ==============================================================

The DGCNN / PointNeXt training recipe for ModelNet40::

    Compose([NormalizeUnitSphere(), RandomScale(2 / 3, 3 / 2), RandomTranslate(0.2), Shuffle()])
"""

from __future__ import annotations

from .base import Compose, Transform
from .geometry import (
    Jitter,
    NormalizeUnitCube,
    NormalizeUnitSphere,
    RandomRotate,
    RandomScale,
    RandomSO3Rotation,
    RandomTranslate,
)
from .sampling import RandomDropout, Resample, Shuffle

__all__ = [
    "Compose",
    "Jitter",
    "NormalizeUnitCube",
    "NormalizeUnitSphere",
    "RandomDropout",
    "RandomRotate",
    "RandomSO3Rotation",
    "RandomScale",
    "RandomTranslate",
    "Resample",
    "Shuffle",
    "Transform",
]
