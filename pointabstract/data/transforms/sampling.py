"""Point-selection transforms: dropout, shuffle, resample.

Each draws one index array and applies it to every per-point field (``pos``, ``normal``,
``part`` and any other array whose first dimension is N), so the fields stay aligned.
``label`` and ``category`` pass through.
"""

from __future__ import annotations

import numpy as np

from ... import _validate as V
from .base import Transform, select_points

__all__ = ["RandomDropout", "Resample", "Shuffle"]


class RandomDropout(Transform):
    """Remove a random fraction of the points; the survivors are returned, all distinct.

    One ratio ``r`` is drawn uniformly in [0, max_ratio]; ``floor(r * N)`` points chosen
    uniformly without replacement are removed (at least one point always survives) and the
    others keep their order. The cloud therefore **shrinks**: the output has between
    ``N - floor(max_ratio * N)`` and N points, and no point is repeated. :func:`collate`
    pads such ragged batches and adds ``lengths``.

    This replaces the common recipe that overwrites dropped points with point 0 to keep N
    fixed: it creates duplicates, which break farthest point sampling and KNN (zero
    distances, repeated neighbours). When a model needs a fixed N, follow with
    ``Resample(n)``: with n no larger than the survivors it stays duplicate-free; above,
    duplicates are unavoidable and ``Resample`` makes them as few and even as possible.

    Args:
        max_ratio: largest fraction of points removed, in [0, 1) (default 0.875, PointNet++).
    """

    random = True

    def __init__(self, max_ratio: float = 0.875):
        self.max_ratio = V.check_float("max_ratio", max_ratio, low=0.0, high=1.0, high_open=True)

    def _draw(self, sample, rng):
        n = len(sample["pos"])
        ratio = rng.uniform(0.0, self.max_ratio)
        n_drop = min(int(ratio * n), n - 1)
        dropped = rng.choice(n, size=n_drop, replace=False)
        keep = np.ones(n, dtype=bool)
        keep[dropped] = False
        return np.flatnonzero(keep)

    def _apply(self, sample, keep):
        return select_points(sample, keep)


class Shuffle(Transform):
    """Permute the points at random (the same permutation for every per-point field)."""

    random = True

    def _draw(self, sample, rng):
        return rng.permutation(len(sample["pos"]))

    def _apply(self, sample, perm):
        return select_points(sample, perm)


class Resample(Transform):
    """Resample the cloud to exactly ``n`` points.

    - N >= n: a uniformly random subset of n distinct points, kept in their original order
      (no duplicates).
    - N < n: all N points, in order, followed by ``n - N`` extra copies drawn as evenly as
      possible: each full round of N extras repeats every point once, and the remainder is
      drawn without replacement. Every point then appears ``n // N`` or ``n // N + 1`` times;
      duplicates are unavoidable here.

    Follow with ``Shuffle()`` when the order must be random.

    Args:
        n: number of points of the output, >= 1.
    """

    random = True

    def __init__(self, n: int):
        self.n = V.check_int("n", n, low=1)

    def _draw(self, sample, rng):
        size = len(sample["pos"])
        if size >= self.n:
            return np.sort(rng.choice(size, size=self.n, replace=False))
        rounds, rest = divmod(self.n - size, size)
        extra = rng.choice(size, size=rest, replace=False)
        return np.concatenate([np.tile(np.arange(size), rounds + 1), extra])

    def _apply(self, sample, index):
        return select_points(sample, index)
