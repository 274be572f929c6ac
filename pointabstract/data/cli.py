"""``pointabstract data ...``: inspect dataset folders, generate the synthetic set, prepare caches.

- ``data info ROOT [--check]``: every layout found under ROOT, its counts per split and class,
  and the problems found (``--check`` reads every file, not only the lists and headers); a
  folder of class folders of the user's own shapes (``data.dataset=folder``) when no published
  layout is found.
- ``data synth [--level easy|hard] [--out DIR]``: the built-in synthetic dataset, easy or hard
  (:mod:`pointabstract.data.synthetic`; the hard level's nuisances each have a ``--no-*`` switch).
- ``data prepare ROOT``: sample the ``ModelNet40/<class>/<split>/*.off`` meshes once into the
  HDF5 cache that :class:`~pointabstract.data.ModelNet40` reads.
- ``data md5 FILE [--expected HEX]``: md5 of a downloaded archive, checked when a value is known.

Any dataset root works: ``pointabstract data info /data/shapes`` (ROOT defaults to ``datasets``).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from collections import Counter
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from .categories import MODELNET10, MODELNET40, SHAPENET_PART

__all__ = ["add_parser", "inspect_root"]


def _counts_lines(names: list[str]) -> list[str]:
    counts = Counter(names)
    lines = []
    for entry in (f"{name} {counts[name]}" for name in sorted(counts)):
        if lines and len(lines[-1]) + len(entry) < 100:
            lines[-1] += f", {entry}"
        else:
            lines.append(f"    {entry}")
    return lines


def stage_lines(progress: bool = True) -> bool:
    """Whether to print one line per stage: unless both stdout and stderr are terminals (where
    the progress bars show), as training prints a line per epoch into logs and files."""
    return progress and not (sys.stdout.isatty() and sys.stderr.isatty())


def _check_samples(dataset, problems: list[str], progress: bool, what: str = "") -> None:
    """Load every sample of ``dataset``, collecting the errors instead of stopping at the first;
    ``what`` (e.g. ``"ModelNet40 'hdf5' train"``) names it in the stage line."""
    from tqdm.auto import tqdm

    rng = np.random.default_rng(0)
    bar = not (progress and sys.stderr.isatty())  # no carriage-return spam in logs and files
    started, before = time.perf_counter(), len(problems)
    for index in tqdm(range(len(dataset)), desc="checking", disable=bar, leave=False):
        try:
            dataset.load(index, rng)
        except ValueError as err:
            problems.append(str(err))
    if stage_lines(progress):
        print(f"checked {what}: {len(dataset)} shapes, {len(problems) - before} problems "
              f"({time.perf_counter() - started:.1f} s)", flush=True)


def _split_lines(open_split: Callable[[], Any], split: str, what: str,
                 counts: Callable[[Any], tuple[str, list[str]]], check: bool, progress: bool,
                 lines: list[str], problems: list[str]) -> None:
    """The ``split`` of a layout found under the root (``what``: dataset and layout): its size
    line (``counts`` gives the size text and each sample's class name), counts per class, and its
    samples read when ``check``. A split that does not open is a problem in the listing, not an
    error: ``data info`` reports everything it finds in one run."""
    try:
        dataset = open_split()
    except ValueError as err:
        problems.append(str(err))
        return
    size, names = counts(dataset)
    lines.append(f"  {split}: {size}")
    lines += _counts_lines(names)
    if check:
        _check_samples(dataset, problems, progress, f"{what} {split}")


def _modelnet_counts(dataset) -> tuple[str, list[str]]:
    names = [dataset.classes[c] for c in dataset.labels]
    return f"{len(dataset)} shapes, {len(set(dataset.labels))} classes", names


def _part_counts(dataset) -> tuple[str, list[str]]:
    return f"{len(dataset)} shapes", [SHAPENET_PART[c].name for c in dataset.categories]


def _core_counts(dataset) -> tuple[str, list[str]]:
    return f"{len(dataset)} clouds", [dataset.category_names[c] for c in dataset.categories]


def _modelnet(root: Path, check: bool, progress: bool, lines: list[str], problems: list[str]) -> bool:
    from .datasets.modelnet import LAYOUTS, ModelNet40, detect_layout
    from .datasets.off import find_meshes, read_off
    from .datasets.off_cache import unknown_class

    found = False
    for layout in LAYOUTS:
        try:
            kind, folder = detect_layout(root, layout=layout, off_folders=("ModelNet40", "ModelNet10"))
        except ValueError:
            continue
        found = True
        lines.append(f"ModelNet40, layout {kind!r}, in {folder}")
        for split in ("train", "test"):
            if kind == "off":
                meshes = find_meshes(folder, split)
                caches = _off_caches(folder, split) or "none"
                lines.append(f"  {split}: {len(meshes)} meshes; caches: {caches}")
                lines += _counts_lines([p.parents[1].name for p in meshes])
                known = MODELNET10 if folder.name == "ModelNet10" else MODELNET40
                problems += [unknown_class(p, folder) for p in meshes if p.parents[1].name not in known]
                for path in meshes if check else []:
                    try:
                        read_off(path)
                    except ValueError as err:
                        problems.append(str(err))
                continue
            _split_lines(partial(ModelNet40, root, split, layout=kind, num_points=None), split,
                         f"ModelNet40 {kind!r}", _modelnet_counts, check, progress, lines, problems)
    return found


def _shapenet(root: Path, check: bool, progress: bool, lines: list[str], problems: list[str]) -> bool:
    from .datasets.shapenet_core import ShapeNetCore, find_ply_folder
    from .datasets.shapenet_part import PART_LAYOUTS, ShapeNetPart, detect_part_layout

    found = False
    for layout in PART_LAYOUTS:
        try:
            kind, folder = detect_part_layout(root, layout=layout)
        except ValueError:
            continue
        found = True
        lines.append(f"ShapeNetPart, layout {kind!r}, in {folder}")
        for split in ("train", "val", "test"):
            _split_lines(partial(ShapeNetPart, root, split, layout=kind, num_points=None), split,
                         f"ShapeNetPart {kind!r}", _part_counts, check, progress, lines, problems)
    folder = find_ply_folder(root)
    if folder is not None:
        found = True
        lines.append(f"ShapeNetCore13 point clouds, layout 'ply', in {folder}")
        for split in ("train", "test"):
            _split_lines(partial(ShapeNetCore, root, split, layout="ply", num_points=None), split,
                         "ShapeNetCore13 'ply'", _core_counts, check, progress, lines, problems)
    return found


def _folder(root: Path, check: bool, lines: list[str], problems: list[str]) -> bool:
    """A folder of the user's own shapes (``data.dataset=folder``), when ROOT has class folders
    of shape files; counts per split and class with the split a new run would make (seed 0,
    data.test_fraction 0.2; each run records its own in its split.json)."""
    from .datasets.folder import describe_folder, folder_hint

    if not folder_hint(root):
        return False
    try:
        info = describe_folder(root)
    except ValueError as err:
        problems.append(str(err))
        return True
    lines.append(f"Your own shapes (data.dataset=folder), layout {info['layout']!r}, in {root}: "
                 f"{len(info['classes'])} classes")
    if info["layout"] == "seeded split":
        lines.append("  split: seeded and stratified per class; shown for seed 0, data.test_fraction 0.2; "
                     "a run records the split it trains on in <log.out_dir>/split.json, and eval and "
                     "--resume reuse it")
    for split in ("train", "test"):
        counts = info["counts"][split]
        lines.append(f"  {split}: {sum(counts.values())} files")
        lines += _counts_lines([c for c, n in counts.items() for _ in range(n)])
    lines.append("  file types: " + ", ".join(f"{k} {v}" for k, v in info["types"].items()))
    lines.append(f"  sampled points cached in {info['cache']} (set POINTABSTRACT_CACHE to move it)")
    lines += [f"  note: {note}" for note in info["notes"]]
    if check:
        from .files import read_shape

        for path in info["files"]:
            try:
                read_shape(path)
            except ValueError as err:
                problems.append(str(err))
    return True


def inspect_root(root: str | Path, *, check: bool = False,
                 progress: bool = False) -> tuple[list[str], list[str]]:
    """Describe the datasets under ``root``.

    Args:
        root: a dataset root (e.g. ``datasets/``) or a layout folder.
        check: read every file (slow on full datasets), not only the lists and HDF5 files.
        progress: progress bars while checking.

    Returns:
        lines: one header per layout found, then counts per split and class.
        problems: the error messages met (each names its file); empty when all is well.
    """
    root = Path(root)
    lines: list[str] = []
    problems: list[str] = []
    found = _modelnet(root, check, progress, lines, problems)
    found = _shapenet(root, check, progress, lines, problems) or found
    found = found or _folder(root, check, lines, problems)
    if not found:
        from .datasets.modelnet import detect_layout
        from .datasets.shapenet_part import detect_part_layout

        for detect in (detect_layout, detect_part_layout):
            try:
                detect(root)
            except ValueError as err:
                problems.append(str(err))
        problems.append(f"(nor a ShapeNetCore13 <synset>/ply/*.ply tree under {root})")
    return lines, problems


def _info(args: argparse.Namespace) -> int:
    lines, problems = inspect_root(args.root, check=args.check, progress=True)
    print("\n".join(lines))
    if problems:
        print(f"\n{len(problems)} problem(s):")
        for problem in problems[: args.max_problems]:
            print("  - " + problem.replace("\n", "\n    "))
        if len(problems) > args.max_problems:
            print(f"  ... and {len(problems) - args.max_problems} more")
        return 1
    print("\nno problems found" + ("" if args.check else " (--check also reads every file)"))
    return 0


_NUISANCES = ("broken", "partial", "density", "noise", "outliers")  # synthetic.nuisances.NUISANCES
_SYNTH_OUT = {"easy": Path("datasets/synthetic"), "hard": Path("datasets/synthetic-hard")}


def _synth(args: argparse.Namespace) -> int:
    from .synthetic import Nuisances, generate  # imported only when asked for

    off = [name for name in _NUISANCES if getattr(args, f"no_{name}")]
    if off and args.level != "hard":
        raise ValueError(f"--no-{off[0]} applies to --level hard only (the easy set has no nuisances)")
    out = _SYNTH_OUT[args.level] if args.out is None else args.out
    kwargs = {"nuisances": Nuisances(**{name: False for name in off})} if args.level == "hard" else {}
    import trimesh.creation  # noqa: F401  (its own imports catch BaseException: an interrupt there is lost)

    # a scheduler's kill: the staging folder goes too (in this process only, not in the pool's workers)
    previous = signal.signal(signal.SIGTERM, partial(_interrupt, os.getpid()))
    try:
        result = generate(out, level=args.level, train_per_class=args.train_per_class,
                          test_per_class=args.test_per_class, num_points=args.num_points, seed=args.seed,
                          rotation=args.rotation, workers=args.workers, progress=True,
                          overwrite=args.overwrite, **kwargs)
    finally:
        signal.signal(signal.SIGTERM, previous)
    if result["replaced"]:
        print(f"--overwrite: replaced the earlier synthetic set in {out} ({result['replaced']})")
    print(f"shapes per split: {result['counts']} in {result['seconds']:.1f} s")
    print(f"wrote the {args.level} synthetic dataset to {out}; inspect it with: "
          f"pointabstract data info {out}")
    return 0


def _interrupt(owner: int, signum, frame) -> None:
    """SIGTERM during ``data synth``: raised as KeyboardInterrupt in the command's own process
    (``owner``), so the staging folder is removed. The generator's forked pool workers inherit
    this handler, and the pool ends them with SIGTERM when it closes: there the signal takes its
    default action at once. (Raised in a worker, it printed a worker's traceback into `make demo`
    and could leave the pool's task-queue lock held, so that closing the pool hung.)"""
    if os.getpid() != owner:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return
    raise KeyboardInterrupt


def _off_caches(folder: Path, split: str) -> str:
    """The OFF point caches of a mesh tree: in the user's cache folder, and any an earlier
    version wrote into the tree itself."""
    from .datasets.folder_cache import cache_folder

    pattern = f"{folder.name}_{split}_*pts_seed*.h5"
    try:
        places = [cache_folder(folder, "modelnet"), folder]
    except ValueError:  # a cache folder set inside the data
        places = [folder]
    return ", ".join(str(p) for place in places for p in sorted(place.glob(pattern)))


def _prepare(args: argparse.Namespace) -> int:
    from .datasets.modelnet import detect_layout
    from .datasets.off import find_meshes
    from .datasets.off_cache import prepare_off_cache

    _, folder = detect_layout(args.root, layout="off", off_folders=("ModelNet40", "ModelNet10"))
    classes = MODELNET10 if folder.name == "ModelNet10" else MODELNET40
    for split in args.split:
        meshes = find_meshes(folder, split)
        if not meshes:
            print(f"{folder}: no {split} meshes, skipped")
            continue
        if stage_lines():
            print(f"{split}: sampling {len(meshes)} meshes of {folder} into the cache...", flush=True)
        started = time.perf_counter()
        cache = prepare_off_cache(folder, split, classes=classes, mesh_points=args.mesh_points,
                                  seed=args.seed, cache_dir=args.cache_dir, workers=args.workers)
        print(f"{split}: {cache} ({time.perf_counter() - started:.1f} s)", flush=True)
    return 0


def _md5(args: argparse.Namespace) -> int:
    from .datasets.checksums import ARCHIVES, file_md5, verify_md5

    known = ARCHIVES.get(args.file.name)
    if args.expected is None and (known is None or known.md5 is None):
        print(f"{file_md5(args.file)}  {args.file}\n(no verified md5 recorded for {args.file.name}; "
              "compare with the publisher's value or pass --expected)")
        return 0
    print(f"{verify_md5(args.file, args.expected)}  {args.file}: OK")
    return 0


def add_parser(subparsers) -> None:
    """Add the ``data`` command and its actions to an argparse ``subparsers`` object."""
    data = subparsers.add_parser("data", help="dataset tools: info, synth, prepare, md5",
                                 description="Inspect dataset folders, generate the synthetic set, "
                                             "prepare caches, check archives.")
    actions = data.add_subparsers(dest="data_command", required=True, metavar="ACTION")

    info = actions.add_parser("info", help="layouts found under ROOT, counts per split and class, problems")
    info.add_argument("root", type=Path, metavar="ROOT", nargs="?", default=Path("datasets"),
                      help="dataset root (default: datasets)")
    info.add_argument("--check", action="store_true", help="read every file (slow on full datasets)")
    info.add_argument("--max-problems", type=int, default=20, help="problems printed at most")
    info.set_defaults(func=_info)

    synth = actions.add_parser("synth", help="generate the built-in part-labelled synthetic dataset")
    synth.add_argument("--level", choices=("easy", "hard"), default="easy",
                       help="easy: 16 classes, clean shapes; hard: 40 classes told apart by local "
                            "structure, scan nuisances (default: easy)")
    synth.add_argument("--out", type=Path, help="output folder (default: datasets/synthetic, "
                                                "datasets/synthetic-hard for --level hard)")
    synth.add_argument("--overwrite", action="store_true",
                       help="replace an earlier synthetic set in --out (never files it did not write)")
    synth.add_argument("--seed", type=int, default=0)
    synth.add_argument("--train-per-class", type=int, help="training shapes per class (default: easy 250, "
                                                           "hard 100)")
    synth.add_argument("--test-per-class", type=int, help="test shapes per class (default: easy 63, hard 25)")
    synth.add_argument("--num-points", type=int, default=2048, help="points per shape")
    synth.add_argument("--workers", type=int, help="generating processes (default: the CPU count); "
                                                   "never changes the data")
    synth.add_argument("--rotation", choices=("up", "so3"), default="up",
                       help="up: random turn about y (default); so3: uniform random rotation")
    for name, what in (("broken", "cut-out (broken) pieces"), ("partial", "single-view partial scans"),
                       ("density", "non-uniform density"), ("noise", "strong surface noise"),
                       ("outliers", "outlier points")):
        synth.add_argument(f"--no-{name}", action="store_true", help=f"hard level without {what}")
    synth.set_defaults(func=_synth)

    prepare = actions.add_parser("prepare", help="sample ModelNet OFF meshes once into the HDF5 cache")
    prepare.add_argument("root", type=Path, metavar="ROOT", nargs="?", default=Path("datasets"),
                         help="dataset root (default: datasets)")
    prepare.add_argument("--split", nargs="+", default=["train", "test"], choices=["train", "test"])
    prepare.add_argument("--mesh-points", type=int, default=2048, help="points sampled per mesh")
    prepare.add_argument("--seed", type=int, default=0)
    prepare.add_argument("--cache-dir", type=Path, help="where to write the cache (default: under "
                         "$POINTABSTRACT_CACHE, ~/.cache/pointabstract; never the mesh folder)")
    prepare.add_argument("--workers", type=int, default=0, help="sampling processes (0: this one)")
    prepare.set_defaults(func=_prepare)

    md5 = actions.add_parser("md5", help="md5 of a downloaded archive, checked against a known value")
    md5.add_argument("file", type=Path, metavar="FILE")
    md5.add_argument("--expected", help="the md5 to compare with (hex)")
    md5.set_defaults(func=_md5)
