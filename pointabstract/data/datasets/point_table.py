"""Reading point clouds stored as text tables (``.xyz``, ``.txt``, ``.csv``): one point per line.

Columns ``x y z`` or ``x y z nx ny nz``. The delimiter is sniffed from the first data line:
comma, then semicolon, then tab / spaces (any run of whitespace). Lines starting with ``#``
or ``//`` and blank lines are skipped; the first remaining line is a header when it is not all
numbers. A header that names the columns (``x,y,z,nx,ny,nz``, also ``normal_x``... or
``X Y Z``) is used to find them, so other columns (colours, intensity) may sit beside them;
without such a header the table must have exactly 3 or 6 columns, or 7 whose last holds whole
numbers (ShapeNetPart's ``x y z nx ny nz part``; the part ids are not read, a note says so);
columns 4-6 are returned as normals (without a header the caller checks that they look like
unit vectors with :func:`unit_normals`: colours do not).
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np

__all__ = ["PointTable", "parse_rows", "read_point_table", "row_error", "table_rows", "unit_normals"]

_NORMAL_NAMES = (("nx", "ny", "nz"), ("normal_x", "normal_y", "normal_z"))


def _head_lines(buf: np.ndarray, limit: int = 1 << 16) -> list[tuple[int, str]]:
    """(line number, text) of the data lines among the first ``limit`` bytes (header and delimiter)."""
    text = bytes(buf[:limit]).decode("latin-1")
    return [(number, line.strip()) for number, line in enumerate(text.splitlines(), start=1)
            if line.strip() and not line.lstrip().startswith(("#", "//"))]


def _after_line(buf: np.ndarray, number: int) -> int:
    """The offset just after line ``number`` (1-based; ``\n``, ``\r\n`` or a lone ``\r`` ends a line)."""
    lone_cr = (buf == 13) & (np.append(buf[1:], np.uint8(0)) != 10)
    ends = np.flatnonzero((buf == 10) | lone_cr)
    return int(ends[number - 1]) + 1 if number <= len(ends) else len(buf)


def _delimiter(line: str) -> str | None:
    """The delimiter of a data line: ``","``, ``";"`` or None (whitespace)."""
    return "," if "," in line else ";" if ";" in line else None


def _split(line: str, delimiter: str | None) -> list[str]:
    return [f.strip() for f in line.split(delimiter)] if delimiter else line.split()


def _is_numeric(fields: list[str]) -> bool:
    try:
        [float(f) for f in fields]
    except ValueError:
        return False
    return True


def _named_columns(header: list[str]) -> tuple[list[int], list[int] | None] | None:
    """(x y z columns, normal columns or None) named by a header, or None if it names no x y z."""
    names = [h.strip().strip("\"'").lower() for h in header]
    if not all(a in names for a in "xyz"):
        return None
    trio = next((t for t in _NORMAL_NAMES if all(n in names for n in t)), None)
    normals = None if trio is None else [names.index(n) for n in trio]
    return [names.index(a) for a in "xyz"], normals


def table_rows(buf: np.ndarray, start: int, delimiter: str | None = None):
    """(buf with the delimiter read as spaces, tokens, first token of each data row, tokens per
    row) of ``buf[start:]``: rows are lines with tokens, those starting with ``#`` or ``//`` left out."""
    from .text_kernels import tokenize

    if delimiter is not None:  # ',' or ';' separate the values: read as spaces
        buf = np.where(buf == ord(delimiter), np.uint8(32), buf)
    tokens = tokenize(buf, start)
    new = np.ones(len(tokens.line), bool)
    new[1:] = tokens.line[1:] != tokens.line[:-1]
    rows = np.flatnonzero(new)
    head = buf[tokens.starts[rows]]
    comment = (head == 35) | ((head == 47) & (buf[np.minimum(tokens.starts[rows] + 1, len(buf) - 1)] == 47))
    length = np.diff(np.append(rows, len(tokens.line)))
    return buf, tokens, rows[~comment], length[~comment]


def row_error(path: Path, buf: np.ndarray, tokens, rows, length, row: int, what: str, first_line: int = 1):
    """The ValueError of data row ``row``: its line number and text, and what was expected."""
    text = bytes(buf[tokens.starts[rows[row]]:tokens.ends[rows[row] + length[row] - 1]]).decode("latin-1")
    line = first_line + int(tokens.line[rows[row]])
    return ValueError(f"{path}:{line}: expected {what}, got {text[:60]!r}")


def parse_rows(path: Path, buf: np.ndarray, start: int, delimiter: str | None, width: int,
               first_line: int = 1) -> np.ndarray:
    """(R, width) float64 table of the data rows of ``buf[start:]`` (:func:`table_rows`), parsed by
    :mod:`.text_kernels`; a one-line error names the first line that is not ``width`` numbers
    (``first_line``: the number of the line at ``start``)."""
    from .text_kernels import token_floats

    buf, tokens, rows, length = table_rows(buf, start, delimiter)
    what = f"{width} numbers (like the first data line)"
    wrong = np.flatnonzero(length != width)
    if len(wrong):
        raise row_error(path, buf, tokens, rows, length, int(wrong[0]), what, first_line)

    def where(k):
        row = int(np.searchsorted(rows, k, side="right") - 1)
        raise row_error(path, buf, tokens, rows, length, row, what, first_line)

    index = (rows[:, None] + np.arange(width)).ravel()
    return token_floats(buf, tokens, index, where=where).reshape(-1, width)


class PointTable(NamedTuple):
    """What :func:`read_point_table` read."""

    points: np.ndarray  # (N, 3) float64
    normals: np.ndarray | None  # (N, 3) float64, or None when the table has no normal columns
    known: bool  # the columns' meaning is known: named by a header, or ShapeNetPart's 7 columns
    #              (else columns 4-6 of 6 may be something else than normals, see unit_normals)
    note: str | None = None  # a column left out (the part ids of a ShapeNetPart file)


SHAPENET_PART_NOTE = "column 7 (ShapeNetPart part ids) not read: x y z nx ny nz only"


def read_point_table(path: str | Path) -> PointTable:
    """Read a text table of points (see the module docstring for the accepted layouts).

    Raises:
        ValueError: naming the file (and line), for no data line, a column count other than
            3 or 6 (or 7 with whole numbers in the last) without a naming header, or a line
            that is not numbers.
    """
    path = Path(path)
    buf = np.fromfile(path, dtype=np.uint8)
    lines = _head_lines(buf)
    header = None
    if lines and not _is_numeric(_split(lines[0][1], _delimiter(lines[0][1]))):
        header, lines = lines[0], lines[1:]
    if not lines:
        raise ValueError(f"{path}: empty: no data line")
    delimiter = _delimiter(lines[0][1])
    width = len(_split(lines[0][1], delimiter))
    named = _named_columns(_split(header[1], delimiter)) if header else None
    if named is None and width not in (3, 6, 7):
        raise ValueError(f"{path}:{lines[0][0]}: {width} columns; expected 3 (x y z) or 6 (x y z nx ny nz), "
                         "or a header line naming the columns x, y, z (and nx, ny, nz)")
    start = _after_line(buf, header[0]) if header else 0
    table = parse_rows(path, buf, start, delimiter, width, first_line=header[0] + 1 if header else 1)
    if named is not None:
        xyz, normal = named
        if max(xyz + (normal or [])) >= width:
            raise ValueError(f"{path}:{header[0]}: the header names more columns than the {width} "
                             "of the data")
        return PointTable(table[:, xyz], None if normal is None else table[:, normal], True)
    if width == 3:
        return PointTable(table, None, False)
    if width == 7:  # ShapeNetPart's x y z nx ny nz part
        if not (table[:, 6] == np.round(table[:, 6])).all():
            raise ValueError(f"{path}:{lines[0][0]}: 7 columns whose last is not whole numbers; expected "
                             "3 (x y z), 6 (x y z nx ny nz) or ShapeNetPart's x y z nx ny nz part, or a "
                             "header line naming the columns x, y, z (and nx, ny, nz)")
        return PointTable(table[:, :3], table[:, 3:6], True, SHAPENET_PART_NOTE)
    return PointTable(table[:, :3], table[:, 3:], False)


def unit_normals(values: np.ndarray) -> bool:
    """True when (N, 3) ``values`` look like normals: no row longer than 1.05 and at least 90 % of
    rows of length 1 within 5 % (published normals hold a few degenerate, shorter ones; colours,
    0-255 or 0-1 with white at 1.73, do not pass)."""
    length = np.linalg.norm(values, axis=1)
    return bool(length.max(initial=0) <= 1.05 and (np.abs(length - 1) < 0.05).mean() >= 0.9)
