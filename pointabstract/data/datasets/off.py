"""Object File Format (OFF) meshes, as in the original ModelNet archives: read, write, find, sample.

A file is a header line ``OFF``, a counts line ``V F E``, V vertex lines ``x y z`` and F face
lines ``n i_1 ... i_n`` (0-based vertex indices, optionally followed by a colour). The reader
also accepts what the published ModelNet40 files contain besides: the malformed header where
``OFF`` is glued to the counts (``OFF3514 3546 0`` on the first line), Windows line endings,
``#`` comments and blank lines, and polygons with 4 or more corners, which are split into a
fan of triangles ``(i_1, i_k, i_{k+1})``.

The HDF5 cache that samples every mesh of a tree once is in :mod:`.off_cache`.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from ..synthetic.surface import sample_surface

__all__ = ["find_meshes", "read_off", "sample_mesh", "write_off"]

_HEADER = re.compile(r"^(?:ST)?C?N?OFF(?=\s|\d|$)(.*)$")


class _Rows:
    """The tokens of an OFF file (``#`` comments skipped) grouped by line: ``start[r]`` the first
    token of row r (a line holding data), ``length[r]`` its token count."""

    def __init__(self, path: Path):
        from .text_kernels import tokenize

        try:
            self.buf = np.fromfile(path, dtype=np.uint8)
        except OSError as err:
            raise ValueError(f"{path}: cannot read OFF file ({err})") from err
        self.tokens = tokenize(self.buf, comment=b"#")
        line = self.tokens.line
        new = np.ones(len(line), bool)
        new[1:] = line[1:] != line[:-1]
        self.start = np.flatnonzero(new)
        self.length = np.diff(np.append(self.start, len(line)))

    def number(self, row: int) -> int:
        return int(self.tokens.line[self.start[row]]) + 1

    def text(self, row: int) -> str:
        first, last = self.start[row], self.start[row] + self.length[row] - 1
        return bytes(self.buf[self.tokens.starts[first]:self.tokens.ends[last]]).decode("latin-1")


def _parse_counts(path: Path, rows: _Rows, no_faces: bool = False) -> tuple[int, int, int]:
    """(V, F, index of the first vertex row) from the header."""
    if not len(rows.start):
        raise ValueError(f"{path}: empty file (no OFF header)")
    first = rows.text(0)
    match = _HEADER.match(first)
    if match is None:
        raise ValueError(f"{path}:{rows.number(0)}: expected the header 'OFF', got {first[:40]!r}")
    rest, start, number = match.group(1).strip(), 1, rows.number(0)
    if not rest:  # the usual case: counts on the next data line
        if len(rows.start) < 2:
            raise ValueError(f"{path}:{number}: truncated file: no counts line after the header")
        rest, start, number = rows.text(1), 2, rows.number(1)
    try:
        counts = [int(f) for f in rest.split()]
    except ValueError:
        counts = []
    if len(counts) not in (2, 3) or min(counts) < 0:
        raise ValueError(f"{path}:{number}: bad counts line {rest!r}: expected 'V F E', "
                         "non-negative integers")
    n_vertices, n_faces = counts[0], counts[1]
    if n_vertices == 0 or (n_faces == 0 and not no_faces):
        raise ValueError(f"{path}:{number}: empty mesh ({n_vertices} vertices, {n_faces} faces)")
    return n_vertices, n_faces, start


def _values(path: Path, rows: _Rows, index: np.ndarray, what: str, expected: str) -> np.ndarray:
    """float64 of the tokens ``index``; an error names the line of the first that is not a number."""
    from .text_kernels import token_floats

    def where(k):
        row = int(np.searchsorted(rows.start, k, side="right") - 1)
        return f"{path}:{rows.number(row)}: bad {what} line {rows.text(row)[:60]!r}: expected {expected}"

    return token_floats(rows.buf, rows.tokens, index, where=where)


def _parse_vertices(path: Path, rows: _Rows, first: int, count: int) -> np.ndarray:
    """(V, 3) float64 from the vertex rows (extra values such as colours are ignored)."""
    picked = np.arange(first, first + count)
    short = picked[rows.length[picked] < 3]
    if len(short):
        raise ValueError(f"{path}:{rows.number(short[0])}: bad vertex line {rows.text(short[0])[:60]!r}: "
                         "expected 'x y z'")
    index = (rows.start[picked][:, None] + np.arange(3)).ravel()
    vertices = _values(path, rows, index, "vertex", "'x y z'").reshape(-1, 3)
    bad = np.flatnonzero(~np.isfinite(vertices).all(axis=1))
    if len(bad):
        raise ValueError(f"{path}:{rows.number(picked[bad[0]])}: non-finite vertex "
                         f"{rows.text(picked[bad[0]])[:60]!r}")
    return vertices


def _parse_faces(path: Path, rows: _Rows, first: int, count: int, n_vertices: int) -> np.ndarray:
    """(F', 3) int64 triangles (polygons fan-triangulated), indices checked against V."""
    from .polygons import fan_triangles, gather_lists

    picked = np.arange(first, first + count)
    sizes = _values(path, rows, rows.start[picked], "face", "'n i_1 ... i_n' with n >= 3")
    bad = (sizes != np.round(sizes)) | (sizes < 3) | (sizes > rows.length[picked] - 1)
    if bad.any():
        row = picked[np.flatnonzero(bad)[0]]
        raise ValueError(f"{path}:{rows.number(row)}: bad face line {rows.text(row)[:60]!r}: expected "
                         "'n i_1 ... i_n' with n >= 3")
    sizes = sizes.astype(np.int64)
    flat = _values(path, rows, gather_lists(rows.start[picked] + 1, sizes), "face",
                   "'n i_1 ... i_n' with n >= 3")
    whole = np.isfinite(flat) & (flat == np.round(flat))
    if not whole.all():
        owner = np.repeat(picked, sizes)[np.flatnonzero(~whole)[0]]
        raise ValueError(f"{path}:{rows.number(owner)}: bad face line {rows.text(owner)[:60]!r}: expected "
                         "'n i_1 ... i_n' with n >= 3")
    faces, owner = fan_triangles(sizes, flat.astype(np.int64))
    bad = np.flatnonzero(((faces < 0) | (faces >= n_vertices)).any(axis=1))
    if len(bad):
        row = picked[owner[bad[0]]]
        raise ValueError(f"{path}:{rows.number(row)}: face index out of range [0, {n_vertices}) in "
                         f"{rows.text(row)[:60]!r}")
    return np.ascontiguousarray(faces)


def read_off(path: str | Path, *, allow_no_faces: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Read a triangle mesh from an OFF file.

    Args:
        path: the ``.off`` file.
        allow_no_faces: accept a header announcing 0 faces (a point cloud stored as OFF) and
            return (0, 3) faces; otherwise that is an empty mesh, an error.

    Returns:
        vertices: (V, 3) float64 vertex positions.
        faces: (F, 3) int64 triangles; ``faces[f, j]`` indexes ``vertices``. Polygons with
            n > 3 corners become n - 2 triangles, so F can exceed the header's face count.

    Raises:
        ValueError: naming the file and line, for a missing or malformed header, bad counts,
            an empty mesh, a truncated file, data after the last face, an unparsable line, a
            non-finite vertex or a face index out of range.
    """
    path = Path(path)
    rows = _Rows(path)
    n_vertices, n_faces, start = _parse_counts(path, rows, allow_no_faces)
    end, found = start + n_vertices + n_faces, len(rows.start)
    if found < end:
        raise ValueError(f"{path}:{rows.number(found - 1)}: truncated file: the header announces "
                         f"{n_vertices} vertices and {n_faces} faces, found {found - start} data lines")
    if found > end:
        raise ValueError(f"{path}:{rows.number(end)}: unexpected data after the last face: "
                         f"{rows.text(end)[:60]!r}")
    vertices = _parse_vertices(path, rows, start, n_vertices)
    faces = (_parse_faces(path, rows, start + n_vertices, n_faces, n_vertices) if n_faces
             else np.zeros((0, 3), dtype=np.int64))
    return vertices, faces


def write_off(path: str | Path, vertices: np.ndarray, faces: np.ndarray) -> None:
    """Write a triangle mesh as a standard OFF file (tests and benchmarks build meshes with it).

    Args:
        path: destination file (its folder must exist).
        vertices: (V, 3) float vertex positions.
        faces: (F, 3) int triangles indexing ``vertices``.
    """
    vertices = np.asarray(vertices, dtype=np.float64)
    faces = np.asarray(faces, dtype=np.int64)
    if vertices.ndim != 2 or vertices.shape[1] != 3:
        raise ValueError(f"vertices must have shape (V, 3), got {vertices.shape}")
    if faces.ndim != 2 or faces.shape[1] != 3:
        raise ValueError(f"faces must have shape (F, 3), got {faces.shape}")
    rows = [f"OFF\n{len(vertices)} {len(faces)} 0\n"]
    rows += [f"{x:.7g} {y:.7g} {z:.7g}\n" for x, y, z in vertices]
    rows += [f"3 {a} {b} {c}\n" for a, b, c in faces]
    Path(path).write_text("".join(rows))


def find_meshes(folder: str | Path, split: str) -> list[Path]:
    """The meshes ``folder/<class>/<split>/*.off``, sorted by path.

    The extension is matched in any case (``.off``, ``.OFF``, ``.Off``): archives unpacked on
    a case-insensitive file system, or re-exported by some tools, carry upper-case names, and a
    user of ModelNet expects them read, not skipped.
    """
    found = (p for p in Path(folder).glob(f"*/{split}/*") if p.suffix.lower() == ".off" and p.is_file())
    return sorted(found)


def sample_mesh(path: str | Path, n: int, *, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Read an OFF mesh and sample ``n`` points on it: points (n, 3), normals (n, 3) float32."""
    vertices, faces = read_off(path)
    try:
        return sample_surface(vertices, faces, n, rng)
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from None
