"""Data benchmark: samples per second through a torch DataLoader for each ModelNet layout.

Tiny on-disk copies of the HDF5, resampled-txt and OFF layouts are written to a temporary
folder from procedurally generated shapes (random spheres, boxes and cylinders, sampled with
:func:`~pointabstract.data.sample_surface`), or the datasets under ``root`` are read as they
are. Each loader is timed over one epoch after a warm-up epoch (workers already started,
files in the OS cache). Synthetic generation (:mod:`pointabstract.data.synthetic`, when
importable) is timed in shapes per second.

Run: ``python tools/benchmark_data.py`` (``--help`` for sizes, ``--root`` for real data).
``--formats`` times the shape-file readers against trimesh and Open3D instead (:mod:`.readers`).
The ``write_*`` functions are also used by the tests to build each layout.
"""

from __future__ import annotations

import argparse
import platform
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ..data import MODELNET40, sample_surface, write_off
from .records import check_at_least, kept, write_records

__all__ = ["Row", "add_arguments", "format_table", "main", "random_meshes", "run", "time_loader",
           "write_modelnet_hdf5", "write_modelnet_off", "write_modelnet_resampled"]


@dataclass
class Row:
    what: str  # e.g. "ModelNet40 hdf5, sampling=first"
    samples: int
    points: int
    per_second: float
    unit: str = "samples/s"
    note: str = ""


def random_meshes(count: int, rng: np.random.Generator) -> list[tuple[np.ndarray, np.ndarray]]:
    """``count`` small triangle meshes (spheres, boxes, cylinders with random proportions)."""
    import trimesh

    makers = (lambda: trimesh.creation.icosphere(subdivisions=2),
              lambda: trimesh.creation.box(extents=rng.uniform(0.3, 1.0, 3)),
              lambda: trimesh.creation.cylinder(radius=rng.uniform(0.2, 0.5), height=rng.uniform(0.5, 1.5)))
    meshes = []
    for i in range(count):
        mesh = makers[i % len(makers)]()
        meshes.append((np.asarray(mesh.vertices) * rng.uniform(0.5, 1.5, 3), np.asarray(mesh.faces)))
    return meshes


def _clouds(meshes, points: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """(S, P, 3) points and normals sampled on ``meshes``."""
    sampled = [sample_surface(v, f, points, rng) for v, f in meshes]
    return np.stack([p for p, _ in sampled]), np.stack([n for _, n in sampled])


def write_modelnet_hdf5(folder: Path, split: str, *, pos: np.ndarray, labels: np.ndarray, classes=MODELNET40,
                        normals: np.ndarray | None = None, files: int = 1) -> None:
    """PointNet HDF5 layout: ``ply_data_<split><i>.h5`` (data, label (S, 1), normal) + shape_names.txt."""
    import h5py

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "shape_names.txt").write_text("\n".join(classes) + "\n")
    for i, rows in enumerate(np.array_split(np.arange(len(pos)), files)):
        with h5py.File(folder / f"ply_data_{split}{i}.h5", "w") as handle:
            handle["data"] = pos[rows].astype(np.float32)
            handle["label"] = labels[rows].astype(np.uint8)[:, None]
            if normals is not None:
                handle["normal"] = normals[rows].astype(np.float32)


def write_modelnet_resampled(folder: Path, split: str, *, pos: np.ndarray, normals: np.ndarray,
                             labels: np.ndarray, classes=MODELNET40, first_id: int = 1) -> list[str]:
    """Resampled layout: ``<class>/<id>.txt`` rows x,y,z,nx,ny,nz, the split list and shape names."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "modelnet40_shape_names.txt").write_text("\n".join(classes) + "\n")
    ids = []
    for i, (p, n, label) in enumerate(zip(pos, normals, labels)):
        shape_id = f"{classes[label]}_{first_id + i:04d}"
        (folder / classes[label]).mkdir(exist_ok=True)
        np.savetxt(folder / classes[label] / f"{shape_id}.txt", np.hstack([p, n]), fmt="%.6f", delimiter=",")
        ids.append(shape_id)
    listing = folder / f"modelnet40_{split}.txt"
    previous = listing.read_text() if listing.exists() else ""
    listing.write_text(previous + "".join(f"{i}\n" for i in ids))
    return ids


def write_modelnet_off(folder: Path, split: str, *, meshes, labels: np.ndarray, classes=MODELNET40,
                       first_id: int = 1) -> list[Path]:
    """Original mesh layout: ``<class>/<split>/<class>_NNNN.off``."""
    paths = []
    for i, ((vertices, faces), label) in enumerate(zip(meshes, labels)):
        path = folder / classes[label] / split / f"{classes[label]}_{first_id + i:04d}.off"
        path.parent.mkdir(parents=True, exist_ok=True)
        write_off(path, vertices, faces)
        paths.append(path)
    return paths


def build_layouts(tmp: Path, *, shapes: int, points: int, txt_points: int, seed: int = 0) -> Path:
    """Write ``shapes`` training shapes in the three ModelNet layouts under ``tmp``; returns tmp."""
    rng = np.random.default_rng(seed)
    meshes = random_meshes(shapes, rng)
    labels = np.arange(shapes) % len(MODELNET40)
    pos, normals = _clouds(meshes, points, rng)
    write_modelnet_hdf5(tmp / "modelnet40_ply_hdf5_2048", "train", pos=pos, labels=labels, normals=normals,
                        files=2)
    pos, normals = _clouds(meshes, txt_points, rng)
    write_modelnet_resampled(tmp / "modelnet40_normal_resampled", "train", pos=pos, normals=normals,
                             labels=labels)
    write_modelnet_off(tmp / "ModelNet40", "train", meshes=meshes, labels=labels)
    return tmp


def time_loader(dataset, *, workers: int = 2, batch_size: int = 32, epochs: int = 1) -> float:
    """Samples per second of ``epochs`` passes through a DataLoader, after one warm-up pass."""
    loader = torch.utils.data.DataLoader(dataset, batch_size=batch_size, num_workers=workers,
                                         persistent_workers=workers > 0, shuffle=False)
    for _ in loader:  # warm-up: start the workers, fill the OS file cache
        pass
    start = time.perf_counter()
    for _ in range(epochs):
        for _ in loader:
            pass
    return epochs * len(dataset) / (time.perf_counter() - start)


def _time_generate(tmp: Path, per_class: int) -> Row | None:
    try:
        from ..data import generate_synthetic as generate
    except ImportError:
        return None
    start = time.perf_counter()
    generate(tmp / "synthetic", train_per_class=per_class, test_per_class=1, num_points=2048, seed=0,
             progress=False)
    shapes = 16 * (per_class + 1)
    return Row("synthetic generation (16 categories)", shapes, 2048,
               shapes / (time.perf_counter() - start), "shapes/s", "generate() defaults, as `data synth`")


def run(*, shapes: int = 256, points: int = 2048, txt_points: int = 10_000, num_points: int = 1024,
        workers: int = 2, batch_size: int = 32, epochs: int = 1, root: Path | None = None,
        synth_per_class: int = 8, progress=print) -> list[Row]:
    """Time every ModelNet layout (tiny synthetic copies, or those found under ``root``)."""
    from ..data import MODELNET_LAYOUTS as LAYOUTS
    from ..data import ModelNet40, detect_layout

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        if root is None:
            progress(f"writing {shapes} shapes in each layout to {tmp} ...")
            root = build_layouts(tmp / "data", shapes=shapes, points=points, txt_points=txt_points)
        for layout in LAYOUTS:
            try:
                detect_layout(root, layout=layout)
            except ValueError:
                continue
            if layout == "off":
                start = time.perf_counter()
                dataset = ModelNet40(root, "train", layout="off", num_points=num_points, mesh_points=points,
                                     cache_dir=tmp / "cache", progress=False)
                rows.append(Row("ModelNet40 off: building the cache (once)", len(dataset), points,
                                len(dataset) / (time.perf_counter() - start), "meshes/s", "single process"))
            samplings = ("first", "random", "fps") if layout == "hdf5" else ("first", "random")
            for sampling in samplings:
                dataset = ModelNet40(root, "train", layout=layout, num_points=num_points, sampling=sampling,
                                     cache_dir=tmp / "cache", mesh_points=points, progress=False)
                speed = time_loader(dataset, workers=workers, batch_size=batch_size, epochs=epochs)
                name = "cached off" if layout == "off" else layout
                rows.append(Row(f"ModelNet40 {name}, sampling={sampling}", len(dataset), num_points, speed,
                                note=f"{workers} workers, batch {batch_size}"))
                progress(format_table(rows[-1:], header=False))
        synth = _time_generate(tmp, synth_per_class) if synth_per_class > 0 else None
        rows += [synth] if synth is not None else []
    return rows


def format_table(rows: list[Row], *, header: bool = True) -> str:
    """A markdown table of the rows."""
    lines = ["| what | shapes | points | speed | note |", "|---|---:|---:|---:|---|"] if header else []
    lines += [f"| {r.what} | {r.samples} | {r.points} | {r.per_second:,.0f} {r.unit} | {r.note} |"
              for r in rows]
    return "\n".join(lines)


def environment() -> str:
    return (f"{platform.processor() or platform.machine()}, torch {torch.__version__}, "
            f"{torch.get_num_threads()} torch threads, python {platform.python_version()}")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The benchmark's options (``tools/benchmark_data.py``, or a ``bench data`` command)."""
    parser.add_argument("--shapes", type=int, default=256, help="shapes written per layout")
    parser.add_argument("--points", type=int, default=2048, help="points stored per shape (HDF5, cache)")
    parser.add_argument("--txt-points", type=int, default=10_000, help="rows per resampled .txt file")
    parser.add_argument("--num-points", type=int, default=1024, help="points per sample")
    parser.add_argument("--workers", type=int, default=2, help="DataLoader workers")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=1, help="timed epochs (after one warm-up)")
    parser.add_argument("--synth-per-class", type=int, default=8,
                        help="training shapes per category for the generation row (0: skip)")
    parser.add_argument("--root", type=Path, help="time the ModelNet layouts found here instead")
    parser.add_argument("--out", type=Path, help="also write the table to this markdown file")
    parser.add_argument("--formats", action="store_true",
                        help="time the shape-file readers instead: ours vs trimesh vs Open3D (when "
                             "installed), one file per format feature (pointabstract/bench/readers.py)")
    parser.add_argument("--grid", type=int, nargs="+", default=[101, 405],
                        help="with --formats: torus grid sizes R (R x R vertices; 101: 10k, 405: 164k)")
    parser.add_argument("--repeats", type=int, default=3,
                        help="with --formats: timed calls per reader (the best is shown)")


def main(args: argparse.Namespace, command: str = "python tools/benchmark_data.py") -> int:
    """Run the benchmark with parsed ``args``, print (and optionally write) the table."""
    _check_options(args)
    if args.formats:
        return _formats(args, command)
    print(f"# data benchmark: `{command}` on {environment()}", flush=True)
    rows = run(shapes=args.shapes, points=args.points, txt_points=args.txt_points, num_points=args.num_points,
               workers=args.workers, batch_size=args.batch_size, epochs=args.epochs, root=args.root,
               synth_per_class=args.synth_per_class, progress=lambda s: print(s, flush=True))
    table = format_table(rows)
    print("\n" + table)
    if args.out:
        write_records({args.out: f"# Data benchmark\n\n`{command}` on {environment()}.\n\n{table}\n"},
                      measured=len(rows), what="bench data")
        print(f"wrote {args.out}")
    return 0


def _formats(args: argparse.Namespace, command: str) -> int:
    """``--formats``: the reader table (pointabstract/bench/readers.py)."""
    from .readers import format_reader_table, run_readers

    print(f"# reader benchmark: `{command}` on {environment()}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        rows = run_readers(Path(tmp), sizes=tuple(args.grid), repeats=args.repeats,
                           progress=lambda s: print(s, flush=True))
    table = format_reader_table(rows, list(rows[0].ms))
    print("\n" + table)
    if args.out:
        write_records({args.out: f"# Reader benchmark\n\n`{command}` on {environment()}.\n\n{table}\n"},
                      measured=len(rows), what="bench data --formats")
        print(f"wrote {args.out}")
    return 0


def _check_options(args: argparse.Namespace) -> None:
    """Refuse, before any work, options out of range or a run with nothing to time."""
    from ..data import MODELNET_LAYOUTS, detect_layout
    from ..engine.run_dir import check_writable_file

    for option in ("shapes", "points", "txt_points", "num_points", "batch_size", "epochs"):
        check_at_least(f"--{option.replace('_', '-')}", getattr(args, option), 1)
    check_at_least("--workers", args.workers, 0)
    check_at_least("--synth-per-class", args.synth_per_class, 0, "0: skip")
    check_at_least("--repeats", args.repeats, 1)
    for r in args.grid:
        check_at_least("--grid", r, 3, "a torus grid needs 3 x 3 vertices")
    if args.out:
        check_writable_file(args.out)
    if args.root is None or args.synth_per_class > 0 or args.formats:
        return
    for layout in MODELNET_LAYOUTS:
        try:
            detect_layout(args.root, layout=layout)
            return
        except ValueError:
            continue
    where = f" ({kept([args.out])})" if args.out else ""
    raise ValueError(f"nothing to run: --root {args.root} holds no ModelNet layout and --synth-per-class 0 "
                     f"skips the generation row{where}")
