"""Reading Wavefront OBJ files: vertices, vertex normals and polygon faces.

Read: ``v x y z [w | r g b]`` (the first three values), ``vn nx ny nz`` and ``f`` lines whose
corners are ``i``, ``i/t``, ``i//n`` or ``i/t/n`` (1-based; negative values count back from
the last vertex / normal defined so far, ``-1`` being the latest). Polygons with n > 3 corners
become the n - 2 fan triangles ``(i_1, i_k, i_{k+1})``. Everything else (``vt``, ``o``, ``g``,
``s``, ``usemtl``, ``mtllib``, ``l``, ``p``, comments) is skipped.

A vertex gets a normal when the faces name one for it (``i//n``), or, when no face names any,
the file has exactly one ``vn`` per ``v`` (a point cloud stored as OBJ). If faces name normals
for some vertices only, or two different normals for one vertex, the normals are left out
(``None``): they are per-corner data that one normal per point cannot hold.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["read_obj"]


def _sort_lines(path: Path, text: str):
    """The ``v``, ``vn`` and ``f`` lines as (line number, rest); faces also carry the V and VN
    counts reached so far (for negative indices)."""
    vertices, normals, faces = [], [], []
    for number, line in enumerate(text.splitlines(), start=1):
        head, _, rest = line.strip().partition(" ")
        if "\t" in head:  # tab-separated keyword
            head, _, more = head.partition("\t")
            rest = f"{more} {rest}"
        if head == "v":
            vertices.append((number, rest))
        elif head == "vn":
            normals.append((number, rest))
        elif head == "f":
            faces.append((number, rest, len(vertices), len(normals)))
    return vertices, normals, faces


def _floats(path: Path, rows: list[tuple[int, str]], what: str) -> np.ndarray:
    """(R, 3) float64 of the first three values of each row; an error names the bad line."""
    try:
        return np.array([rest.split()[:3] for _, rest in rows], dtype=np.float64).reshape(-1, 3)
    except ValueError:
        for number, rest in rows:
            fields = rest.split()[:3]
            try:
                if len(fields) != 3:
                    raise ValueError
                [float(f) for f in fields]
            except ValueError:
                raise ValueError(f"{path}:{number}: bad {what} line {rest[:60]!r}: "
                                 "expected 3 numbers") from None
        raise


def _corner(token: str, count: int, normal_count: int) -> tuple[int, int]:
    """(0-based vertex index, 0-based normal index or -1) of a face corner ``i[/t[/n]]``."""
    parts = token.split("/")
    index = int(parts[0])
    normal = int(parts[2]) if len(parts) > 2 and parts[2] else 0
    vertex = index - 1 if index > 0 else count + index if index < 0 else -1 - count  # 0 is invalid
    if normal > 0:
        normal -= 1
    elif normal < 0:
        normal += normal_count
    else:
        normal = -1
    return vertex, normal


def _plain_triangles(rows: list, n_vertices: int) -> np.ndarray | None:
    """(F, 3) triangles when every face line is ``f i j k`` with positive indices in range, else None
    (the line-by-line parser then handles corners, polygons, negative indices and errors)."""
    try:
        table = np.array([rest.split() for _, rest, _, _ in rows], dtype=np.int64)
    except ValueError:
        return None
    if table.ndim != 2 or table.shape[1] != 3 or (table < 1).any() or (table > n_vertices).any():
        return None
    return table - 1


def _polygons(path: Path, rows: list, n_vertices: int) -> tuple[np.ndarray, np.ndarray]:
    """(F, 3) triangles and (F, 3) normal indices (-1: none) of the face lines."""
    plain = _plain_triangles(rows, n_vertices) if rows else None
    if plain is not None:
        return plain, np.full_like(plain, -1)
    triangles, normal_ids = [], []
    for number, rest, count, normal_count in rows:
        try:
            corners = [_corner(t, count, normal_count) for t in rest.split()]
        except ValueError:
            raise ValueError(f"{path}:{number}: bad face line {rest[:60]!r}: expected corners "
                             "'i', 'i/t', 'i//n' or 'i/t/n'") from None
        if len(corners) < 3:
            raise ValueError(f"{path}:{number}: a face needs at least 3 corners, got {rest[:60]!r}")
        bad = [t for t, (v, _) in zip(rest.split(), corners) if not 0 <= v < n_vertices]
        if bad:
            raise ValueError(f"{path}:{number}: face corner {bad[0]!r} refers to a missing vertex "
                             f"(the file has {n_vertices} vertices)")
        for k in range(1, len(corners) - 1):
            triangles.append((corners[0][0], corners[k][0], corners[k + 1][0]))
            normal_ids.append((corners[0][1], corners[k][1], corners[k + 1][1]))
    return (np.array(triangles, dtype=np.int64).reshape(-1, 3),
            np.array(normal_ids, dtype=np.int64).reshape(-1, 3))


def _vertex_normals(faces: np.ndarray, normal_ids: np.ndarray, normals: np.ndarray,
                    n_vertices: int) -> np.ndarray | None:
    """One normal per vertex when the faces name exactly one for every vertex (see the module)."""
    if not (normal_ids >= 0).any():
        return normals if len(normals) == n_vertices else None
    if (normal_ids < 0).any() or normal_ids.max() >= len(normals):
        return None
    per_vertex = np.full(n_vertices, -1, dtype=np.int64)
    per_vertex[faces.ravel()] = normal_ids.ravel()
    if (per_vertex < 0).any() or (normals[per_vertex[faces.ravel()]] != normals[normal_ids.ravel()]).any():
        return None
    return normals[per_vertex]


def read_obj(path: str | Path) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """Read an OBJ mesh (or a cloud of ``v`` lines).

    Args:
        path: the ``.obj`` file.

    Returns:
        vertices: (V, 3) float64.
        normals: (V, 3) float64 vertex normals, or None (see the module docstring).
        faces: (F, 3) int64 triangles, ``faces[f, j]`` indexes ``vertices``; (0, 3) without faces.

    Raises:
        ValueError: naming the file and line, for an unparsable ``v`` / ``vn`` / ``f`` line, a
            face with fewer than 3 corners or referring to a vertex the file does not have.
    """
    path = Path(path)
    vertex_rows, normal_rows, face_rows = _sort_lines(path, path.read_bytes().decode("latin-1"))
    vertices = _floats(path, vertex_rows, "vertex")
    normals = _floats(path, normal_rows, "normal")
    faces, normal_ids = _polygons(path, face_rows, len(vertices))
    return vertices, _vertex_normals(faces, normal_ids, normals, len(vertices)), faces
