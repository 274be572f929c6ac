"""One input cloud turned into the model's input, as training and ``eval`` fed it.

Steps, in order (each one that changes the input adds a note to the result):

1. **N points.** A mesh is sampled by area (:func:`pointabstract.data.files.sample_shape`, N
   points with the triangles' normals, seeded with the run's seed). A cloud of exactly N points
   is used as it is. A larger cloud is reduced to N by farthest point sampling from its first
   point (``ops.farthest_point_sample`` through the loaders' ``point_indices``). A smaller one
   is refused below :func:`minimum_points` (a quarter of N) and otherwise filled up to N with
   repeated points (``point_indices(undersized="repeat")``, seeded).
2. **Normals**, when the model was trained with them (``data.use_normals``): from the file or
   the array's columns 4-6, the mesh's triangles; a cloud without any is refused.
3. **Up axis.** The built-in data, ModelNet40's HDF5 / resampled layouts and ShapeNetPart have
   y up; ModelNet's OFF meshes, CAD exports and scans often have z up. With ``up="z"`` the
   points (and normals) are turned by the exact rotation :data:`UP_ROTATIONS` ``["z"]``,
   ``(x, y, z) -> (x, z, -y)``, so the file's z axis points along the model's y; outputs are
   turned back. ``up="y"`` (the default) keeps the axes as they are.
4. **Frame**: the one the model was trained in (:func:`training_frame`). ``"unit_sphere"``
   centres and scales the points into the unit sphere with
   :class:`~pointabstract.data.NormalizeUnitSphere` (for reconstruction it is the task's own
   transform, ``task.transform(train=False)``); ``"none"`` feeds them as given, as ``eval`` feeds
   a dataset sample. The centre and radius are kept, so outputs are mapped back into the input's
   own coordinates.

**Precision.** A float64 input (a file storing doubles or text, a float64 array) stays float64
through every step above: farthest point sampling ranks the points in their own unit sphere, the
rotation and the frame are computed in float64, and only the model's input ``pos`` is cast to
float32, after centring and scaling. ``seen`` and every result mapped back
(:meth:`Prepared.to_input_frame`) are in the input's precision, so a scan at UTM coordinates
(x 512,345 m, y 5,412,345 m, where float32 steps by 0.03 m / 0.5 m) gets the prediction of the
same scan at the origin. A model input that float32 cannot hold (beyond its range, or
coordinates whose squares overflow it; :func:`check_model_input`) is refused naming the input.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import _validate as V
from ..data import NormalizeUnitSphere, point_indices
from .inputs import Cloud

__all__ = ["NORMALIZE", "Prepared", "UP_ROTATIONS", "check_model_input", "minimum_points", "prepare",
           "training_frame"]

NORMALIZE = ("unit_sphere", "none")
# the input's up axis -> the rotation R taking it to the model's y-up frame (p -> p @ R.T); exact
UP_ROTATIONS = {"y": np.eye(3), "z": np.array([[1.0, 0, 0], [0, 0, 1], [0, -1, 0]])}
# datasets whose samples reach a classifier / part segmenter in the files' own coordinates: the
# folder dataset (data/datasets/folder.py) samples the user's files as stored, with no transform
_AS_STORED = ("folder",)


def training_frame(config) -> str:
    """The frame a run's model was trained in (``"unit_sphere"`` or ``"none"``), from its config.

    Reconstruction normalises every cloud into the unit sphere (its task's transform). Classifiers
    and part segmenters apply no transform: on the built-in synthetic set, ModelNet40 (HDF5,
    resampled) and ShapeNetPart the stored shapes already lie in the unit sphere, so a file in its
    own units is brought there (``"unit_sphere"``); on ``data.dataset=folder`` they learned the
    files' own coordinates, so files are fed as they are (``"none"``).
    """
    if config.task != "reconstruction" and config.data.dataset in _AS_STORED:
        return "none"
    return "unit_sphere"


@dataclass
class Prepared:
    """One input ready for the model."""

    cloud: Cloud
    pos: np.ndarray  # (N, 3) float32 in the model's frame
    normal: np.ndarray | None  # (N, 3) float32 when the model takes normals
    seen: np.ndarray  # (N, 3) the same N points in the input's coordinates and precision
    centre: np.ndarray  # (3,) float64: seen = (pos * radius + centre) @ rotation
    radius: float
    notes: list[str] = field(default_factory=list)
    rotation: np.ndarray = field(default_factory=lambda: np.eye(3))  # (3, 3): model axes = input @ rotation.T

    def to_input_frame(self, points: np.ndarray) -> np.ndarray:
        """(M, 3) points of the model's frame in the input's coordinates, in the input's precision
        (float64 arithmetic; the dtype of :attr:`seen`)."""
        turned = np.asarray(points, dtype=np.float64) * self.radius + self.centre
        return (turned @ self.rotation).astype(self.seen.dtype)


MESH_POINTS = 2048  # points sampled on a mesh for a model of every stored point (folder's points_per_shape)


def minimum_points(num_points: int | None) -> int:
    """The fewest points a cloud may have for a model of N points: a quarter of N (at least 1);
    below it, repeating points would make up most of what the model sees. 1 for None (a model
    trained on every stored point sees each input at its own size)."""
    return 1 if num_points is None else max(1, num_points // 4)


def prepare(cloud: Cloud, *, num_points: int, use_normals: bool, transform, seed: int,
            up: str = "y") -> Prepared:
    """``cloud`` as the model's input (see the module docstring); ``transform`` is the frame's
    transform (a :class:`~pointabstract.data.NormalizeUnitSphere` or a Compose holding one) or
    None for ``normalize="none"``; ``up`` the input's up axis (a key of :data:`UP_ROTATIONS`).

    Raises:
        ValueError: naming the cloud: too few points, no normals for a model that needs them.
    """
    V.check_choice("up", up, UP_ROTATIONS, note=" (the input's up axis)")
    pos, normal, notes = _pick(cloud, num_points, seed)
    if use_normals and normal is None:
        raise ValueError(f"{cloud.name}: the model was trained with normals (data.use_normals) and this "
                         "cloud has none (give x y z nx ny nz columns, or a mesh)")
    rotation = UP_ROTATIONS[up]

    def turn(a: np.ndarray) -> np.ndarray:  # the exact rotation in float64, kept in a's dtype; y up: as is
        return a if up == "y" else (a.astype(np.float64) @ rotation.T).astype(a.dtype)

    turned = turn(pos)
    sample = {"pos": turned, **({"normal": turn(normal)} if use_normals else {})}
    if up != "y":
        notes.append(f"{up} up: turned so that {up} points along the model's y axis")
    centre, radius = (np.zeros(3), 1.0) if transform is None else NormalizeUnitSphere.frame(turned)
    if transform is not None:
        sample = transform(sample)  # float64 in, float64 arithmetic and out (the transforms keep dtypes)
    model_pos = check_model_input(cloud.name, sample["pos"], normalized=transform is not None)
    return Prepared(cloud, model_pos, sample.get("normal"), pos, centre, radius, [*cloud.notes, *notes],
                    rotation)


def check_model_input(name: str, pos: np.ndarray, *, normalized: bool) -> np.ndarray:
    """``pos`` (N, 3) in the model's frame as the model's float32 input; ValueError naming ``name``
    when float32 cannot hold it: a value beyond float32's range, or coordinates whose squares
    (the distances and normalisations every model computes) overflow float32
    (:func:`pointabstract._validate.square_limit`). With ``normalized`` (the unit-sphere frame)
    neither can happen."""
    from .._validate import square_limit

    extent = float(np.abs(pos).max()) if len(pos) else 0.0
    limit = square_limit(np.float32)
    if extent > limit:
        beyond = extent > float(np.finfo(np.float32).max)
        what = "beyond float32's range" if beyond else "whose squares overflow float32"
        hint = "" if normalized else "; normalize='unit_sphere' brings it into the models' unit sphere"
        raise ValueError(f"{name}: coordinates up to {extent:.3g} in the model's frame, {what} (the model "
                         f"computes squared distances in float32: |coordinates| must stay below "
                         f"{limit:.3g}){hint}")
    return np.ascontiguousarray(pos, dtype=np.float32)


def _pick(cloud: Cloud, n: int | None, seed: int) -> tuple[np.ndarray, np.ndarray | None, list[str]]:
    """The N points (and normals) the model sees, in the input's coordinates, and what was done
    (N None: every point of a cloud; a mesh gets the points data.dataset=folder caches of one)."""
    rng = np.random.default_rng(seed)
    if n is None and not cloud.is_mesh:
        n = len(cloud.points)
    n = MESH_POINTS if n is None else n
    if cloud.is_mesh:
        from ..data.files import sample_shape

        pos, normal = sample_shape(cloud.shape, n, rng=rng)  # in the mesh's precision
        return pos, normal, [f"mesh of {len(cloud.points)} vertices: {n} points sampled by area (seed "
                             f"{seed})"]
    v = len(cloud.points)
    if v < minimum_points(n):
        raise ValueError(f"{cloud.name}: has {v} points, fewer than the {minimum_points(n)} this model needs "
                         f"(a quarter of its {n} input points)")
    if v == n:
        idx, notes = np.arange(n), []
    elif v > n:
        centre, radius = NormalizeUnitSphere.frame(cloud.points)  # FPS ranks alike after a shift and scale,
        idx = point_indices(v, n, sampling="fps", pos=(cloud.points - centre) / radius)  # float32-safe there
        notes = [f"{v} points reduced to the model's {n} by farthest point sampling"]
    else:
        idx = point_indices(v, n, sampling="first", rng=rng, undersized="repeat")
        notes = [f"{v} points, fewer than the model's {n}: {n - v} of them repeated (seed {seed})"]
    normal = None if cloud.normals is None else np.ascontiguousarray(cloud.normals[idx], dtype=np.float32)
    return np.ascontiguousarray(cloud.points[idx]), normal, notes
