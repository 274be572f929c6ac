"""Reading PLY files (ascii and binary): point clouds, and meshes with their faces.

A PLY file is a header (``ply``, ``format ascii|binary_little_endian|binary_big_endian 1.0``,
``element NAME COUNT`` lines each followed by its ``property TYPE NAME`` or ``property list
COUNT_TYPE ITEM_TYPE NAME`` lines, ``end_header``) and a body holding the elements in header
order. The first element must be ``vertex`` with scalar properties including ``x y z``
(``nx ny nz`` are read as normals); a ``face`` element's ``vertex_indices`` (or
``vertex_index``) lists are the polygons, split into fans of triangles. Other elements are
skipped. The body is read vectorised (:mod:`.ply_body`), faces of mixed sizes included.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .checksums import check_finite

__all__ = ["read_ply", "read_ply_points"]

_PLY_TYPES = {"char": "i1", "int8": "i1", "uchar": "u1", "uint8": "u1", "short": "i2", "int16": "i2",
              "ushort": "u2", "uint16": "u2", "int": "i4", "int32": "i4", "uint": "u4", "uint32": "u4",
              "float": "f4", "float32": "f4", "double": "f8", "float64": "f8"}
_FORMATS = ("ascii", "binary_little_endian", "binary_big_endian")
_FACE_LISTS = ("vertex_indices", "vertex_index")
_HEADER_LIMIT = 1 << 20  # a header is a few hundred bytes; only this much is searched for end_header


@dataclass
class _Element:
    name: str
    count: int
    props: list  # (name, item type, list count type or None), numpy type codes without byte order


def _parse_header(path: Path, buf: np.ndarray) -> tuple[str | None, list[_Element], int]:
    """(format, elements, offset of the body) of a PLY file."""
    raw = bytes(buf[:_HEADER_LIMIT])
    end = raw.find(b"end_header")
    if not raw.startswith(b"ply") or end < 0:
        raise ValueError(f"{path}: not a PLY file (no 'ply' ... 'end_header' header)")
    body = raw.index(b"\n", end) + 1 if b"\n" in raw[end:] else len(raw)
    fmt, elements = None, []
    for number, line in enumerate(raw[:end].decode("latin-1").splitlines(), start=1):
        fields = line.split()
        if not fields or fields[0] in ("ply", "comment", "obj_info"):
            continue
        if fields[0] == "format":
            fmt = fields[1] if len(fields) > 1 else None
        elif fields[0] == "element":
            if not elements and (len(fields) != 3 or fields[1] != "vertex" or not fields[2].isdigit()):
                raise ValueError(f"{path}:{number}: the first element must be 'vertex N', got {line!r}")
            if len(fields) != 3 or not fields[2].isdigit():
                raise ValueError(f"{path}:{number}: bad element line {line!r}: expected 'element NAME N'")
            elements.append(_Element(fields[1], int(fields[2]), []))
        elif fields[0] == "property" and elements:
            elements[-1].props.append(_parse_property(path, number, line, fields, elements[-1].name))
    return fmt, elements, body


def _parse_property(path: Path, number: int, line: str, fields: list[str], element: str) -> tuple:
    if len(fields) == 3 and fields[1] in _PLY_TYPES:
        return fields[2], _PLY_TYPES[fields[1]], None
    if len(fields) == 5 and fields[1] == "list" and fields[2] in _PLY_TYPES and fields[3] in _PLY_TYPES \
            and element != "vertex":
        return fields[4], _PLY_TYPES[fields[3]], _PLY_TYPES[fields[2]]
    raise ValueError(f"{path}:{number}: unsupported {element} property {line!r}")


def _check_vertex(path: Path, fmt: str | None, elements: list[_Element]) -> None:
    names = [p[0] for p in elements[0].props] if elements else []
    if fmt not in _FORMATS or not all(a in names for a in "xyz"):
        raise ValueError(f"{path}: unsupported PLY header (format {fmt!r}, vertex properties {names})")
    if elements[0].count <= 0:
        raise ValueError(f"{path}: empty point cloud (element vertex {elements[0].count})")


def face_list(path: Path | None, element: _Element) -> str:
    """The name of the face element's list of vertex indices."""
    name = next((n for n, _, count in element.props if n in _FACE_LISTS and count is not None), None)
    if name is None:
        raise ValueError(f"{path}: the face element has no 'vertex_indices' list property")
    return name


def _triangles(path: Path, polygons: tuple, n_vertices: int) -> np.ndarray:
    """Fan-split polygons ``(sizes, flat indices)``, every index checked against the V vertices."""
    from .polygons import fan_triangles

    sizes, flat = polygons
    short = np.flatnonzero(sizes < 3)
    if len(short):
        raise ValueError(f"{path}: face {short[0]} has {sizes[short[0]]} corners (at least 3 needed)")
    faces, _ = fan_triangles(sizes, flat)
    bad = np.flatnonzero(((faces < 0) | (faces >= n_vertices)).any(axis=1))
    if len(bad):
        raise ValueError(f"{path}: a face refers to vertex {faces[bad[0]].tolist()}, outside "
                         f"[0, {n_vertices}) (the file has {n_vertices} vertices)")
    return faces


def _stack(columns, names: tuple[str, ...], types: dict) -> np.ndarray:
    """(V, 3) of three columns: float32 when all three are stored as float32, else float64."""
    kind = np.float32 if all(types[n] == "f4" for n in names) else np.float64
    return np.stack([np.asarray(columns[n], dtype=kind) for n in names], axis=1)


def read_ply(path: str | Path, *,
             faces: bool = True) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """Read a PLY point cloud or mesh (ascii or binary).

    Args:
        path: the ``.ply`` file.
        faces: also read the ``face`` element (False stops after the vertices).

    Returns:
        points: (V, 3) vertex positions, float32 when ``x y z`` are stored as float32, else float64
            (doubles, integers, and every ascii file).
        normals: (V, 3) from ``nx ny nz`` (float32 or float64 by the same rule), or None when the
            vertices have none.
        faces: (F, 3) int64 triangles (polygons fan-split; ``faces[f, j]`` indexes ``points``);
            None when the file has no ``face`` element (or ``faces=False``), (0, 3) when it
            has one with no rows.

    Raises:
        ValueError: naming the file, for a bad header, a truncated body, non-finite values
            or a face referring to a vertex the file does not have.
    """
    from .ply_body import ascii_body, binary_body

    path = Path(path)
    buf = np.fromfile(path, dtype=np.uint8)
    fmt, elements, body = _parse_header(path, buf)
    _check_vertex(path, fmt, elements)
    wanted = next((e for e in elements[1:] if e.name == "face"), None) if faces else None
    names = [p[0] for p in elements[0].props]
    if fmt == "ascii":
        table, polygons = ascii_body(path, buf, body, elements, wanted)
        columns, types = {n: table[:, i] for i, n in enumerate(names)}, dict.fromkeys(names, "f8")
    else:
        columns, polygons = binary_body(path, buf, body, elements, wanted, "<" if fmt == _FORMATS[1] else ">")
        types = {n: t for n, t, _ in elements[0].props}
    points = _stack(columns, ("x", "y", "z"), types)
    check_finite(str(path), points, name="point", unit="vertex")
    normals = None
    if all(n in names for n in ("nx", "ny", "nz")):
        normals = _stack(columns, ("nx", "ny", "nz"), types)
        check_finite(str(path), normals, name="normal", unit="vertex")
    triangles = None if polygons is None else _triangles(path, polygons, len(points))
    return points, normals, triangles


def read_ply_points(path: str | Path) -> np.ndarray:
    """The vertex positions of a PLY file (ascii or binary), as (N, 3) float32.

    The point-cloud PLY files of AtlasNet's ShapeNet; later elements (faces) are not read
    (:func:`read_ply` reads them).

    Raises:
        ValueError: naming the file, for a bad header, a truncated body or non-finite values.
    """
    return read_ply(path, faces=False)[0].astype(np.float32)  # a dataset sample's pos: float32
