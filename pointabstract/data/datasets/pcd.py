"""Reading PCD point clouds (the Point Cloud Library's format), ascii and binary.

A header of ``KEY values`` lines (``VERSION``, ``FIELDS x y z ...``, ``SIZE``, ``TYPE`` (F float,
I signed, U unsigned), ``COUNT``, ``WIDTH``, ``HEIGHT``, ``VIEWPOINT``, ``POINTS``) ends with
``DATA ascii`` or ``DATA binary``; the body is one row per point (ascii: whitespace separated;
binary: packed records, little-endian). ``DATA binary_compressed`` (PCL's default for large
scans): a uint32 compressed size, a uint32 decompressed size, then an LZF stream
(:func:`.binary_kernels.lzf_decompress`) that decodes to the fields one after another (all x,
then all y, ...). ``x y z`` are required; ``normal_x normal_y normal_z`` are read as normals;
other fields are skipped. The viewpoint is not applied: points are returned as stored, float32
when x y z are stored as float32 (``SIZE 4 TYPE F``), float64 otherwise (ascii, doubles, ints).

An organised cloud (``HEIGHT`` > 1, one point per pixel of a depth camera) marks pixels without a
return with NaN coordinates: those points are dropped and a note says how many. In an
unorganised cloud a NaN is an error (the caller names the point).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["read_pcd"]

_KEYS = ("VERSION", "FIELDS", "SIZE", "TYPE", "COUNT", "WIDTH", "HEIGHT", "VIEWPOINT", "POINTS", "DATA")
_NORMALS = ("normal_x", "normal_y", "normal_z")


def _parse_header(path: Path, buf: np.ndarray) -> tuple[dict, int]:
    """(header values by key, offset of the body)."""
    raw = bytes(buf[:1 << 16])  # a header is a dozen short lines
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
    if not all(c.isdigit() and int(c) > 0 for c in counts):  # a field of no values has no first value
        raise ValueError(f"{path}: PCD header COUNT values must be positive integers, got {counts}")
    kinds = {"F": "f", "I": "i", "U": "u"}
    try:
        return np.dtype([(f"{name}#{i}" if name == "_" else name, f"<{kinds[t]}{int(s)}", (int(c),))
                         for i, (name, s, t, c) in enumerate(zip(fields, sizes, types, counts))])
    except (KeyError, TypeError, ValueError):
        raise ValueError(f"{path}: unsupported PCD field types (SIZE {sizes}, TYPE {types})") from None


def _count(path: Path, header: dict) -> int:
    try:
        if "POINTS" in header:
            count = int(header["POINTS"][0])
        else:
            count = int(header["WIDTH"][0]) * int(header.get("HEIGHT", ["1"])[0])
    except (KeyError, IndexError, ValueError):
        count = -1
    if count < 0:
        raise ValueError(f"{path}: PCD header has no valid POINTS (or WIDTH / HEIGHT) count")
    return count


def _columns(path: Path, buf: np.ndarray, offset: int, header: dict, dtype: np.dtype, count: int) -> dict:
    """The first value of each field as a (count,) column (float64, or float32 as stored), by name."""
    mode = header["DATA"][0] if header["DATA"] else ""
    if mode == "ascii":
        return _ascii_columns(path, buf, offset, dtype, count)
    if mode == "binary":
        if len(buf) - offset < dtype.itemsize * count:
            raise ValueError(f"{path}: truncated: {count} points need {dtype.itemsize * count} bytes, "
                             f"the file has {len(buf) - offset}")
        rows = np.frombuffer(buf, dtype=dtype, count=count, offset=offset)
        return {n: _as_stored(rows[n][:, 0]) for n in dtype.names}
    if mode == "binary_compressed":
        return _compressed_columns(path, buf, offset, dtype, count)
    raise ValueError(f"{path}: unsupported PCD storage 'DATA {mode}' (ascii, binary or binary_compressed)")


def _as_stored(column: np.ndarray) -> np.ndarray:
    return column.astype(np.float32 if column.dtype == np.float32 else np.float64)


def _ascii_columns(path: Path, buf: np.ndarray, offset: int, dtype: np.dtype, count: int) -> dict:
    from .point_table import parse_rows

    width = sum(int(np.prod(dtype[n].shape)) for n in dtype.names)
    first_line = int(np.count_nonzero(buf[:offset] == 10)) + 1
    table = parse_rows(path, buf, offset, None, width, first_line=first_line)
    if len(table) != count:
        raise ValueError(f"{path}: expected {count} rows of {width} values, got {len(table)} rows")
    starts = np.cumsum([0] + [int(np.prod(dtype[n].shape)) for n in dtype.names])
    return {n: table[:, starts[i]] for i, n in enumerate(dtype.names)}


def _compressed_columns(path: Path, buf: np.ndarray, offset: int, dtype: np.dtype, count: int) -> dict:
    """The fields of a ``binary_compressed`` body (sizes checked before anything is allocated)."""
    from .binary_kernels import lzf_decompress

    if len(buf) - offset < 8:
        raise ValueError(f"{path}: truncated: no compressed sizes after 'DATA binary_compressed'")
    packed, size = (int(v) for v in buf[offset:offset + 8].view("<u4"))
    if size != dtype.itemsize * count:
        raise ValueError(f"{path}: binary_compressed data decompresses to {size} bytes, the header's {count} "
                         f"points of {dtype.itemsize} bytes need {dtype.itemsize * count}")
    if packed > len(buf) - offset - 8 or size > _LZF_MAX_RATIO * packed + 64:
        raise ValueError(f"{path}: truncated or damaged: {packed} compressed bytes announced for {size} "
                         f"bytes, the file holds {len(buf) - offset - 8} after the sizes")
    raw = lzf_decompress(buf[offset + 8:offset + 8 + packed], size)
    if raw is None:
        raise ValueError(f"{path}: damaged binary_compressed data (the LZF stream does not decode to the "
                         f"{size} bytes announced)")
    columns, at = {}, 0
    for name in dtype.names:  # field after field, each for every point
        field = dtype[name]
        width = field.itemsize * count
        columns[name] = _as_stored(raw[at:at + width].view(field.base).reshape(count, -1)[:, 0])
        at += width
    return columns


_LZF_MAX_RATIO = 88  # an LZF back reference of 3 bytes writes at most 264


def _header_int(header: dict, key: str) -> int | None:
    """The first value of ``key`` as an int, or None (missing, empty or not a number)."""
    try:
        return int(header[key][0])
    except (KeyError, IndexError, ValueError):
        return None


def _organised_nan(header: dict, points: np.ndarray) -> np.ndarray | None:
    """The rows to keep of an organised cloud with NaN points (None: keep all). Infinite coordinates
    are not a missing return: they stay, for the caller's error."""
    keep = ~np.isnan(points).any(axis=1)
    if (_header_int(header, "HEIGHT") or 1) <= 1 or keep.all():
        return None
    return keep


def read_pcd(path: str | Path) -> tuple[np.ndarray, np.ndarray | None, str | None]:
    """Read a PCD point cloud.

    Args:
        path: the ``.pcd`` file.

    Returns:
        points: (N, 3) from the fields ``x y z``: float32 when stored as float32, else float64.
        normals: (N, 3) from ``normal_x normal_y normal_z`` (same rule), or None without them.
        note: for an organised cloud with NaN points, how many were dropped; else None.

    Raises:
        ValueError: naming the file, for a header without ``DATA`` or ``x y z``, unsupported
            field types or storage, or a truncated / malformed / damaged body.
    """
    path = Path(path)
    buf = np.fromfile(path, dtype=np.uint8)
    header, offset = _parse_header(path, buf)
    dtype = _row_dtype(path, header)
    count = _count(path, header)
    columns = _columns(path, buf, offset, header, dtype, count)
    points = _stack(columns, "xyz")
    normals = _stack(columns, _NORMALS) if all(n in columns for n in _NORMALS) else None
    keep = _organised_nan(header, points)
    if keep is None:
        return points, normals, None
    note = (f"organised cloud ({_header_int(header, 'WIDTH')} x {_header_int(header, 'HEIGHT')}): "
            f"{count - int(keep.sum())} of {count} points have NaN coordinates (no return): dropped")
    return points[keep], None if normals is None else normals[keep], note


def _stack(columns: dict, names) -> np.ndarray:
    kind = np.float32 if all(columns[n].dtype == np.float32 for n in names) else np.float64
    return np.stack([columns[n].astype(kind) for n in names], axis=1)
