"""Reader benchmark (``pointabstract bench data --formats``): our shape-file readers against
trimesh and Open3D on the same files, one file per format feature.

The files are written by :mod:`.shape_files` from one numpy mesh, a torus grid of ``R x R``
vertices (``R = 101``: 10k vertices; ``R = 405``: 164k vertices, 328k triangles), in every format
:func:`pointabstract.data.read_shape` reads; the "mixed faces" files keep every other quad as one
4-corner face (the others as two triangles), the STL and "triangles" files hold the triangles.
Each reader is timed as its user calls it (ours: ``read_shape``, with its checks; trimesh:
``trimesh.load(path, force="mesh")`` for meshes, which merges an STL's corners as ours does;
Open3D: ``read_triangle_mesh`` / ``read_point_cloud``), best of ``repeats`` after one warm-up
call (the file in the OS cache, compiled code compiled). A library that cannot read a format
(or is not installed) shows ``-``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ReaderRow", "format_reader_table", "run_readers"]


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

        o3d.utility.set_verbosity_level(o3d.utility.VerbosityLevel.Error)  # its per-file notes are noise here

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
    from .shape_files import write_format_files

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
