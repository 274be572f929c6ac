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

import io
import re
from pathlib import Path

import numpy as np

from ..synthetic.surface import sample_surface

__all__ = ["find_meshes", "read_off", "sample_mesh", "write_off"]

_HEADER = re.compile(r"^(?:ST)?C?N?OFF(?=\s|\d|$)(.*)$")


def _content_lines(path: Path) -> list[tuple[int, str]]:
    """(1-based line number, text without comment) of every line that holds data."""
    try:
        text = path.read_bytes().decode("latin-1")
    except OSError as err:
        raise ValueError(f"{path}: cannot read OFF file ({err})") from err
    rows = text.splitlines()
    if "#" in text:
        rows = [row.split("#", 1)[0] for row in rows]
    return [(number, stripped) for number, row in enumerate(rows, start=1) if (stripped := row.strip())]


def _parse_counts(path: Path, lines: list[tuple[int, str]], no_faces: bool = False) -> tuple[int, int, int]:
    """(V, F, index of the first vertex line in ``lines``) from the header."""
    if not lines:
        raise ValueError(f"{path}: empty file (no OFF header)")
    number, first = lines[0]
    match = _HEADER.match(first)
    if match is None:
        raise ValueError(f"{path}:{number}: expected the header 'OFF', got {first[:40]!r}")
    rest, start = match.group(1).strip(), 1
    if not rest:  # the usual case: counts on the next data line
        if len(lines) < 2:
            raise ValueError(f"{path}:{number}: truncated file: no counts line after the header")
        number, rest = lines[1]
        start = 2
    fields = rest.split()
    try:
        counts = [int(f) for f in fields]
    except ValueError:
        counts = []
    if len(counts) not in (2, 3) or min(counts) < 0:
        raise ValueError(f"{path}:{number}: bad counts line {rest!r}: expected 'V F E', "
                         "non-negative integers")
    n_vertices, n_faces = counts[0], counts[1]
    if n_vertices == 0 or (n_faces == 0 and not no_faces):
        raise ValueError(f"{path}:{number}: empty mesh ({n_vertices} vertices, {n_faces} faces)")
    return n_vertices, n_faces, start


def _fast_table(lines: list[tuple[int, str]], dtype, columns: int) -> np.ndarray | None:
    """The lines as a (len(lines), columns) table, or None when they are not all that shape."""
    try:
        table = np.loadtxt(io.StringIO("\n".join(text for _, text in lines)), dtype=dtype,
                           ndmin=2, comments=None)
    except ValueError:
        return None
    return table if table.shape == (len(lines), columns) else None


def _parse_vertices(path: Path, lines: list[tuple[int, str]]) -> np.ndarray:
    """(V, 3) float64 from the vertex lines (extra values such as colours are ignored)."""
    vertices = _fast_table(lines, np.float64, 3)
    if vertices is None:  # line by line: extra values, or a bad line to report
        fields = [text.split() for _, text in lines]
        vertices = np.empty((len(lines), 3))
        for row, (number, text) in enumerate(lines):
            try:
                vertices[row] = [float(f) for f in fields[row][:3]]
                if len(fields[row]) < 3:
                    raise ValueError
            except ValueError:
                raise ValueError(f"{path}:{number}: bad vertex line {text[:60]!r}: "
                                 "expected 'x y z'") from None
    bad = np.flatnonzero(~np.isfinite(vertices).all(axis=1))
    if len(bad):
        number, text = lines[bad[0]]
        raise ValueError(f"{path}:{number}: non-finite vertex {text[:60]!r}")
    return vertices


def _parse_faces(path: Path, lines: list[tuple[int, str]], n_vertices: int) -> np.ndarray:
    """(F', 3) int64 triangles (polygons fan-triangulated), indices checked against V."""
    table = _fast_table(lines, np.int64, 4)
    faces = None
    if table is not None and (table[:, 0] == 3).all():
        faces, owner = table[:, 1:], np.arange(len(lines))
    if faces is None:  # line by line: polygons, colours, or a bad line to report
        fields = [text.split() for _, text in lines]
        triangles, owners = [], []
        for row, (number, text) in enumerate(lines):
            try:
                corners = int(fields[row][0])
                polygon = [int(f) for f in fields[row][1: 1 + corners]]
            except ValueError:
                corners, polygon = -1, []
            if corners < 3 or len(polygon) != corners:
                raise ValueError(f"{path}:{number}: bad face line {text[:60]!r}: expected "
                                 "'n i_1 ... i_n' with n >= 3")
            for k in range(1, corners - 1):  # fan: (i_1, i_k, i_{k+1})
                triangles.append((polygon[0], polygon[k], polygon[k + 1]))
                owners.append(row)
        faces, owner = np.array(triangles, dtype=np.int64), np.array(owners)
    bad = np.flatnonzero(((faces < 0) | (faces >= n_vertices)).any(axis=1))
    if len(bad):
        number, text = lines[owner[bad[0]]]
        raise ValueError(f"{path}:{number}: face index out of range [0, {n_vertices}) in "
                         f"{text[:60]!r}")
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
    lines = _content_lines(path)
    n_vertices, n_faces, start = _parse_counts(path, lines, allow_no_faces)
    end = start + n_vertices + n_faces
    if len(lines) < end:
        last = lines[-1][0]
        raise ValueError(f"{path}:{last}: truncated file: the header announces {n_vertices} "
                         f"vertices and {n_faces} faces, found {len(lines) - start} data lines")
    if len(lines) > end:
        number, text = lines[end]
        raise ValueError(f"{path}:{number}: unexpected data after the last face: {text[:60]!r}")
    vertices = _parse_vertices(path, lines[start: start + n_vertices])
    faces = (_parse_faces(path, lines[start + n_vertices: end], n_vertices) if n_faces
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
