"""Reader benchmark (``pointabstract bench data --formats``): our shape-file readers against
trimesh and Open3D on the same files, one file per format feature.

The files are written here from one numpy mesh, a torus grid of ``R x R`` vertices and ``2 R^2``
triangles (``R = 101``: 10k vertices; ``R = 405``: 164k vertices, 328k triangles), in every format
:func:`pointabstract.data.read_shape` reads; ``binary PLY, mixed faces`` keeps every other quad as
one 4-corner face. Each reader is timed as its user calls it (ours: ``read_shape``, with its
checks; trimesh: ``trimesh.load(path, force="mesh")`` for meshes, which merges an STL's corners as
ours does; Open3D: ``read_triangle_mesh`` / ``read_point_cloud``), best of ``repeats`` after one
warm-up call (the file in the OS cache, compiled code compiled). A library that cannot read a
format (or is not installed) shows ``-``.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["ReaderRow", "format_reader_table", "run_readers", "torus", "write_format_files"]


def torus(r: int) -> tuple[np.ndarray, np.ndarray]:
    """A closed torus grid: vertices (R * R, 3) float64 and quads (R * R, 4) int64."""
    u, v = np.meshgrid(np.linspace(0, 2 * np.pi, r, endpoint=False), np.linspace(0, 2 * np.pi, r, endpoint=False),
                       indexing="ij")
    vertices = np.stack([(1 + 0.3 * np.cos(v)) * np.cos(u), (1 + 0.3 * np.cos(v)) * np.sin(u), 0.3 * np.sin(v)],
                        axis=-1).reshape(-1, 3)
    i, j = np.meshgrid(np.arange(r), np.arange(r), indexing="ij")
    a, b = i * r + j, ((i + 1) % r) * r + j
    c, d = ((i + 1) % r) * r + (j + 1) % r, i * r + (j + 1) % r
    return vertices, np.stack([a, b, c, d], axis=-1).reshape(-1, 4)


def _triangles(quads: np.ndarray) -> np.ndarray:
    return np.concatenate([quads[:, [0, 1, 2]], quads[:, [0, 2, 3]]])


def _ply_head(fmt: str, n: int, faces: int | None, cloud_props: str = "") -> bytes:
    head = f"ply\nformat {fmt} 1.0\nelement vertex {n}\nproperty float x\nproperty float y\nproperty float z\n"
    head += cloud_props
    if faces is not None:
        head += f"element face {faces}\nproperty list uchar int vertex_indices\n"
    return (head + "end_header\n").encode()


def _text(rows: np.ndarray, fmt: str = "%.6f") -> bytes:
    return ("\n".join(" ".join(fmt % x for x in row) for row in rows.tolist()) + "\n").encode()


def _write_mixed_ply(path: Path, vertices: np.ndarray, quads: np.ndarray) -> None:
    """Binary PLY whose faces alternate a quad and its two triangles (mixed face sizes)."""
    parts = []
    for k, q in enumerate(quads.tolist()):
        if k % 2:
            parts.append(struct.pack("<B4i", 4, *q))
        else:
            parts.append(struct.pack("<B3i", 3, q[0], q[1], q[2]) + struct.pack("<B3i", 3, q[0], q[2], q[3]))
    count = len(quads) + (len(quads) + 1) // 2
    path.write_bytes(_ply_head("binary_little_endian", len(vertices), count)
                     + vertices.astype("<f4").tobytes() + b"".join(parts))


def write_format_files(folder: Path, r: int) -> list[tuple[str, Path, str]]:
    """One file per format feature of the torus ``R = r`` under ``folder``: (label, path, kind)."""
    folder.mkdir(parents=True, exist_ok=True)
    vertices, quads = torus(r)
    tris = _triangles(quads)
    corners = vertices[tris].astype("<f4")  # (T, 3, 3)
    n, t = len(vertices), len(tris)
    out = []

    def add(label: str, name: str, data: bytes, kind: str = "mesh"):
        (folder / name).write_bytes(data)
        out.append((label, folder / name, kind))

    records = np.zeros(t, dtype=[("normal", "<f4", (3,)), ("corners", "<f4", (3, 3)), ("attr", "<u2")])
    records["corners"] = corners
    add("binary STL", "bin.stl", b"binary".ljust(80) + struct.pack("<I", t) + records.tobytes())
    facets = "".join(f"facet normal 0 0 0\nouter loop\nvertex {a[0]:.6f} {a[1]:.6f} {a[2]:.6f}\n"
                     f"vertex {b[0]:.6f} {b[1]:.6f} {b[2]:.6f}\nvertex {c[0]:.6f} {c[1]:.6f} {c[2]:.6f}\n"
                     "endloop\nendfacet\n" for a, b, c in corners.tolist())
    add("ASCII STL", "ascii.stl", f"solid t\n{facets}endsolid t\n".encode())
    tri_rows = np.zeros(t, dtype=[("n", "u1"), ("i", "<i4", (3,))])
    tri_rows["n"], tri_rows["i"] = 3, tris
    add("binary PLY, triangles", "tri.ply", _ply_head("binary_little_endian", n, t)
        + vertices.astype("<f4").tobytes() + tri_rows.tobytes())
    _write_mixed_ply(folder / "mixed.ply", vertices, quads)
    out.append(("binary PLY, mixed faces", folder / "mixed.ply", "mesh"))
    add("ASCII PLY, triangles", "ascii.ply", _ply_head("ascii", n, t) + _text(vertices)
        + _text(np.hstack([np.full((t, 1), 3), tris]), "%d"))
    add("OBJ, triangles", "tri.obj", b"v " + _text(vertices).replace(b"\n", b"\nv ")[:-2]
        + b"f " + _text(tris + 1, "%d").replace(b"\n", b"\nf ")[:-2])
    add("OFF, triangles", "tri.off", f"OFF\n{n} {t} 0\n".encode() + _text(vertices)
        + _text(np.hstack([np.full((t, 1), 3), tris]), "%d"))
    pcd = f"VERSION 0.7\nFIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nCOUNT 1 1 1\nWIDTH {n}\nHEIGHT 1\nPOINTS {n}\n"
    add("PCD ascii", "ascii.pcd", (pcd + "DATA ascii\n").encode() + _text(vertices), "cloud")
    add("PCD binary", "bin.pcd", (pcd + "DATA binary\n").encode() + vertices.astype("<f4").tobytes(), "cloud")
    add("XYZ", "cloud.xyz", _text(vertices), "cloud")
    return out


@dataclass
class ReaderRow:
    label: str
    size: str  # e.g. "164k vertices"
    ms: dict  # reader name -> best time in ms, or None (cannot read / not installed)


def _best(call: Callable[[], object], repeats: int) -> float | None:
    try:
        call()  # warm-up (and the check that it reads the file at all)
    except Exception:  # noqa: BLE001 - a library that refuses the format: shown as '-'
        return None
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return 1e3 * min(times)


def _readers() -> dict[str, Callable[[Path, str], Callable[[], object]]]:
    """name -> (path, kind) -> a call reading the file; libraries that are not installed left out."""
    from ..data.files import read_shape

    readers = {"ours": lambda path, kind: lambda: read_shape(path)}
    try:
        import trimesh

        readers["trimesh"] = lambda path, kind: (lambda: trimesh.load(path, force="mesh")) if kind == "mesh" \
            else (lambda: trimesh.load(path))
    except ImportError:
        pass
    try:
        import open3d as o3d

        def o3d_call(path, kind):
            if kind == "mesh":
                return lambda: _o3d_check(o3d.io.read_triangle_mesh(str(path)).vertices)
            return lambda: _o3d_check(o3d.io.read_point_cloud(str(path)).points)

        readers["open3d"] = o3d_call
    except ImportError:
        pass
    return readers


def _o3d_check(points) -> None:
    """Open3D returns an empty geometry (and logs a warning) for a file it cannot read."""
    if len(points) == 0:
        raise ValueError("open3d read nothing")


def run_readers(folder: Path, *, sizes: tuple[int, ...] = (101, 405), repeats: int = 3,
                progress=print) -> list[ReaderRow]:
    """Time every reader on the files of each torus size (written under ``folder``)."""
    readers, rows = _readers(), []
    for r in sizes:
        for label, path, kind in write_format_files(folder / f"r{r}", r):
            ms = {name: _best(make(path, kind), repeats) for name, make in readers.items()}
            rows.append(ReaderRow(label, f"{r * r / 1000:.0f}k vertices", ms))
            progress(format_reader_table(rows[-1:], list(readers), header=False))
    return rows


def format_reader_table(rows: list[ReaderRow], names: list[str], *, header: bool = True) -> str:
    """Markdown: one row per file, ms per reader, and ours / the fastest other reader."""
    others = [n for n in names if n != "ours"]
    lines = ["| file | size | " + " | ".join(f"{n} ms" for n in names) + " | ours / fastest other |",
             "|---|---|" + "---:|" * (len(names) + 1)] if header else []
    for row in rows:
        cells = ["-" if row.ms.get(n) is None else f"{row.ms[n]:.1f}" for n in names]
        best = min((row.ms[n] for n in others if row.ms.get(n) is not None), default=None)
        ratio = "-" if best is None or row.ms.get("ours") is None else f"{row.ms['ours'] / best:.2f}x"
        lines.append(f"| {row.label} | {row.size} | " + " | ".join(cells) + f" | {ratio} |")
    return "\n".join(lines)
