"""Area-weighted sampling of points (with normals) on triangle meshes."""

from __future__ import annotations

import numpy as np


def triangle_areas_normals(vertices: np.ndarray, faces: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Areas (F,) and unit normals (F, 3) of triangles; degenerate faces get area 0, normal 0.

    Args:
        vertices: (V, 3) float vertex positions.
        faces: (F, 3) int vertex indices of each triangle (counter-clockwise seen from outside).
    """
    a, b, c = (vertices[faces[:, i]] for i in range(3))
    cross = np.cross(b - a, c - a)
    norm = np.linalg.norm(cross, axis=1)
    normals = np.divide(cross, norm[:, None], out=np.zeros_like(cross), where=norm[:, None] > 0)
    return 0.5 * norm, normals


def sample_surface(vertices: np.ndarray, faces: np.ndarray, n: int, rng: np.random.Generator,
                   *, face_labels: np.ndarray | None = None):
    """Sample ``n`` points uniformly by area on a triangle mesh.

    Each point picks a triangle with probability proportional to its area, then a uniform
    position inside it (square-root barycentric trick); its normal is the triangle's.

    Args:
        vertices: (V, 3) float vertex positions.
        faces: (F, 3) int triangles.
        n: number of points.
        rng: numpy Generator (the only source of randomness).
        face_labels: optional (F,) int label per triangle (e.g. a part id) to carry along.

    Returns:
        points (N, 3) float32, normals (N, 3) float32 and, with ``face_labels``, labels (N,) int64.

    Raises:
        ValueError: when the mesh has no triangle of positive area.
    """
    vertices = np.asarray(vertices, dtype=np.float64)
    faces = np.asarray(faces, dtype=np.int64)
    if faces.ndim != 2 or faces.shape[1] != 3 or len(faces) == 0:
        raise ValueError(f"faces must have shape (F, 3) with F > 0, got {faces.shape}")
    areas, normals = triangle_areas_normals(vertices, faces)
    total = areas.sum()
    if not total > 0 or not np.isfinite(total):
        raise ValueError(f"mesh has no triangle of positive finite area (total area {total})")
    chosen = rng.choice(len(faces), size=n, p=areas / total)
    u = np.sqrt(rng.random(n))
    v = rng.random(n)
    a, b, c = (vertices[faces[chosen, i]] for i in range(3))
    points = (1 - u)[:, None] * a + (u * (1 - v))[:, None] * b + (u * v)[:, None] * c
    out = (points.astype(np.float32), normals[chosen].astype(np.float32))
    if face_labels is not None:
        out = (*out, np.asarray(face_labels, dtype=np.int64)[chosen])
    return out
