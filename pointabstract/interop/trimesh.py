"""A ``trimesh.Trimesh`` (or a ``Scene`` of meshes) -> a point-cloud sample by area-weighted sampling.

Uses :func:`pointabstract.data.sample_surface`, the sampler the synthetic data set is made
with, so a mesh loaded with trimesh (``trimesh.load("chair.obj")``) gives samples distributed
like the built-in ones. Needs trimesh (extra ``data``).
"""

from __future__ import annotations

import numpy as np

from .. import _validate as V

__all__ = ["sample_trimesh"]


def sample_trimesh(mesh, n: int, *, rng: np.random.Generator | int | None = None,
                   face_labels=None) -> dict:
    """Sample ``n`` points uniformly by area on a mesh's surface.

    Args:
        mesh: ``trimesh.Trimesh``, or a ``trimesh.Scene`` (its meshes are concatenated with
            their scene transforms applied).
        n: number of points, >= 1.
        rng: numpy Generator or seed (the only source of randomness).
        face_labels: optional (F,) int label per face (e.g. part ids), carried to the points.

    Returns:
        sample dict: ``pos`` (N, 3) float32, ``normal`` (N, 3) float32 (the faces' unit
        normals) and, with ``face_labels``, ``part`` (N,) int64.
    """
    import trimesh

    from ..data import sample_surface

    if isinstance(mesh, trimesh.Scene):
        mesh = mesh.to_geometry() if hasattr(mesh, "to_geometry") else mesh.dump(concatenate=True)
    if not isinstance(mesh, trimesh.Trimesh):
        raise TypeError(f"mesh must be a trimesh.Trimesh or trimesh.Scene, got {type(mesh).__name__}")
    V.check_int("n", n, low=1)
    if face_labels is not None:
        face_labels = np.asarray(face_labels)
        if face_labels.shape != (len(mesh.faces),):
            raise ValueError(f"face_labels must have shape (F,) = ({len(mesh.faces)},), "
                             f"got {face_labels.shape}")
    rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    out = sample_surface(np.asarray(mesh.vertices), np.asarray(mesh.faces), int(n), rng,
                         face_labels=face_labels)
    sample = {"pos": out[0], "normal": out[1]}
    if face_labels is not None:
        sample["part"] = out[2]
    return sample
