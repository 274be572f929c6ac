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


class _Rows:
    """The file's tokens grouped by line: ``start[r]`` the first token of row r (a line with
    tokens), ``length[r]`` its token count, ``kind[r]`` 1 for ``v``, 2 for ``vn``, 3 for ``f``, 0 else."""

    def __init__(self, buf: np.ndarray):
        from .text_kernels import tokenize

        self.buf, self.tokens = buf, tokenize(buf, comment=b"#")
        line = self.tokens.line
        new = np.ones(len(line), bool)
        new[1:] = line[1:] != line[:-1]
        self.start = np.flatnonzero(new)
        self.length = np.diff(np.append(self.start, len(line)))
        size = self.tokens.ends[self.start] - self.tokens.starts[self.start]
        head = buf[self.tokens.starts[self.start]]
        second = buf[np.minimum(self.tokens.starts[self.start] + 1, len(buf) - 1)]
        self.kind = np.select([(size == 1) & (head == 118), (size == 2) & (head == 118) & (second == 110),
                               (size == 1) & (head == 102)], [1, 2, 3], 0)

    def number(self, row: int) -> int:
        return int(self.tokens.line[self.start[row]]) + 1

    def text(self, row: int) -> str:
        """The row after its keyword."""
        tokens, first = self.tokens, self.start[row] + min(1, self.length[row] - 1)
        last = self.start[row] + self.length[row] - 1
        return bytes(self.buf[tokens.starts[first]:tokens.ends[last]]).decode("latin-1")

    def token(self, k: int) -> str:
        return bytes(self.buf[self.tokens.starts[k]:self.tokens.ends[k]]).decode("latin-1")


def _floats(path: Path, rows: _Rows, kind: int, what: str) -> np.ndarray:
    """(R, 3) float64 of the first three values of each row of ``kind``; an error names the bad line."""
    from .text_kernels import token_floats

    picked = np.flatnonzero(rows.kind == kind)
    short = picked[rows.length[picked] < 4]
    if len(short):
        raise ValueError(f"{path}:{rows.number(short[0])}: bad {what} line {rows.text(short[0])[:60]!r}: "
                         "expected 3 numbers")
    row_of = np.repeat(picked, 3)

    def where(k):
        row = int(row_of[np.searchsorted(index, k)])
        return f"{path}:{rows.number(row)}: bad {what} line {rows.text(row)[:60]!r}: expected 3 numbers"

    index = (rows.start[picked][:, None] + np.arange(1, 4)).ravel()
    return token_floats(rows.buf, rows.tokens, index, where=where).reshape(-1, 3)


def _polygons(path: Path, rows: _Rows, n_vertices: int, n_normals: int) -> tuple[np.ndarray, np.ndarray]:
    """(F, 3) triangles and (F, 3) normal indices (-1: none) of the face lines."""
    from .polygons import fan_triangles, gather_lists
    from .text_kernels import obj_corners

    faces = np.flatnonzero(rows.kind == 3)
    sizes = rows.length[faces] - 1
    index = gather_lists(rows.start[faces] + 1, sizes)  # the corner tokens, face after face
    corners, bad = obj_corners(rows.buf, rows.tokens, index)
    face_of = np.repeat(np.arange(len(faces)), sizes)
    if bad >= 0:
        row = faces[np.searchsorted(rows.start[faces], bad, side="right") - 1]
        raise ValueError(f"{path}:{rows.number(row)}: bad face line {rows.text(row)[:60]!r}: expected "
                         "corners 'i', 'i/t', 'i//n' or 'i/t/n'")
    short = np.flatnonzero(sizes < 3)
    if len(short):
        raise ValueError(f"{path}:{rows.number(faces[short[0]])}: a face needs at least 3 corners, got "
                         f"{rows.text(faces[short[0]])[:60]!r}")
    before = np.cumsum(rows.kind == 1)[faces][face_of], np.cumsum(rows.kind == 2)[faces][face_of]
    vertex = np.where(corners[:, 0] > 0, corners[:, 0] - 1, before[0] + corners[:, 0])
    normal = np.where(corners[:, 2] > 0, corners[:, 2] - 1,
                      np.where(corners[:, 2] < 0, before[1] + corners[:, 2], -1))
    outside = np.flatnonzero((vertex < 0) | (vertex >= n_vertices))
    if len(outside):
        row, k = faces[face_of[outside[0]]], outside[0]
        raise ValueError(f"{path}:{rows.number(row)}: face corner {rows.token(index[k])!r} refers to a "
                         f"missing vertex (the file has {n_vertices} vertices)")
    triangles, _ = fan_triangles(sizes, vertex)
    normal_ids, _ = fan_triangles(sizes, np.where(normal >= n_normals, -1, normal))
    return triangles, normal_ids


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
    rows = _Rows(np.fromfile(path, dtype=np.uint8))
    vertices = _floats(path, rows, 1, "vertex")
    normals = _floats(path, rows, 2, "normal")
    faces, normal_ids = _polygons(path, rows, len(vertices), len(normals))
    return vertices, _vertex_normals(faces, normal_ids, normals, len(vertices)), faces
