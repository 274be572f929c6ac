"""Reading PLY files (ascii and binary): point clouds, and meshes with their faces.

A PLY file is a header (``ply``, ``format ascii|binary_little_endian|binary_big_endian 1.0``,
``element NAME COUNT`` lines each followed by its ``property TYPE NAME`` or ``property list
COUNT_TYPE ITEM_TYPE NAME`` lines, ``end_header``) and a body holding the elements in header
order. The first element must be ``vertex`` with scalar properties including ``x y z``
(``nx ny nz`` are read as normals); a ``face`` element's ``vertex_indices`` (or
``vertex_index``) lists are the polygons, split into fans of triangles. Other elements are
skipped.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..files import coordinate_dtype
from .checksums import check_finite

__all__ = ["read_ply", "read_ply_points"]

_PLY_TYPES = {"char": "i1", "int8": "i1", "uchar": "u1", "uint8": "u1", "short": "i2", "int16": "i2",
              "ushort": "u2", "uint16": "u2", "int": "i4", "int32": "i4", "uint": "u4", "uint32": "u4",
              "float": "f4", "float32": "f4", "double": "f8", "float64": "f8"}
_FORMATS = ("ascii", "binary_little_endian", "binary_big_endian")
_FACE_LISTS = ("vertex_indices", "vertex_index")


@dataclass
class _Element:
    name: str
    count: int
    props: list  # (name, item type, list count type or None), numpy type codes without byte order


def _parse_header(path: Path, raw: bytes) -> tuple[str | None, list[_Element], int]:
    """(format, elements, offset of the body) of a PLY file."""
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


def _ascii_vertices(path: Path, lines: list[str], vertex: _Element) -> np.ndarray:
    try:
        table = np.loadtxt(lines[:vertex.count], dtype=np.float64, ndmin=2)
    except ValueError as err:
        raise ValueError(f"{path}: cannot parse the vertex rows ({err})") from None
    if table.shape != (vertex.count, len(vertex.props)):
        raise ValueError(f"{path}: truncated or malformed: expected {vertex.count} rows of "
                         f"{len(vertex.props)} values, got an array of shape {table.shape}")
    return table


def _face_list(path: Path, element: _Element) -> str:
    """The name of the face element's list of vertex indices."""
    name = next((n for n, _, count in element.props if n in _FACE_LISTS and count is not None), None)
    if name is None:
        raise ValueError(f"{path}: the face element has no 'vertex_indices' list property")
    return name


def _ascii_polygons(path: Path, lines: list[str], element: _Element) -> list[list[int]]:
    """The face lists of ``element``'s rows (one row per line), other properties skipped."""
    wanted = _face_list(path, element)
    if len(lines) < element.count:
        raise ValueError(f"{path}: truncated: {element.count} faces announced, {len(lines)} lines left")
    polygons = []
    for row, line in enumerate(lines[:element.count]):
        tokens, at = line.split(), 0
        try:
            for name, _, count_type in element.props:
                size = 1 if count_type is None else 1 + int(tokens[at])
                if name == wanted:
                    polygons.append([int(t) for t in tokens[at + 1: at + size]])
                at += size
            if at != len(tokens):
                raise ValueError
        except (ValueError, IndexError):
            raise ValueError(f"{path}: face {row}: bad row {line[:60]!r}") from None
    return polygons


def _binary_element(path: Path, raw: bytes, offset: int, element: _Element, order: str):
    """(rows, offset after the element): a structured array when every row has the same layout
    (always for scalar properties; list properties of one length, e.g. all triangles), else a
    list of per-row dicts."""
    dtype = _uniform_dtype(path, raw, offset, element, order)
    lists = any(count is not None for _, _, count in element.props)
    if dtype is not None and len(raw) - offset < dtype.itemsize * element.count and not lists:
        noun = "vertices" if element.name == "vertex" else f"{element.name} rows"
        raise ValueError(f"{path}: truncated: {element.count} {noun} need "
                         f"{dtype.itemsize * element.count} bytes, the file has {len(raw) - offset}")
    if dtype is not None and len(raw) - offset >= dtype.itemsize * element.count:
        rows = np.frombuffer(raw, dtype=dtype, count=element.count, offset=offset)
        sizes = [rows[f"{name}#"] for name, _, count in element.props if count is not None]
        if all((s == s[0]).all() for s in sizes):
            return rows, offset + dtype.itemsize * element.count
    rows = []
    for _ in range(element.count):
        row = {}
        for name, t, count_type in element.props:
            size = 1
            if count_type is not None:
                size, offset = _read_scalars(path, raw, offset, order + count_type, 1, element)
                size = int(size[0])
            row[name], offset = _read_scalars(path, raw, offset, order + t, size, element)
        rows.append(row)
    return rows, offset


def _uniform_dtype(path: Path, raw: bytes, offset: int, element: _Element, order: str) -> np.dtype | None:
    """The row dtype if every row had the list lengths of the first row (None: no row to look at)."""
    fields = []
    for name, t, count_type in element.props:
        if count_type is None:
            fields.append((name, order + t))
            offset += np.dtype(t).itemsize
            continue
        if element.count == 0:
            return None
        size, offset = _read_scalars(path, raw, offset, order + count_type, 1, element)
        fields += [(f"{name}#", order + count_type), (name, order + t, (int(size[0]),))]
        offset += np.dtype(t).itemsize * int(size[0])
    return np.dtype(fields)


def _read_scalars(path: Path, raw: bytes, offset: int, dtype: str, n: int, element: _Element):
    width = np.dtype(dtype).itemsize * n
    if offset + width > len(raw):
        raise ValueError(f"{path}: truncated in element {element.name!r} (byte {offset} of {len(raw)})")
    return np.frombuffer(raw, dtype=dtype, count=n, offset=offset), offset + width


def _fan(polygons) -> np.ndarray:
    """(F, 3) int64 triangles ``(i_1, i_k, i_{k+1})`` of polygons: a (P, n) array or index lists."""
    if isinstance(polygons, np.ndarray):
        corners = polygons.astype(np.int64)
        fans = [corners[:, [0, k, k + 1]] for k in range(1, corners.shape[1] - 1)]
        return np.stack(fans, axis=1).reshape(-1, 3) if fans else np.zeros((0, 3), np.int64)
    triangles = [(p[0], p[k], p[k + 1]) for p in polygons for k in range(1, len(p) - 1)]
    return np.array(triangles, dtype=np.int64).reshape(-1, 3)


def _check_polygons(path: Path, polygons, n_vertices: int) -> np.ndarray:
    """Fan-split polygons, every index checked against the V vertices."""
    if isinstance(polygons, np.ndarray):
        lengths = [polygons.shape[1]] * len(polygons)
    else:
        lengths = [len(p) for p in polygons]
    short = [i for i, n in enumerate(lengths) if n < 3]
    if short:
        raise ValueError(f"{path}: face {short[0]} has {lengths[short[0]]} corners (at least 3 needed)")
    faces = _fan(polygons)
    bad = np.flatnonzero(((faces < 0) | (faces >= n_vertices)).any(axis=1))
    if len(bad):
        raise ValueError(f"{path}: a face refers to vertex {faces[bad[0]].tolist()}, outside "
                         f"[0, {n_vertices}) (the file has {n_vertices} vertices)")
    return faces


def _read_body(path: Path, raw: bytes, fmt: str, elements: list[_Element], body: int,
               wanted: _Element | None):
    """(vertex columns by property name, the face lists of ``wanted`` or None)."""
    vertex, polygons = elements[0], None
    if fmt == "ascii":
        lines = raw[body:].decode("latin-1").splitlines()
        table = _ascii_vertices(path, lines, vertex)
        if wanted is not None:  # one row per line: skip the rows of the elements before the faces
            start = vertex.count + sum(e.count for e in elements[1: elements.index(wanted)])
            polygons = _ascii_polygons(path, lines[start:], wanted)
        return {name: table[:, i] for i, (name, _, _) in enumerate(vertex.props)}, polygons
    order = "<" if fmt == "binary_little_endian" else ">"
    columns, offset = _binary_element(path, raw, body, vertex, order)
    for element in elements[1: elements.index(wanted) + 1] if wanted is not None else []:
        rows, offset = _binary_element(path, raw, offset, element, order)
        if element is wanted:
            name = _face_list(path, element)
            polygons = (rows[name].reshape(len(rows), -1) if isinstance(rows, np.ndarray)
                        else [row[name].tolist() for row in rows])
    return columns, polygons


def read_ply(path: str | Path, *,
             faces: bool = True) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """Read a PLY point cloud or mesh (ascii or binary).

    Args:
        path: the ``.ply`` file.
        faces: also read the ``face`` element (False stops after the vertices).

    Returns:
        points: (V, 3) vertex positions in the file's precision: float32 when ``x y z`` are
            stored as binary ``float``, float64 for ``double`` (or integer) properties and for
            ascii files (parsed as float64; :func:`pointabstract.data.files.coordinate_dtype`).
        normals: (V, 3) float32 from ``nx ny nz``, or None when the vertices have none.
        faces: (F, 3) int64 triangles (polygons fan-split; ``faces[f, j]`` indexes ``points``);
            None when the file has no ``face`` element (or ``faces=False``), (0, 3) when it
            has one with no rows.

    Raises:
        ValueError: naming the file, for a bad header, a truncated body, non-finite values
            or a face referring to a vertex the file does not have.
    """
    path = Path(path)
    raw = path.read_bytes()
    fmt, elements, body = _parse_header(path, raw)
    _check_vertex(path, fmt, elements)
    wanted = next((e for e in elements[1:] if e.name == "face"), None) if faces else None
    columns, polygons = _read_body(path, raw, fmt, elements, body, wanted)
    names = [p[0] for p in elements[0].props]
    xyz = [columns[a] for a in "xyz"]
    points = np.stack(xyz, axis=1).astype(coordinate_dtype(*xyz))
    check_finite(str(path), points, name="point", unit="vertex")
    normals = None
    if all(n in names for n in ("nx", "ny", "nz")):
        normals = np.stack([columns[n] for n in ("nx", "ny", "nz")], axis=1).astype(np.float32)
        check_finite(str(path), normals, name="normal", unit="vertex")
    triangles = None if polygons is None else _check_polygons(path, polygons, len(points))
    return points, normals, triangles


def read_ply_points(path: str | Path) -> np.ndarray:
    """The vertex positions of a PLY file (ascii or binary), as (N, 3) float32 (the datasets'
    sample dtype; :func:`read_ply` keeps the file's precision).

    The point-cloud PLY files of AtlasNet's ShapeNet; later elements (faces) are not read
    (:func:`read_ply` reads them).

    Raises:
        ValueError: naming the file, for a bad header, a truncated body or non-finite values.
    """
    return read_ply(path, faces=False)[0].astype(np.float32)
