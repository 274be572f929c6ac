"""Text point clouds whose suffix says what the columns are: ``.xyzn``, ``.xyzrgb`` and ``.pts``.

=========  =========================================================================================
suffix     layout (whitespace-separated, one point per line, ``#`` / ``//`` lines skipped)
=========  =========================================================================================
``.xyzn``  ``x y z nx ny nz``: normals as stored (the suffix says so: no unit-length guess)
``.xyzrgb````x y z r g b``: the colours are not read
``.pts``   a line holding the point count N, then N lines ``x y z``, ``x y z i``, ``x y z r g b`` or
           ``x y z i r g b`` (Leica / Faro exports; i the intensity); several such blocks may
           follow one another. Only x y z are read.
=========  =========================================================================================

Open3D reads the same three layouts. Values are float64 (a text format).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["read_pts", "read_xyzn", "read_xyzrgb"]

_PTS_WIDTHS = (3, 4, 6, 7)


def _six_columns(path: Path) -> np.ndarray:
    from .point_table import parse_rows

    table = parse_rows(path, np.fromfile(path, dtype=np.uint8), 0, None, 6)
    if not len(table):
        raise ValueError(f"{path}: empty: no data line")
    return table


def read_xyzn(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """(points (N, 3), normals (N, 3)) float64 of an ``x y z nx ny nz`` file; a one-line error names
    the first line that is not 6 numbers."""
    table = _six_columns(Path(path))
    return table[:, :3], table[:, 3:]


def read_xyzrgb(path: str | Path) -> np.ndarray:
    """(N, 3) float64 points of an ``x y z r g b`` file (colours not read)."""
    return _six_columns(Path(path))[:, :3]


def read_pts(path: str | Path) -> np.ndarray:
    """(N, 3) float64 points of a ``.pts`` file (see the module docstring).

    Raises:
        ValueError: naming the file and line, for no count line first, a count that is not a
            whole number, a block with another number of rows than its count says, rows of other
            widths than 3, 4, 6 or 7 or of different widths, a value that is not a number.
    """
    from .point_table import row_error, table_rows
    from .text_kernels import token_floats

    path = Path(path)
    buf, tokens, rows, length = table_rows(np.fromfile(path, dtype=np.uint8), 0)
    if not len(rows):
        raise ValueError(f"{path}: empty: no data line")
    if length[0] != 1:
        raise row_error(path, buf, tokens, rows, length, 0, "the point count on the first line")
    single = np.flatnonzero(length == 1)
    counts = token_floats(buf, tokens, rows[single], where=lambda k: _bad_count(path, buf, tokens, k))
    points = np.flatnonzero(length != 1)
    width = int(length[points[0]]) if len(points) else 3
    wrong = points[length[points] != width] if width in _PTS_WIDTHS else points[:1]
    if len(wrong):
        widths = " or ".join(map(str, _PTS_WIDTHS))
        raise row_error(path, buf, tokens, rows, length, int(wrong[0]),
                        f"x y z [i] [r g b]: {widths} numbers, as the first point line")
    found = np.diff(np.append(single, len(rows))) - 1  # point rows after each count line
    mismatch = np.flatnonzero((counts != np.round(counts)) | (counts != found))
    if len(mismatch):
        row = int(single[mismatch[0]])
        raise row_error(path, buf, tokens, rows, length, row, f"the count of the {found[mismatch[0]]} point "
                        "lines that follow")
    index = (rows[points][:, None] + np.arange(3)).ravel()

    def where(k):
        row = int(np.searchsorted(rows, k, side="right") - 1)
        raise row_error(path, buf, tokens, rows, length, row, f"{width} numbers")

    return token_floats(buf, tokens, index, where=where).reshape(-1, 3)


def _bad_count(path: Path, buf: np.ndarray, tokens, k: int):
    text = bytes(buf[tokens.starts[k]:tokens.ends[k]]).decode("latin-1")
    raise ValueError(f"{path}:{int(tokens.line[k]) + 1}: expected a point count, got {text[:60]!r}")
