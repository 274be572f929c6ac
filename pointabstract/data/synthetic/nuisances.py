"""Scan nuisances of the ``hard`` level, applied to a labelled point pool sampled on a mesh.

Every nuisance *selects* points of the pool (or moves them a little), so each kept point keeps
the part label of the surface point it came from; :func:`apply_nuisances` returns that pool
index (``source``) beside every point, which is how the tests check the labels.

==============  =====================================================================
nuisance        effect (on by default in ``hard``; ``Nuisances(name=False)`` turns it off)
==============  =====================================================================
``broken``      one or two balls of radius 0.1-0.25 cut out of the shape (a broken or
                missing piece)
``partial``     a single-view scan: only the points visible from a random viewpoint at
                distance 2-4 (hidden point removal by a splatting z-buffer, see
                :func:`hidden_point_removal`)
``density``     non-uniform density: points kept with weight ``exp(s * p . v)`` along a
                random direction v, s in [1, 2] (7-55x denser on one side)
``noise``       surface noise of std 0.008-0.02 along the normal plus a third of it in
                every direction (off: 0.004 along the normal, as ``easy``)
``outliers``    0.5-2 % of the points replaced by uniform points in the unit ball, labelled
                like their nearest surface point, with a random unit normal
==============  =====================================================================

The order is broken -> partial -> density (choosing N points) -> noise -> normalisation to the
unit sphere -> outliers. Shapes enter already normalised to the unit sphere.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from ... import _validate as V

__all__ = ["NUISANCES", "Nuisances", "apply_nuisances", "hidden_point_removal", "hidden_point_removal_naive",
           "normalise_unit_sphere"]

_EASY_NOISE = 0.004


@dataclass(frozen=True)
class Nuisances:
    """Which scan nuisances :func:`apply_nuisances` applies (all on: the ``hard`` preset)."""

    broken: bool = True  # cut one or two balls out of the shape
    partial: bool = True  # keep the points visible from one random viewpoint
    density: bool = True  # non-uniform sampling density along a random direction
    noise: bool = True  # strong surface noise instead of the easy level's 0.004
    outliers: bool = True  # replace 0.5-2 % of the points by uniform points in the unit ball


NUISANCES: tuple[str, ...] = tuple(f.name for f in fields(Nuisances))


def normalise_unit_sphere(pos: np.ndarray) -> np.ndarray:
    """Centre (M, 3) points on their bounding-box centre and scale the farthest to norm 1."""
    pos = pos - (pos.min(0) + pos.max(0)) / 2
    return pos / max(np.linalg.norm(pos, axis=1).max(), 1e-12)


def _resolution(m: int) -> int:
    return max(4, int(round(np.sqrt(m / 10))))


def _camera(pos: np.ndarray, viewpoint, resolution: int) -> tuple[np.ndarray, np.ndarray, float]:
    """Pixel (M, 2) and depth (M,) of every point seen by a pinhole camera at ``viewpoint``
    looking at the origin, and the pixel size on the image plane at depth 1; ``resolution``
    pixels span the larger side of the projected cloud."""
    viewpoint = np.asarray(viewpoint, dtype=np.float64)
    forward = -viewpoint / np.linalg.norm(viewpoint)
    helper = np.eye(3)[np.argmin(np.abs(forward))]
    right = np.cross(forward, helper)
    right /= np.linalg.norm(right)
    up = np.cross(right, forward)
    rel = pos - viewpoint
    depth = rel @ forward
    xy = np.stack([rel @ right, rel @ up], axis=1) / depth[:, None]  # (M, 2) image plane
    lo = xy.min(0)
    size = max((xy.max(0) - lo).max(), 1e-12) / resolution
    return np.minimum(((xy - lo) / size).astype(np.int64), resolution - 1), depth, size


def hidden_point_removal(pos: np.ndarray, viewpoint, *, resolution: int | None = None,
                         tolerance: float = 0.02, slope: float = 2.0) -> np.ndarray:
    """Indices (ascending) of the points of ``pos`` (M, 3) visible from ``viewpoint`` (3,).

    A splatting point z-buffer: the points are projected by a pinhole camera at ``viewpoint``
    looking at the origin onto a ``resolution`` x ``resolution`` pixel grid spanning the
    projected cloud, each point covering its pixel and the 8 around it; a point is visible when
    no point covering its pixel is nearer to the camera by more than ``tolerance`` plus
    ``slope`` times its pixel's width at its depth (so a surface seen at an angle does not
    hide itself; the width grows with the depth). The
    viewpoint must lie outside the cloud's bounding sphere about the origin. The default
    resolution, ``round(sqrt(M / 10))`` (at least 4), leaves a few points of the nearest surface
    in every 3 x 3 block, so farther points do not show through the gaps between them.
    """
    pos = np.asarray(pos, dtype=np.float64)
    if pos.ndim != 2 or pos.shape[1] != 3 or len(pos) == 0:
        raise ValueError(f"pos must have shape (M, 3) with M > 0, got {pos.shape}")
    if np.linalg.norm(viewpoint) <= np.linalg.norm(pos, axis=1).max():
        raise ValueError(f"viewpoint must lie outside the cloud's bounding sphere, got {viewpoint}")
    resolution = _resolution(len(pos)) if resolution is None else resolution
    pixel, depth, size = _camera(pos, viewpoint, resolution)
    image = np.full((resolution + 2, resolution + 2), np.inf)  # one pixel of padding all around
    np.minimum.at(image, (pixel[:, 0] + 1, pixel[:, 1] + 1), depth)
    covered = image.copy()  # nearest depth over each pixel's 3 x 3 neighbourhood
    for dx in (-1, 0, 1):
        for dy in (-1, 0, 1):
            covered[1:-1, 1:-1] = np.minimum(covered[1:-1, 1:-1], image[1 + dx:resolution + 1 + dx,
                                                                          1 + dy:resolution + 1 + dy])
    margin = tolerance + slope * size * depth
    return np.flatnonzero(depth <= covered[pixel[:, 0] + 1, pixel[:, 1] + 1] + margin)


def hidden_point_removal_naive(pos: np.ndarray, viewpoint, *, resolution: int | None = None,
                               tolerance: float = 0.02, slope: float = 2.0) -> np.ndarray:
    """Slow reference of :func:`hidden_point_removal`: compares every point with every other."""
    resolution = _resolution(len(pos)) if resolution is None else resolution
    pixel, depth, size = _camera(np.asarray(pos, dtype=np.float64), viewpoint, resolution)
    visible = []
    for i in range(len(depth)):
        margin = tolerance + slope * size * depth[i]
        if not any(np.abs(pixel[j] - pixel[i]).max() <= 1 and depth[j] < depth[i] - margin
                   for j in range(len(depth))):
            visible.append(i)
    return np.array(visible, dtype=np.int64)


def _random_direction(rng: np.random.Generator) -> np.ndarray:
    v = rng.normal(size=3)
    return v / np.linalg.norm(v)


def apply_nuisances(pos: np.ndarray, normal: np.ndarray, part: np.ndarray, rng: np.random.Generator, *,
                    num_points: int, nuisances: Nuisances | None = None) -> dict:
    """Turn a labelled pool into one scan of ``num_points`` points.

    Args:
        pos: (M, 3) pool points, already normalised to the unit sphere (M well above N).
        normal: (M, 3) unit normals; ``part``: (M,) part ids.
        rng: the only source of randomness.
        num_points: N, points returned (drawn with replacement only if fewer than N survive).
        nuisances: which nuisances to apply (None: all).

    Returns:
        ``{"pos": (N, 3) float32 in the unit sphere, "normal": (N, 3) float32, "part": (N,) int64,
        "source": (N,) int64, "candidates": (K,) int64}``: ``source[i]`` is the pool index of
        point i (-1 for an outlier, whose part is that of its nearest non-outlier point);
        ``candidates`` the pool indices left after the broken pieces and the partial view.
        The points come in random order.
    """
    pos = np.asarray(pos, dtype=np.float64)
    if pos.ndim != 2 or pos.shape[1] != 3 or len(pos) == 0:
        raise ValueError(f"pos must have shape (M, 3) with M > 0, got {pos.shape}")
    if np.shape(normal) != pos.shape or np.shape(part) != pos.shape[:1]:
        raise ValueError(f"normal must have shape {pos.shape} and part {pos.shape[:1]}, got "
                         f"{np.shape(normal)} and {np.shape(part)}")
    V.check_int("num_points", num_points, low=1)
    nuisances = Nuisances() if nuisances is None else nuisances
    if not isinstance(nuisances, Nuisances):
        raise TypeError(f"nuisances must be a Nuisances, got {type(nuisances).__name__}")
    normal, part = np.asarray(normal), np.asarray(part)
    keep = np.arange(len(pos))
    if nuisances.broken:
        for _ in range(rng.integers(1, 3)):
            centre, radius = pos[rng.integers(len(pos))], rng.uniform(0.1, 0.25)
            cut = keep[((pos[keep] - centre) ** 2).sum(1) >= radius ** 2]
            keep = cut if len(cut) >= len(pos) // 4 else keep
    if nuisances.partial:
        viewpoint = _random_direction(rng) * rng.uniform(2.0, 4.0)
        keep = keep[hidden_point_removal(pos[keep], viewpoint)]
    if nuisances.density:  # weighted sampling without replacement (Gumbel top-k), with when short
        log_weight = rng.uniform(1.0, 2.0) * pos[keep] @ _random_direction(rng)
        if len(keep) > num_points:
            source = keep[np.argsort(log_weight + rng.gumbel(size=len(keep)))[-num_points:]]
        else:
            weight = np.exp(log_weight - log_weight.max())
            source = rng.choice(keep, size=num_points, p=weight / weight.sum())
    else:
        source = rng.choice(keep, size=num_points, replace=len(keep) < num_points)
    out_pos, out_normal = pos[source].astype(np.float64), normal[source].astype(np.float64)
    if nuisances.noise:
        sigma = rng.uniform(0.008, 0.02)
        along = out_normal * rng.normal(0.0, sigma, (num_points, 1))
        out_pos += along + rng.normal(0.0, sigma / 3, (num_points, 3))
    else:
        out_pos += out_normal * rng.normal(0.0, _EASY_NOISE, (num_points, 1))
    out_pos = normalise_unit_sphere(out_pos)
    out_part = part[source].astype(np.int64)
    if nuisances.outliers:
        count = int(rng.integers(num_points // 200, num_points // 50 + 1))
        where = rng.choice(num_points, size=count, replace=False)
        inliers = np.setdiff1d(np.arange(num_points), where)
        direction = rng.normal(size=(count, 3))
        direction /= np.linalg.norm(direction, axis=1, keepdims=True)
        out_pos[where] = direction * rng.random((count, 1)) ** (1 / 3)
        out_normal[where] = rng.normal(size=(count, 3))
        out_normal[where] /= np.linalg.norm(out_normal[where], axis=1, keepdims=True)
        from scipy.spatial import cKDTree  # here: importing the data package needs no scipy (~1 s)

        _, nearest = cKDTree(out_pos[inliers]).query(out_pos[where])
        out_part[where] = out_part[inliers[nearest]]
        source = source.copy()
        source[where] = -1
    order = rng.permutation(num_points) if nuisances.density else slice(None)  # top-k comes sorted
    return {"pos": out_pos[order].astype(np.float32), "normal": out_normal[order].astype(np.float32),
            "part": out_part[order], "source": source[order].astype(np.int64), "candidates": keep}
