"""Reading STL triangle meshes, binary and ascii.

Binary STL: an 80-byte header, a uint32 triangle count T, then T records of 50 bytes (normal,
three corners as little-endian float32, a uint16 attribute). ASCII STL: ``solid`` ...
``facet normal nx ny nz`` / ``outer loop`` / three ``vertex x y z`` / ``endloop`` /
``endfacet`` ... ``endsolid``. A file is binary when its size is exactly 84 + 50 T bytes (some
binary files begin with the word ``solid`` too), ascii otherwise.

STL stores every triangle's corners separately; corners with identical coordinates are merged
into one vertex, so the vertices are the mesh's points. The stored facet normals are not read
(the sampler recomputes each triangle's normal from its corners).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

__all__ = ["read_stl"]

_RECORD = np.dtype([("normal", "<f4", (3,)), ("corners", "<f4", (3, 3)), ("attribute", "<u2")])
_VERTEX = re.compile(rb"^\s*vertex\s+(\S+)\s+(\S+)\s+(\S+)", re.MULTILINE)


def _binary_corners(raw: bytes) -> np.ndarray | None:
    """(T, 3, 3) corners when ``raw`` has the exact size of a binary STL, else None."""
    if len(raw) < 84:
        return None
    count = int(np.frombuffer(raw, dtype="<u4", count=1, offset=80)[0])
    if len(raw) != 84 + _RECORD.itemsize * count:
        return None
    return np.frombuffer(raw, dtype=_RECORD, count=count, offset=84)["corners"].astype(np.float32)


def _ascii_corners(path: Path, raw: bytes) -> np.ndarray:
    if not raw.lstrip().startswith(b"solid"):
        raise ValueError(f"{path}: not an STL file (neither 'solid' ascii nor a binary file of "
                         f"84 + 50 x triangles bytes; it has {len(raw)} bytes)")
    values = _VERTEX.findall(raw)
    try:
        corners = np.array(values, dtype=np.float64)
    except ValueError:
        bad = next(v for v in values if not _is_float_row(v))
        raise ValueError(f"{path}: bad vertex line 'vertex {b' '.join(bad).decode('latin-1')[:60]}': "
                         "expected 3 numbers") from None
    if len(corners) % 3:
        raise ValueError(f"{path}: {len(corners)} 'vertex' lines, not a multiple of 3 (truncated facet?)")
    return corners.reshape(-1, 3, 3)


def _is_float_row(row: tuple[bytes, ...]) -> bool:
    try:
        [float(v) for v in row]
    except ValueError:
        return False
    return True


def read_stl(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """Read an STL mesh (binary or ascii).

    Args:
        path: the ``.stl`` file.

    Returns:
        vertices: (V, 3) distinct corner positions (sorted lexicographically), float32 from a
            binary file (as stored), float64 from an ascii one.
        faces: (T, 3) int64 triangles, ``faces[t, j]`` indexes ``vertices``; (0, 3) for a file
            with no triangle.

    Raises:
        ValueError: naming the file, for a file that is neither binary nor ascii STL, a bad or
            missing ``vertex`` line.
    """
    path = Path(path)
    raw = path.read_bytes()
    corners = _binary_corners(raw)
    if corners is None:
        corners = _ascii_corners(path, raw)
    if not len(corners):
        return np.zeros((0, 3)), np.zeros((0, 3), dtype=np.int64)
    vertices, inverse = np.unique(corners.reshape(-1, 3), axis=0, return_inverse=True)
    return vertices, inverse.reshape(-1, 3).astype(np.int64)
