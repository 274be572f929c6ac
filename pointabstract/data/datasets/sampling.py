"""Which of a shape's stored points a loader returns: the ``sampling`` argument of every loader.

``"first"`` keeps the first M points, ``"random"`` draws M without replacement with the sample's
generator, ``"fps"`` runs farthest point sampling from point 0; a shape with fewer than M points
is an error unless ``undersized="repeat"``. Shared by the ModelNet and ShapeNet loaders.
"""

from __future__ import annotations

import numpy as np

from ... import _validate as V

__all__ = ["SAMPLINGS", "check_sampling", "point_indices"]

SAMPLINGS = ("first", "random", "fps")


def check_sampling(sampling: str, num_points: int | None = None, undersized: str = "error") -> None:
    """Validate the arguments every loader passes on to :func:`point_indices`."""
    V.check_choice("sampling", sampling, SAMPLINGS)
    V.check_int("num_points", num_points, low=1, allow_none=True)
    V.check_choice("undersized", undersized, ("error", "repeat"))


def point_indices(n: int, num_points: int | None, *, sampling: str = "first",
                  rng: np.random.Generator | None = None, pos: np.ndarray | None = None,
                  source: str = "sample", undersized: str = "error") -> np.ndarray:
    """Indices of ``num_points`` of ``n`` stored points.

    Args:
        n: number of stored points N.
        num_points: M <= N points to keep; None keeps all N in their stored order.
        sampling: ``"first"`` (the first M, deterministic), ``"random"`` (uniformly without
            replacement, drawn with ``rng``) or ``"fps"`` (farthest point sampling from point 0,
            deterministic; needs ``pos``).
        rng: the sample's generator (for ``"random"`` and ``undersized="repeat"``).
        pos: (N, 3) coordinates, for ``"fps"``.
        source: the file / sample named in the error raised when N < M.
        undersized: when N < M, ``"error"`` raises, ``"repeat"`` returns all N points in a
            random order followed by M - N of them drawn again uniformly (with ``rng``).

    Returns:
        idx: (M,) int64; ``idx[j]`` indexes the stored points; no index repeats unless N < M
        and ``undersized="repeat"``.
    """
    check_sampling(sampling, undersized=undersized)
    if rng is None and (sampling == "random" or undersized == "repeat"):
        raise ValueError(f"rng is needed for sampling={sampling!r} / undersized={undersized!r}")
    if sampling == "fps" and pos is None:
        raise ValueError("pos (N, 3) is needed for sampling='fps'")
    if num_points is None:
        return np.arange(n)
    if n < num_points:
        if undersized == "repeat" and n > 0:
            return np.concatenate([rng.permutation(n), rng.integers(0, n, num_points - n)])
        raise ValueError(f"{source}: has {n} points, fewer than num_points={num_points} (points "
                         "are repeated only with undersized='repeat'; or lower num_points)")
    if sampling == "first":
        return np.arange(num_points)
    if sampling == "fps":
        import torch

        from ...ops import farthest_point_sample

        cloud = torch.from_numpy(np.ascontiguousarray(pos, dtype=np.float32))[None]
        return farthest_point_sample(cloud, num_points)[0].numpy()
    return rng.choice(n, size=num_points, replace=False)  # "random"
