"""Reading STL triangle meshes, binary and ascii.

Binary STL: an 80-byte header, a uint32 triangle count T, then T records of 50 bytes (normal,
three corners as little-endian float32, a uint16 attribute); bytes after the T records are
ignored (some exporters pad the file). ASCII STL: ``solid`` ... ``facet normal nx ny nz`` /
``outer loop`` / three ``vertex x y z`` / ``endloop`` / ``endfacet`` ... ``endsolid``, keywords
in any case (``SOLID``, ``VERTEX``). A file of exactly 84 + 50 T bytes is binary (some binary
headers begin with the word ``solid`` too); otherwise one that starts with ``solid`` is ascii
unless it holds no early ``vertex`` keyword and is long enough to be binary.

STL stores every triangle's corners separately; corners with identical coordinates are merged
into one vertex (in order of first appearance; ``-0.0`` and ``0.0`` are one coordinate), so the
vertices are the mesh's points. Binary corners stay float32 (as stored), ascii ones are float64.
The stored facet normals are not read (the sampler recomputes each triangle's normal from its
corners).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["read_stl"]

_RECORD = np.dtype([("normal", "<f4", (3,)), ("corners", "<f4", (3, 3)), ("attribute", "<u2")])


def _binary_corners(path: Path, buf: np.ndarray) -> np.ndarray:
    """(T, 3, 3) float32 corners of a binary STL."""
    if len(buf) < 84:
        raise ValueError(f"{path}: not an STL file (neither 'solid' ascii nor a binary file of "
                         f"84 + 50 x triangles bytes; it has {len(buf)} bytes)")
    count = int(buf[80:84].view("<u4")[0])
    if len(buf) < 84 + _RECORD.itemsize * count:
        raise ValueError(f"{path}: not an STL file, or a binary STL cut short: its header announces {count} "
                         f"triangles ({84 + _RECORD.itemsize * count} bytes), the file has {len(buf)} bytes")
    return np.frombuffer(buf, dtype=_RECORD, count=count, offset=84)["corners"]


def _is_ascii(buf: np.ndarray) -> bool:
    """Whether the file is ascii: it starts with 'solid' and is not exactly binary-sized, and holds a
    'vertex' keyword early or cannot be binary (a binary header may begin with 'solid' too)."""
    count = int(buf[80:84].view("<u4")[0]) if len(buf) >= 84 else -1
    binary_size = 84 + _RECORD.itemsize * count
    if len(buf) == binary_size or not bytes(buf[:512]).lstrip()[:5].lower() == b"solid":
        return False
    return b"vertex" in bytes(buf[:4096]).lower() or not (count > 0 and len(buf) >= binary_size)


def _ascii_corners(path: Path, buf: np.ndarray) -> np.ndarray:
    """(T, 3, 3) float64 corners of the ``vertex`` lines of an ascii STL (other lines unread)."""
    from .text_kernels import keyword_lines, token_floats, token_text

    tokens, short = keyword_lines(buf, b"vertex", 3)
    if short >= 0:
        raise ValueError(f"{path}:{short + 1}: bad vertex line: expected 'vertex x y z'")
    if len(tokens.line) % 9:
        raise ValueError(f"{path}: {len(tokens.line) // 3} 'vertex' lines, not a multiple of 3 "
                         "(truncated facet?)")

    def where(k):
        return f"{path}:{tokens.line[k] + 1}: bad vertex line: {token_text(buf, tokens, k)!r} is not a number"

    return token_floats(buf, tokens, where=where).reshape(-1, 3, 3)


def read_stl(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """Read an STL mesh (binary or ascii).

    Args:
        path: the ``.stl`` file.

    Returns:
        vertices: (V, 3) distinct corner positions, in order of first appearance: float32 for a
            binary file (as stored), float64 for an ascii one.
        faces: (T, 3) int64 triangles, ``faces[t, j]`` indexes ``vertices``; (0, 3) for a file
            with no triangle.

    Raises:
        ValueError: naming the file, for a file that is neither binary nor ascii STL, a binary
            file shorter than its triangle count says, a bad or missing ``vertex`` line.
    """
    from .binary_kernels import merge_rows

    path = Path(path)
    buf = np.fromfile(path, dtype=np.uint8)
    corners = _ascii_corners(path, buf) if _is_ascii(buf) else _binary_corners(path, buf)
    if not len(corners):
        return np.zeros((0, 3), corners.dtype), np.zeros((0, 3), dtype=np.int64)
    flat = np.ascontiguousarray(corners.reshape(-1, 3)) + corners.dtype.type(0)  # -0.0 -> 0.0
    bits = flat.view(np.uint32 if flat.dtype == np.float32 else np.uint64)
    inverse, first = merge_rows(bits)
    return flat[first], inverse.reshape(-1, 3)
