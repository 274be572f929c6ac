"""Reading the vertex positions of PLY point-cloud files (ascii and binary)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .checksums import check_finite

__all__ = ["read_ply_points"]

_PLY_TYPES = {"char": "i1", "int8": "i1", "uchar": "u1", "uint8": "u1", "short": "i2", "int16": "i2",
              "ushort": "u2", "uint16": "u2", "int": "i4", "int32": "i4", "uint": "u4", "uint32": "u4",
              "float": "f4", "float32": "f4", "double": "f8", "float64": "f8"}


def read_ply_points(path: str | Path) -> np.ndarray:
    """The vertex positions of a PLY file (ascii or binary), as (N, 3) float32.

    Only the first element must be ``vertex`` with scalar properties including x, y, z (the
    point-cloud PLY files of AtlasNet's ShapeNet); later elements (faces) are not read.

    Raises:
        ValueError: naming the file, for a bad header, a truncated body or non-finite values.
    """
    path = Path(path)
    raw = path.read_bytes()
    end = raw.find(b"end_header")
    if not raw.startswith(b"ply") or end < 0:
        raise ValueError(f"{path}: not a PLY file (no 'ply' ... 'end_header' header)")
    body = raw.index(b"\n", end) + 1 if b"\n" in raw[end:] else len(raw)
    header = raw[:end].decode("latin-1").splitlines()
    fmt, count, props, element = None, 0, [], None
    for number, line in enumerate(header, start=1):
        fields = line.split()
        if not fields or fields[0] in ("ply", "comment", "obj_info"):
            continue
        if fields[0] == "format":
            fmt = fields[1] if len(fields) > 1 else None
        elif fields[0] == "element":
            if element is None:
                if len(fields) != 3 or fields[1] != "vertex" or not fields[2].isdigit():
                    raise ValueError(f"{path}:{number}: the first element must be 'vertex N', got {line!r}")
                count = int(fields[2])
            element = fields[1]
        elif fields[0] == "property" and element == "vertex":
            if len(fields) != 3 or fields[1] not in _PLY_TYPES:
                raise ValueError(f"{path}:{number}: unsupported vertex property {line!r}")
            props.append((fields[2], _PLY_TYPES[fields[1]]))
    names = [p for p, _ in props]
    if fmt not in ("ascii", "binary_little_endian", "binary_big_endian") or not all(
            a in names for a in "xyz"):
        raise ValueError(f"{path}: unsupported PLY header (format {fmt!r}, vertex properties {names})")
    if count <= 0:
        raise ValueError(f"{path}: empty point cloud (element vertex {count})")
    columns = [names.index(a) for a in "xyz"]
    if fmt == "ascii":
        try:
            table = np.loadtxt(raw[body:].decode("latin-1").splitlines()[:count], dtype=np.float64, ndmin=2)
        except ValueError as err:
            raise ValueError(f"{path}: cannot parse the vertex rows ({err})") from None
        if table.shape != (count, len(props)):
            raise ValueError(f"{path}: truncated or malformed: expected {count} rows of {len(props)} "
                             f"values, got an array of shape {table.shape}")
        points = table[:, columns]
    else:
        order = "<" if fmt == "binary_little_endian" else ">"
        dtype = np.dtype([(n, order + t) for n, t in props])
        if len(raw) - body < dtype.itemsize * count:
            raise ValueError(f"{path}: truncated: {count} vertices need {dtype.itemsize * count} bytes, "
                             f"the file has {len(raw) - body}")
        table = np.frombuffer(raw, dtype=dtype, count=count, offset=body)
        points = np.stack([table[a] for a in "xyz"], axis=1)
    points = points.astype(np.float32)
    check_finite(str(path), points, name="point", unit="vertex")
    return points
