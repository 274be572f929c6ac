"""Reading PCD point clouds (the Point Cloud Library's format), ascii and binary.

A header of ``KEY values`` lines (``VERSION``, ``FIELDS x y z ...``, ``SIZE``, ``TYPE`` (F float,
I signed, U unsigned), ``COUNT``, ``WIDTH``, ``HEIGHT``, ``VIEWPOINT``, ``POINTS``) ends with
``DATA ascii`` or ``DATA binary``; the body is one row per point (ascii: whitespace separated;
binary: packed records, little-endian). ``x y z`` are required; ``normal_x normal_y normal_z``
are read as normals; other fields are skipped. ``DATA binary_compressed`` (LZF) is refused with
a hint. The viewpoint is not applied: points are returned as stored.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..files import coordinate_dtype

__all__ = ["read_pcd"]

_KEYS = ("VERSION", "FIELDS", "SIZE", "TYPE", "COUNT", "WIDTH", "HEIGHT", "VIEWPOINT", "POINTS", "DATA")
_NORMALS = ("normal_x", "normal_y", "normal_z")


def _parse_header(path: Path, raw: bytes) -> tuple[dict, int]:
    """(header values by key, offset of the body)."""
    header, offset = {}, 0
    while "DATA" not in header:
        end = raw.find(b"\n", offset)
        if end < 0:
            raise ValueError(f"{path}: not a PCD file (no 'DATA ascii|binary' header line)")
        line = raw[offset:end].decode("latin-1").strip()
        offset = end + 1
        if not line or line.startswith("#"):
            continue
        key, *values = line.split()
        if key not in _KEYS:
            raise ValueError(f"{path}: not a PCD file (header line {line[:60]!r})")
        header[key] = values
    return header, offset


def _row_dtype(path: Path, header: dict) -> np.dtype:
    """The packed record of one point: one field per ``FIELDS`` name (``COUNT`` values each)."""
    fields = header.get("FIELDS", [])
    sizes, types = header.get("SIZE", []), header.get("TYPE", [])
    counts = header.get("COUNT", ["1"] * len(fields))
    if not all(a in fields for a in "xyz") or not len(fields) == len(sizes) == len(types) == len(counts):
        raise ValueError(f"{path}: PCD header needs FIELDS with x y z and as many SIZE / TYPE / COUNT "
                         f"values (FIELDS {fields}, SIZE {sizes}, TYPE {types}, COUNT {counts})")
    kinds = {"F": "f", "I": "i", "U": "u"}
    try:
        return np.dtype([(f"{name}#{i}" if name == "_" else name, f"<{kinds[t]}{int(s)}", (int(c),))
                         for i, (name, s, t, c) in enumerate(zip(fields, sizes, types, counts))])
    except (KeyError, TypeError, ValueError):
        raise ValueError(f"{path}: unsupported PCD field types (SIZE {sizes}, TYPE {types})") from None


def _count(path: Path, header: dict) -> int:
    try:
        if "POINTS" in header:
            return int(header["POINTS"][0])
        return int(header["WIDTH"][0]) * int(header.get("HEIGHT", ["1"])[0])
    except (KeyError, IndexError, ValueError):
        raise ValueError(f"{path}: PCD header has no valid POINTS (or WIDTH / HEIGHT) count") from None


def _columns(path: Path, raw: bytes, offset: int, header: dict, dtype: np.dtype, count: int) -> dict:
    """The first value of each field as a (count,) float64 column, by field name."""
    mode = header["DATA"][0] if header["DATA"] else ""
    if mode == "ascii":
        try:
            table = np.loadtxt(raw[offset:].decode("latin-1").splitlines(), dtype=np.float64, ndmin=2)
        except ValueError as err:
            raise ValueError(f"{path}: cannot parse the ascii PCD rows ({err})") from None
        width = sum(int(np.prod(dtype[n].shape)) for n in dtype.names)
        if table.shape != (count, width) and not (count == 0 and table.size == 0):
            raise ValueError(f"{path}: expected {count} rows of {width} values, got an array of shape "
                             f"{table.shape}")
        starts = np.cumsum([0] + [int(np.prod(dtype[n].shape)) for n in dtype.names])
        return {n: table[:, starts[i]] for i, n in enumerate(dtype.names)}
    if mode == "binary":
        if len(raw) - offset < dtype.itemsize * count:
            raise ValueError(f"{path}: truncated: {count} points need {dtype.itemsize * count} bytes, "
                             f"the file has {len(raw) - offset}")
        rows = np.frombuffer(raw, dtype=dtype, count=count, offset=offset)
        return {n: rows[n][:, 0].astype(coordinate_dtype(rows[n])) for n in dtype.names}
    hint = " (re-save it with 'DATA binary' or 'DATA ascii', e.g. pcl_convert_pcd_ascii_binary)" \
        if mode == "binary_compressed" else ""
    raise ValueError(f"{path}: unsupported PCD storage 'DATA {mode}'{hint}")


def read_pcd(path: str | Path) -> tuple[np.ndarray, np.ndarray | None]:
    """Read a PCD point cloud.

    Args:
        path: the ``.pcd`` file.

    Returns:
        points: (N, 3) from the fields ``x y z``: float32 when a binary file stores them as
            ``F 4``, else float64 (``F 8``, integers, ascii;
            :func:`pointabstract.data.files.coordinate_dtype`).
        normals: (N, 3) from ``normal_x normal_y normal_z`` (the same rule), or None without them.

    Raises:
        ValueError: naming the file, for a header without ``DATA`` or ``x y z``, unsupported
            field types or storage, or a truncated / malformed body.
    """
    path = Path(path)
    raw = path.read_bytes()
    header, offset = _parse_header(path, raw)
    dtype = _row_dtype(path, header)
    columns = _columns(path, raw, offset, header, dtype, _count(path, header))
    points = np.stack([columns[a] for a in "xyz"], axis=1)
    normals = None
    if all(n in columns for n in _NORMALS):
        normals = np.stack([columns[n] for n in _NORMALS], axis=1)
    return points, normals
