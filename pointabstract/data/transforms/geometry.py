"""Geometric transforms: normalisation, scale, translation, rotation, jitter.

Each moves ``pos`` and, where the map changes directions, ``normal`` consistently (rotations
rotate normals; an anisotropic scale maps them by its inverse transpose and renormalises).
Other fields pass through (copied). Arithmetic is done in float64 and written back in the
input's dtype (float32 stays float32).
"""

from __future__ import annotations

import numpy as np

from ... import _validate as V
from .base import Transform

__all__ = [
    "Jitter",
    "NormalizeUnitCube",
    "NormalizeUnitSphere",
    "RandomRotate",
    "RandomSO3Rotation",
    "RandomScale",
    "RandomTranslate",
]

_AXES = ("x", "y", "z")


def _with_pos(sample: dict, pos: np.ndarray, normal: np.ndarray | None = None) -> dict:
    """A new sample with ``pos`` (and ``normal`` when given) replaced, in the input dtypes."""
    out = dict(sample)
    out["pos"] = pos.astype(sample["pos"].dtype)
    if normal is not None and "normal" in sample:
        out["normal"] = normal.astype(sample["normal"].dtype)
    return out


def _unit_rows(v: np.ndarray) -> np.ndarray:
    """Rows of ``v`` (N, 3) scaled to unit length; zero rows (no normal) stay zero."""
    norm = np.linalg.norm(v, axis=1, keepdims=True)
    return np.divide(v, norm, out=np.zeros_like(v), where=norm > 0)


def _rotated(sample: dict, rot: np.ndarray) -> dict:
    """Rotate ``pos`` and ``normal`` by the (3, 3) matrix ``rot`` (points are rows: ``p @ rot.T``)."""
    pos = sample["pos"].astype(np.float64) @ rot.T
    normal = sample["normal"].astype(np.float64) @ rot.T if "normal" in sample else None
    return _with_pos(sample, pos, normal)


class NormalizeUnitSphere(Transform):
    """Centre the cloud at its centroid and divide by the largest point norm.

    Afterwards the centroid is the origin and the farthest point lies on the unit sphere.
    Normals are unchanged (translation and isotropic scale keep directions). A cloud whose
    points all coincide is only centred.
    """

    @staticmethod
    def frame(pos: np.ndarray) -> tuple[np.ndarray, float]:
        """``(centre (3,) float64, radius)`` of ``pos`` (N, 3): the transform maps ``p`` to
        ``(p - centre) / radius`` (radius 1 when the points coincide), so ``q * radius + centre``
        maps a point of the normalised frame back (what ``pointabstract predict`` writes)."""
        pos = np.asarray(pos, dtype=np.float64)
        centre = pos.mean(axis=0)
        radius = float(np.linalg.norm(pos - centre, axis=1).max())
        return centre, radius if radius > 0 else 1.0

    def _apply(self, sample, params):
        centre, radius = self.frame(sample["pos"])
        return _with_pos(sample, (sample["pos"].astype(np.float64) - centre) / radius)


class NormalizeUnitCube(Transform):
    """Fit the cloud into [-1, 1]^3 keeping its aspect ratio.

    The bounding box is centred at the origin and scaled uniformly by half its longest side:
    the longest side then spans exactly [-1, 1], the others are centred inside it (the
    aspect ratio is kept, so only one axis touches the cube's faces). Normals are unchanged.
    A cloud whose points all coincide is only centred.
    """

    def _apply(self, sample, params):
        pos = sample["pos"].astype(np.float64)
        low, high = pos.min(axis=0), pos.max(axis=0)
        half = (high - low).max() / 2
        pos = pos - (low + high) / 2
        return _with_pos(sample, pos / half if half > 0 else pos)


class RandomScale(Transform):
    """Multiply coordinates by a random factor drawn uniformly in [low, high].

    With ``anisotropic=True`` (the DGCNN / PointNeXt recipe) each axis gets its own factor
    ``s = (sx, sy, sz)``; normals then map by the inverse transpose ``n / s`` and are
    renormalised, so they stay perpendicular to the scaled surface. With
    ``anisotropic=False`` one factor scales all axes and normals are unchanged.

    Args:
        low: smallest factor, > 0 (default 2/3).
        high: largest factor, >= low (default 3/2).
        anisotropic: one factor per axis (True) or one for all (False).
    """

    random = True

    def __init__(self, low: float = 2 / 3, high: float = 3 / 2, *, anisotropic: bool = True):
        self.low = V.check_float("low", low, low=0.0, low_open=True)
        self.high = V.check_float("high", high, low=self.low)
        self.anisotropic = V.check_bool("anisotropic", anisotropic)

    def _draw(self, sample, rng):
        return rng.uniform(self.low, self.high, size=3 if self.anisotropic else 1)

    def _apply(self, sample, scale):
        pos = sample["pos"].astype(np.float64) * scale
        normal = None
        if self.anisotropic and "normal" in sample:
            normal = _unit_rows(sample["normal"].astype(np.float64) / scale)
        return _with_pos(sample, pos, normal)


class RandomTranslate(Transform):
    """Shift the cloud by a random offset, each axis uniform in [-max_shift, max_shift].

    Normals are unchanged. The default 0.2 is the DGCNN / PointNeXt recipe.

    Args:
        max_shift: largest offset per axis, >= 0.
    """

    random = True

    def __init__(self, max_shift: float = 0.2):
        self.max_shift = V.check_float("max_shift", max_shift, low=0.0)

    def _draw(self, sample, rng):
        return rng.uniform(-self.max_shift, self.max_shift, size=3)

    def _apply(self, sample, shift):
        return _with_pos(sample, sample["pos"].astype(np.float64) + shift)


def axis_rotation(axis: str, angle: float) -> np.ndarray:
    """(3, 3) right-handed rotation by ``angle`` radians about ``axis`` ("x", "y" or "z")."""
    k = _AXES.index(axis)
    i, j = (k + 1) % 3, (k + 2) % 3  # the plane rotated: x -> y about z, y -> z about x, z -> x about y
    c, s = np.cos(angle), np.sin(angle)
    rot = np.eye(3)
    rot[i, i], rot[i, j], rot[j, i], rot[j, j] = c, -s, s, c
    return rot


class RandomRotate(Transform):
    """Rotate about a named up axis by an angle uniform in [-max_angle, max_angle].

    Points and normals rotate together. ModelNet40 in the PointNet HDF5 layout and
    ShapeNetPart have y up; meshes from other sources often have z up.

    Args:
        axis: "x", "y" or "z" (default "y").
        max_angle: largest angle in radians, in [0, pi]; pi (the default) draws any rotation
            about the axis uniformly.
    """

    random = True

    def __init__(self, axis: str = "y", *, max_angle: float = np.pi):
        self.axis = V.check_choice("axis", axis, _AXES)
        self.max_angle = V.check_float("max_angle", max_angle, low=0.0, high=float(np.pi))

    def _draw(self, sample, rng):
        return axis_rotation(self.axis, rng.uniform(-self.max_angle, self.max_angle))

    def _apply(self, sample, rot):
        return _rotated(sample, rot)


def random_so3(rng: np.random.Generator) -> np.ndarray:
    """(3, 3) rotation drawn uniformly (Haar measure) on SO(3).

    A 4-vector of independent standard normals, normalised, is a uniform unit quaternion;
    q and -q give the same rotation, so the rotation is uniform too.
    """
    q = rng.standard_normal(4)
    w, x, y, z = q / np.linalg.norm(q)  # the norm is 0 with probability 0
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


class RandomSO3Rotation(Transform):
    """Rotate by a rotation drawn uniformly on SO(3) (any orientation); normals rotate too."""

    random = True

    def _draw(self, sample, rng):
        return random_so3(rng)

    def _apply(self, sample, rot):
        return _rotated(sample, rot)


class Jitter(Transform):
    """Add Gaussian noise of std ``sigma`` to every coordinate, clipped to [-clip, clip].

    Positions only: normals are left as they are (the noise is small next to the surface
    features normals describe). The defaults (0.01, 0.05) are the PointNet recipe.

    Args:
        sigma: noise standard deviation, >= 0.
        clip: bound on each noise component, > 0, or None for unclipped noise.
    """

    random = True

    def __init__(self, sigma: float = 0.01, *, clip: float | None = 0.05):
        self.sigma = V.check_float("sigma", sigma, low=0.0)
        self.clip = None if clip is None else V.check_float("clip", clip, low=0.0, low_open=True)

    def _draw(self, sample, rng):
        noise = self.sigma * rng.standard_normal(sample["pos"].shape)
        return noise if self.clip is None else np.clip(noise, -self.clip, self.clip)

    def _apply(self, sample, noise):
        return _with_pos(sample, sample["pos"].astype(np.float64) + noise)
