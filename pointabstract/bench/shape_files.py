"""Shape files of every format :func:`pointabstract.data.read_shape` reads, written from one
polygon mesh with numpy alone: the files of the reader benchmark (:mod:`.readers`) and of the
readers' cross-library and fuzz tests.

:func:`torus` is the benchmark's mesh, a closed ``R x R`` grid (``R = 101``: 10k vertices;
``R = 405``: 164k vertices, 328k triangles).
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

__all__ = ["compressed_pcd", "lzf_compress", "mixed_polygons", "torus", "write_format_files",
           "write_shape_files"]


def torus(r: int) -> tuple[np.ndarray, np.ndarray]:
    """A closed torus grid: vertices (R * R, 3) float64 and quads (R * R, 4) int64."""
    angles = np.linspace(0, 2 * np.pi, r, endpoint=False)
    u, v = np.meshgrid(angles, angles, indexing="ij")
    ring = 1 + 0.3 * np.cos(v)
    vertices = np.stack([ring * np.cos(u), ring * np.sin(u), 0.3 * np.sin(v)], axis=-1).reshape(-1, 3)
    i, j = np.meshgrid(np.arange(r), np.arange(r), indexing="ij")
    a, b = i * r + j, ((i + 1) % r) * r + j
    c, d = ((i + 1) % r) * r + (j + 1) % r, i * r + (j + 1) % r
    return vertices, np.stack([a, b, c, d], axis=-1).reshape(-1, 4)


def mixed_polygons(quads: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sizes, flat indices): every other quad kept, the others split in two triangles."""
    polygons = []
    for k, q in enumerate(quads.tolist()):
        polygons += [q] if k % 2 else [[q[0], q[1], q[2]], [q[0], q[2], q[3]]]
    flat = [i for p in polygons for i in p]
    return np.array([len(p) for p in polygons], np.int64), np.array(flat, np.int64)


def _fans(sizes: np.ndarray, flat: np.ndarray) -> np.ndarray:
    from ..data.datasets.polygons import fan_triangles

    return fan_triangles(sizes, flat)[0]


def _rows(sizes: np.ndarray, flat: np.ndarray, prefix: str = "", base: int = 0) -> bytes:
    """One text line per polygon: ``prefix`` then its indices (+ base), or ``n i_1 .. i_n`` without prefix."""
    lines, at = [], 0
    for n in sizes.tolist():
        ids = " ".join(str(i + base) for i in flat[at:at + n].tolist())
        lines.append(f"{prefix}{ids}" if prefix else f"{n} {ids}")
        at += n
    return ("\n".join(lines) + "\n").encode()


def _ply_head(fmt: str, n: int, faces: int | None) -> bytes:
    head = f"ply\nformat {fmt} 1.0\nelement vertex {n}\n" + "".join(f"property float {a}\n" for a in "xyz")
    if faces is not None:
        head += f"element face {faces}\nproperty list uchar int vertex_indices\n"
    return (head + "end_header\n").encode()


def _text(rows: np.ndarray, fmt: str = "%.6f") -> bytes:
    return ("\n".join(" ".join(fmt % x for x in row) for row in rows.tolist()) + "\n").encode()


def _ply_polygons(sizes: np.ndarray, flat: np.ndarray) -> bytes:
    parts, at = [], 0
    for n in sizes.tolist():
        parts.append(struct.pack(f"<B{n}i", n, *flat[at:at + n].tolist()))
        at += n
    return b"".join(parts)


def _stl(corners: np.ndarray, *, upper: bool = False) -> bytes:
    text = "".join(f"facet normal 0 0 0\nouter loop\nvertex {a[0]:.6f} {a[1]:.6f} {a[2]:.6f}\n"
                   f"vertex {b[0]:.6f} {b[1]:.6f} {b[2]:.6f}\nvertex {c[0]:.6f} {c[1]:.6f} {c[2]:.6f}\n"
                   "endloop\nendfacet\n" for a, b, c in corners.tolist())
    text = f"solid t\n{text}endsolid t\n"
    return (text.upper() if upper else text).encode()


def write_shape_files(folder: Path, vertices: np.ndarray, sizes: np.ndarray,
                      flat: np.ndarray) -> list[tuple[str, Path, str]]:
    """One file per format feature of a polygon mesh (``sizes``, ``flat`` indices) under ``folder``:
    (label, path, kind "mesh" | "cloud"). Meshes keep the polygons where the format can (PLY, OBJ,
    OFF), STL and the "triangles" PLY get their fans; clouds hold the vertices."""
    folder.mkdir(parents=True, exist_ok=True)
    tris = _fans(sizes, flat)
    corners = vertices[tris].astype("<f4")  # (T, 3, 3)
    n, t, p = len(vertices), len(tris), len(sizes)
    normals = vertices / np.maximum(np.linalg.norm(vertices, axis=1, keepdims=True), 1e-12)
    out = []

    def add(label: str, name: str, data: bytes, kind: str = "mesh"):
        (folder / name).write_bytes(data)
        out.append((label, folder / name, kind))

    records = np.zeros(t, dtype=[("normal", "<f4", (3,)), ("corners", "<f4", (3, 3)), ("attr", "<u2")])
    records["corners"] = corners
    add("binary STL", "bin.stl", b"binary".ljust(80) + struct.pack("<I", t) + records.tobytes())
    add("ASCII STL", "ascii.stl", _stl(corners))
    add("ASCII STL, upper case", "upper.stl", _stl(corners, upper=True))
    tri_rows = np.zeros(t, dtype=[("n", "u1"), ("i", "<i4", (3,))])
    tri_rows["n"], tri_rows["i"] = 3, tris
    head = _ply_head("binary_little_endian", n, t)
    add("binary PLY, triangles", "tri.ply", head + vertices.astype("<f4").tobytes() + tri_rows.tobytes())
    add("binary PLY, mixed faces", "mixed.ply", _ply_head("binary_little_endian", n, p)
        + vertices.astype("<f4").tobytes() + _ply_polygons(sizes, flat))
    add("ASCII PLY, mixed faces", "ascii.ply", _ply_head("ascii", n, p) + _text(vertices)
        + _rows(sizes, flat))
    add("OBJ, mixed faces", "mesh.obj", b"v " + _text(vertices).replace(b"\n", b"\nv ")[:-2]
        + _rows(sizes, flat, "f ", 1))
    add("OFF, mixed faces", "mesh.off", f"OFF\n{n} {p} 0\n".encode() + _text(vertices) + _rows(sizes, flat))
    pcd = f"VERSION 0.7\nFIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nCOUNT 1 1 1\nWIDTH {n}\nHEIGHT 1\nPOINTS {n}\n"
    add("PCD ascii", "ascii.pcd", (pcd + "DATA ascii\n").encode() + _text(vertices), "cloud")
    add("PCD binary", "bin.pcd", (pcd + "DATA binary\n").encode() + vertices.astype("<f4").tobytes(), "cloud")
    add("PCD binary_compressed", "lzf.pcd", compressed_pcd(vertices), "cloud")
    add("XYZ", "cloud.xyz", _text(vertices), "cloud")
    add("XYZN", "cloud.xyzn", _text(np.hstack([vertices, normals])), "cloud")
    add("XYZRGB", "cloud.xyzrgb", _text(np.hstack([vertices, np.abs(normals)])), "cloud")
    add("PTS", "cloud.pts", f"{n}\n".encode() + _text(np.hstack([vertices, np.ones((n, 1))])), "cloud")
    return out


def write_format_files(folder: Path, r: int) -> list[tuple[str, Path, str]]:
    """:func:`write_shape_files` of the torus ``R = r`` (every other quad split in two triangles)."""
    vertices, quads = torus(r)
    return write_shape_files(folder, vertices, *mixed_polygons(quads))


def lzf_compress(data: bytes) -> bytes:
    """An LZF stream of ``data`` (greedy matches of 3 to 264 bytes within 8 KiB, as liblzf writes
    them): what PCL's ``binary_compressed`` holds. Plain Python: for test and benchmark files."""
    out, literal, table, i, n = bytearray(), bytearray(), {}, 0, len(data)

    def flush():
        for at in range(0, len(literal), 32):
            chunk = literal[at:at + 32]
            out.append(len(chunk) - 1)
            out.extend(chunk)
        literal.clear()

    while i < n:
        key = data[i:i + 3]
        ref = table.get(key) if len(key) == 3 else None
        table[key] = i
        if ref is None or i - ref - 1 > 8191:
            literal.append(data[i])
            i += 1
            continue
        length = 3
        while length < 264 and i + length < n and data[ref + length] == data[i + length]:
            length += 1
        flush()
        offset, extra = i - ref - 1, length - 2
        if extra < 7:
            out += bytes([(extra << 5) | (offset >> 8), offset & 255])
        else:
            out += bytes([(7 << 5) | (offset >> 8), extra - 7, offset & 255])
        i += length
    flush()
    return bytes(out)


def compressed_pcd(vertices: np.ndarray) -> bytes:
    """A ``DATA binary_compressed`` PCD of float32 ``x y z`` (fields stored one after another)."""
    n = len(vertices)
    raw = np.ascontiguousarray(vertices.astype("<f4").T).tobytes()  # all x, all y, all z
    packed = lzf_compress(raw)
    head = (f"VERSION 0.7\nFIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nCOUNT 1 1 1\nWIDTH {n}\nHEIGHT 1\n"
            f"POINTS {n}\nDATA binary_compressed\n").encode()
    return head + struct.pack("<II", len(packed), len(raw)) + packed
