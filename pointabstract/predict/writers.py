"""The files ``pointabstract predict`` writes, each atomically (a temporary file renamed over it).

- classification: ``predictions.json`` (every file's top-k classes, probabilities, notes) and
  ``predictions.csv`` (``file,rank,class,probability``, one row per class of each file's top k);
- reconstruction: ``<name>.recon.ply`` (decoded points in the input's coordinates, coloured by
  capsule) and, with ``--per-capsule``, ``<name>.capsule<j>.ply`` (the points of capsule j);
- part segmentation: ``<name>.parts.ply`` (every input point, input order, coloured by part; a
  mesh keeps its faces) and ``<name>.parts.txt`` (one global part id per line, input order).

PLY files are binary little-endian with ``x y z`` in the result's precision (``double`` for a
float64 input, so UTM coordinates keep their millimetres; ``float`` otherwise) and ``red green
blue`` uchar.
``<name>`` is the input's file name without its extension, made unique within one run
(:func:`output_names`: ``a/chair.obj``, ``b/chair.obj``, ``chair-2.npy`` -> ``chair``,
``chair-3``, ``chair-2``).

A run never replaces a file it did not write itself: :func:`existing_outputs` lists the files
of a planned run that are already there, and ``pointabstract predict`` refuses them before any
work unless ``--overwrite`` is given (then it says which it replaced).
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
from pathlib import Path

import numpy as np

from .results import ClassPrediction, PartPrediction, Reconstruction

__all__ = ["CLASS_FILES", "existing_outputs", "output_names", "ply_bytes", "write_classes", "write_parts",
           "write_reconstruction"]

CLASS_FILES = ("predictions.json", "predictions.csv")  # what a classification run writes under --out


def output_names(sources: list[str]) -> list[str]:
    """A distinct base name per source, in order: its file name without the extension (``stem``)
    when no earlier source took it, else ``stem-k`` with the smallest k >= 2 that is neither
    taken by an earlier source nor the stem of any source. Names are compared ignoring case (two
    names differing only in case are one file on macOS and Windows disks).

    ``["a/chair.obj", "b/chair.obj", "chair-2.npy"]`` -> ``["chair", "chair-3", "chair-2"]``:
    ``chair-2`` belongs to the file of that name, whatever the order.
    """
    stems = [Path(source).stem or "cloud" for source in sources]
    reserved = {stem.casefold() for stem in stems}
    taken: set[str] = set()
    names = []
    for stem in stems:
        name, k = stem, 2
        while name.casefold() in taken:
            while f"{stem}-{k}".casefold() in taken | reserved:
                k += 1
            name = f"{stem}-{k}"
        taken.add(name.casefold())
        names.append(name)
    return names


def existing_outputs(out: Path, task: str, names: list[str], *, per_capsule: bool = False) -> list[Path]:
    """The files under ``out`` that a ``task`` run writing ``names`` would replace (or could not,
    being folders): the classification files, ``<name>.recon.ply`` (and with ``per_capsule`` any
    ``<name>.capsule<j>.ply``), or ``<name>.parts.ply`` and ``<name>.parts.txt``."""
    if not out.is_dir():
        return []
    if task == "classification":
        planned = [out / n for n in CLASS_FILES]
    elif task == "reconstruction":
        capsules = re.compile(r"(.*)\.capsule\d+\.ply")
        mine = {n.casefold() for n in names}
        planned = [out / f"{n}.recon.ply" for n in names]
        planned += [p for p in sorted(out.iterdir()) if per_capsule and (m := capsules.fullmatch(p.name))
                    and m[1].casefold() in mine]
    else:
        planned = [out / f"{n}.parts.{ext}" for n in names for ext in ("ply", "txt")]
    return [p for p in planned if p.exists()]


def _write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path


def ply_bytes(points: np.ndarray, colors: np.ndarray, faces: np.ndarray | None = None) -> bytes:
    """A binary PLY of ``points`` (V, 3) with ``colors`` (V, 3) floats in [0, 1] (and ``faces``
    (F, 3) int triangles); coordinates as ``double`` when ``points`` is float64, else ``float``."""
    wide = np.asarray(points).dtype == np.float64
    scalar, kind = ("<f8", "double") if wide else ("<f4", "float")
    vertex = np.empty(len(points), dtype=[("x", scalar), ("y", scalar), ("z", scalar), ("red", "u1"),
                                          ("green", "u1"), ("blue", "u1")])
    for i, axis in enumerate("xyz"):
        vertex[axis] = points[:, i]
    rgb = np.clip(np.rint(np.asarray(colors) * 255), 0, 255).astype(np.uint8)
    for i, channel in enumerate(("red", "green", "blue")):
        vertex[channel] = rgb[:, i]
    header = ["ply", "format binary_little_endian 1.0", f"element vertex {len(points)}",
              *(f"property {kind} {a}" for a in "xyz"),
              *(f"property uchar {c}" for c in ("red", "green", "blue"))]
    body = vertex.tobytes()
    if faces is not None and len(faces):
        header += [f"element face {len(faces)}", "property list uchar int vertex_indices"]
        table = np.empty(len(faces), dtype=[("n", "u1"), ("v", "<i4", (3,))])
        table["n"], table["v"] = 3, faces
        body += table.tobytes()
    return ("\n".join([*header, "end_header"]) + "\n").encode() + body


def write_classes(results: list[ClassPrediction], out: Path) -> list[Path]:
    """``predictions.json`` and ``predictions.csv`` under ``out``."""
    records = [{"file": r.source, "top_k": [{"class": n, "probability": round(p, 6)}
                                            for n, p in zip(r.names, r.probabilities)],
                "votes": r.votes, "notes": list(r.notes)} for r in results]
    text = io.StringIO()
    table = csv.writer(text, lineterminator="\n")
    table.writerow(["file", "rank", "class", "probability"])
    for r in results:
        ranked = enumerate(zip(r.names, r.probabilities), 1)
        table.writerows([r.source, rank, n, f"{p:.6f}"] for rank, (n, p) in ranked)
    return [_write(out / CLASS_FILES[0], (json.dumps(records, indent=1) + "\n").encode()),
            _write(out / CLASS_FILES[1], text.getvalue().encode())]


def write_reconstruction(r: Reconstruction, out: Path, name: str, *, per_capsule: bool = False) -> list[Path]:
    """``<name>.recon.ply`` (and one PLY per capsule) under ``out``."""
    from ..viz.core.colors import class_palette

    colors = class_palette(r.num_capsules)[r.capsule]
    paths = [_write(out / f"{name}.recon.ply", ply_bytes(r.points, colors))]
    if per_capsule:
        for j in range(r.num_capsules):
            keep = r.capsule == j
            paths.append(_write(out / f"{name}.capsule{j}.ply", ply_bytes(r.points[keep], colors[keep])))
    return paths


def write_parts(r: PartPrediction, out: Path, name: str, *, faces: np.ndarray | None = None) -> list[Path]:
    """``<name>.parts.ply`` (coloured by part, ``faces`` kept) and ``<name>.parts.txt``."""
    from ..viz.core.colors import part_palette

    colors = part_palette()[r.labels]
    text = "".join(f"{int(p)}\n" for p in r.labels)
    return [_write(out / f"{name}.parts.ply", ply_bytes(r.points, colors, faces)),
            _write(out / f"{name}.parts.txt", text.encode())]
