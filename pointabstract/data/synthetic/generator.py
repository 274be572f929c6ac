"""The built-in synthetic dataset, written in the real ModelNet40-HDF5 and ShapeNetPart-HDF5 layouts.

Two levels (``level=``):

- ``"easy"``: procedurally built, part-labelled shapes (:mod:`.shapes`) in the 16 ShapeNetPart
  categories, sampled (area-weighted, 2,048 points with normals, small noise along the
  normals, centred and scaled into the unit sphere, y up); class = category.
- ``"hard"``: the 40 classes of :mod:`.hard` (variants of 15 ShapeNetPart categories that
  differ in one part or arrangement) through the scan nuisances of :mod:`.nuisances` (each
  switchable with ``nuisances=Nuisances(...)``); the classification label is the hard class,
  the part set's label the ShapeNetPart category of its family.

Either level can be turned by a uniform random rotation (``rotation="so3"``; default ``"up"``
keeps y up). The shapes are written twice, so the demo goes through the real loaders (the part
layout is also one :class:`~pointabstract.data.ShapeNetCore` reads, for reconstruction):

::

    out/
      modelnet40_ply_hdf5_2048/           classification (labels = the 16 class names below)
        ply_data_train0.h5 ...            data (S, N, 3) float32, label (S, 1) int32,
        ply_data_test0.h5 ...             normal (S, N, 3) float32; at most 2,048 shapes a file
        shape_names.txt                   lowercase class names (16 or 40), one per line
        train_files.txt, test_files.txt   data/modelnet40_ply_hdf5_2048/ply_data_*.h5, as the original
      shapenet_part_seg_hdf5_data/        part segmentation
        ply_data_{train,val,test}0.h5 ... data, normal, label (S, 1) int32 category index in
                                          SHAPENET_PART order, pid (S, N) int32 global part ids
        all_object_categories.txt         <Name>\\t<synset> per line
        {train,val,test}_hdf5_file_list.txt   file names, one per line

Shape ``i`` of a split has class ``i % C`` (C = 16 or 40) and is drawn with its own generator
``np.random.SeedSequence([seed, split_id, i])`` (train 0, test 1), so the output is the same
for any number of worker processes; the HDF5 files carry no timestamps, so the same seed
gives the same bytes. The part set's val split is the last ``val_fraction`` of each class's
train shapes; the classification train split keeps all of them (ModelNet40 has no val split).
"""

from __future__ import annotations

import dataclasses
import logging
import multiprocessing as mp
import os
import sys
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

from ... import _validate as V
from ..._log import STDOUT
from ..categories import SHAPENET_PART
from .hard import HARD_CLASS_NAMES, HARD_CLASSES, ROTATIONS, random_rotation, sample_hard_shape
from .nuisances import Nuisances
from .output import claim_output, describe_set, expected_bytes, staged_output, write_h5
from .shapes import build_shape
from .surface import sample_surface

__all__ = ["CLASS_NAMES", "LEVELS", "MODELNET_DIR", "SHAPENET_PART_DIR", "generate", "level_classes",
           "sample_shape"]

_log = logging.getLogger(__name__)  # notes: pointabstract/_log.py

CLASS_NAMES: tuple[str, ...] = tuple(c.name.lower() for c in SHAPENET_PART)
MODELNET_DIR = "modelnet40_ply_hdf5_2048"
SHAPENET_PART_DIR = "shapenet_part_seg_hdf5_data"
_SPLIT_IDS = {"train": 0, "test": 1}
_FILE_SIZE = 2048  # shapes per HDF5 file, like the original archives
_NOISE = 0.004  # std of the displacement along the normal, in units of the bounding radius
LEVELS = ("easy", "hard")
_PER_CLASS = {"easy": (250, 63), "hard": (100, 25)}  # default train / test shapes per class


def level_classes(level: str) -> tuple[str, ...]:
    """The class names (label = index) of a level's classification set."""
    V.check_choice("level", level, LEVELS)
    return CLASS_NAMES if level == "easy" else HARD_CLASS_NAMES


def _normalise(pos: np.ndarray) -> np.ndarray:
    """Centre on the bounding-box centre and scale so the farthest point has norm 1."""
    pos = pos - (pos.min(0) + pos.max(0)) / 2
    return pos / np.linalg.norm(pos, axis=1).max()


def sample_shape(category: int | str, rng: np.random.Generator, *, num_points: int = 2048) -> dict:
    """One random shape of ``category`` as a sample dict (keys as in :mod:`pointabstract.data.datasets.base`).

    Args:
        category: ShapeNetPart category index, name or synset.
        rng: the only source of randomness.
        num_points: N, points sampled area-weighted on the mesh.

    Returns:
        ``{"pos": (N, 3) float32 in the unit sphere, "normal": (N, 3) float32 unit,
        "part": (N,) int64 global part ids}``.
    """
    V.check_int("num_points", num_points, low=1)
    vertices, faces, face_part = build_shape(category, rng)
    pos, normal, part = sample_surface(vertices, faces, int(num_points), rng, face_labels=face_part)
    pos = _normalise(pos.astype(np.float64))
    pos = _normalise(pos + normal * rng.normal(0.0, _NOISE, (len(pos), 1)))
    return {"pos": pos.astype(np.float32), "normal": normal, "part": part}


def _make(task: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """(pos, normal, pid, ShapeNetPart category) of shape ``index`` of a split."""
    level, seed, split_id, index, num_points, nuisances, rotation_mode = task
    rng = np.random.default_rng(np.random.SeedSequence([seed, split_id, index]))
    if level == "hard":
        s = sample_hard_shape(index % len(HARD_CLASSES), rng, num_points=num_points, nuisances=nuisances,
                              rotation_mode=rotation_mode)
        return s["pos"], s["normal"], s["part"].astype(np.int32), s["category"]
    s = sample_shape(index % len(SHAPENET_PART), rng, num_points=num_points)
    pos, normal = s["pos"], s["normal"]
    if rotation_mode == "so3":  # its own generator, so the default output keeps its bytes
        turn = random_rotation(np.random.default_rng(np.random.SeedSequence([seed, split_id, index, 1])))
        pos, normal = (pos @ turn.T).astype(np.float32), (normal @ turn.T).astype(np.float32)
    return pos, normal, s["part"].astype(np.int32), index % len(SHAPENET_PART)


def _context():
    # fork shares the imported library with the workers at no cost; elsewhere use the default
    if sys.platform.startswith("linux") and "fork" in mp.get_all_start_methods():
        return mp.get_context("fork")
    return mp.get_context()


def _generate_split(split: str, count: int, *, level, seed, num_points, nuisances, rotation_mode, workers,
                    progress):
    """(pos (S, N, 3), normal (S, N, 3), pid (S, N), category (S,)) of one split, in index order."""
    tasks = [(level, seed, _SPLIT_IDS[split], i, num_points, nuisances, rotation_mode) for i in range(count)]
    pos = np.empty((count, num_points, 3), np.float32)
    normal = np.empty_like(pos)
    pid = np.empty((count, num_points), np.int32)
    category = np.empty(count, np.int32)
    bar = tqdm(total=count, desc=f"synthetic {level} {split}", unit="shape",
               disable=not (progress and sys.stderr.isatty()))
    started = time.perf_counter()
    with bar:
        if workers > 1 and count >= 64:
            with _context().Pool(workers) as pool:
                results = pool.imap(_make, tasks, chunksize=16)
                for i, (p, n, q, c) in enumerate(results):
                    pos[i], normal[i], pid[i], category[i] = p, n, q, c
                    bar.update()
        else:
            for i, task in enumerate(tasks):
                pos[i], normal[i], pid[i], category[i] = _make(task)
                bar.update()
    if stage_lines(progress):
        seconds = time.perf_counter() - started
        _log.info(f"synthetic {level} {split}: {count} shapes generated ({seconds:.1f} s)", extra=STDOUT)
    return pos, normal, pid, category


def stage_lines(progress: bool = True) -> bool:
    """Whether to note one line per stage: unless both stdout and stderr are terminals (where
    the progress bars show), as training prints a line per epoch into logs and files."""
    return progress and not (sys.stdout.isatty() and sys.stderr.isatty())


def _write_h5(path: Path, **arrays: np.ndarray) -> None:
    write_h5(path, **arrays)  # built in memory, one plain write: a full disk never reaches HDF5


def _write_chunks(folder: Path, prefix: str, **arrays: np.ndarray) -> list[str]:
    """Write ``arrays`` (sharing their first axis) as ``{prefix}{i}.h5`` files; return the names."""
    count = len(next(iter(arrays.values())))
    names = []
    for i, start in enumerate(range(0, count, _FILE_SIZE)):
        names.append(f"{prefix}{i}.h5")
        _write_h5(folder / names[-1], **{k: v[start:start + _FILE_SIZE] for k, v in arrays.items()})
    return names


def _write_lines(path: Path, lines) -> None:
    path.write_text("".join(f"{line}\n" for line in lines))


def _write_set(root: Path, classes, *, level, seed, num_points, train_per_class, test_per_class,
               val_fraction, nuisances, rotation, workers, progress) -> dict:
    """Generate and write both layouts under ``root`` (a fresh staging folder); the counts."""
    mn_dir, sp_dir = root / MODELNET_DIR, root / SHAPENET_PART_DIR
    mn_dir.mkdir(parents=True)
    sp_dir.mkdir(parents=True)
    n_cls = len(classes)
    per_class_val = int(round(train_per_class * val_fraction))
    if val_fraction > 0 and train_per_class > 1:
        per_class_val = max(per_class_val, 1)
    n_val = min(per_class_val, train_per_class - 1) * n_cls  # the last n_val train shapes
    counts = {}
    for split, per_class in (("train", train_per_class), ("test", test_per_class)):
        count = per_class * n_cls
        pos, normal, pid, category = _generate_split(
            split, count, level=level, seed=seed, num_points=num_points, nuisances=nuisances,
            rotation_mode=rotation, workers=workers, progress=progress)
        for name, array in (("points", pos), ("normals", normal)):
            if not np.isfinite(array).all():  # a bug must never become a dataset of NaN
                raise ValueError(f"the generated {split} {name} hold NaN/Inf values (level {level}, "
                                 f"{num_points} points): nothing was written")
        label = (np.arange(count) % n_cls).astype(np.int32)[:, None]
        category = category[:, None]
        names = _write_chunks(mn_dir, f"ply_data_{split}", data=pos, label=label, normal=normal)
        _write_lines(mn_dir / f"{split}_files.txt", (f"data/{MODELNET_DIR}/{n}" for n in names))
        parts = {"test": slice(None)} if split == "test" else {
            "train": slice(0, count - n_val), "val": slice(count - n_val, count)}
        for part_split, rows in parts.items():
            names = _write_chunks(sp_dir, f"ply_data_{part_split}", data=pos[rows], label=category[rows],
                                  pid=pid[rows], normal=normal[rows])
            _write_lines(sp_dir / f"{part_split}_hdf5_file_list.txt", names)
            counts[part_split] = len(label[rows])
    _write_lines(mn_dir / "shape_names.txt", classes)
    _write_lines(sp_dir / "all_object_categories.txt", (f"{c.name}\t{c.synset}" for c in SHAPENET_PART))
    return counts


def generate(out, *, level: str = "easy", train_per_class: int | None = None,
             test_per_class: int | None = None, num_points: int = 2048, seed: int = 0,
             val_fraction: float = 0.1, workers: int | None = None, progress: bool = True,
             nuisances: Nuisances | None = None, rotation: str = "up", overwrite: bool = False) -> dict:
    """Generate the synthetic dataset under ``out`` (layouts in the module docstring).

    Args:
        out: folder to write into: new or empty, or holding only an earlier set of its own
            (:mod:`.output`: anything else is refused before any work). The set is written
            beside it and swapped in at the end, so an interrupt leaves ``out`` as it was.
        level: ``"easy"`` (16 classes) or ``"hard"`` (40 classes and scan nuisances).
        train_per_class / test_per_class: shapes per class and split (None: 250 / 63 for easy,
            4,000 train and 1,008 test shapes; 100 / 25 for hard, 4,000 and 1,000).
        num_points: N points per shape.
        seed: base seed; the same seed gives byte-identical files.
        val_fraction: share of each class's train shapes that the part set moves to val.
        workers: processes generating shapes (default: the CPU count); never changes the data.
        progress: show a tqdm bar per split on a terminal; elsewhere one note per split (an
            ``INFO`` record of ``pointabstract.data.synthetic.generator``, pointabstract/_log.py).
        nuisances: the hard level's nuisances (None: all on); refused for ``"easy"``.
        rotation: ``"up"`` (y stays up) or ``"so3"`` (every shape turned by a uniform rotation).
        overwrite: replace an earlier set of its own in ``out`` (never files it did not write).

    Returns:
        ``{"root", "modelnet", "shapenet_part"}`` paths, ``"counts"`` per split
        (train / val / test of the part set; the classification train is train + val) and
        ``"seconds"`` taken, ``"replaced"`` (what the earlier set it replaced was, or None).
    """
    classes = level_classes(level)
    V.check_choice("rotation", rotation, ROTATIONS)
    if nuisances is not None and level != "hard":
        raise ValueError(f"nuisances apply to level='hard' only, got level={level!r}")
    if nuisances is not None and not isinstance(nuisances, Nuisances):
        raise TypeError(f"nuisances must be a Nuisances or None, got {type(nuisances).__name__}")
    nuisances = Nuisances() if nuisances is None else nuisances
    train_per_class = _PER_CLASS[level][0] if train_per_class is None else train_per_class
    test_per_class = _PER_CLASS[level][1] if test_per_class is None else test_per_class
    V.check_int("train_per_class", train_per_class, low=1)
    V.check_int("test_per_class", test_per_class, low=1)
    V.check_int("num_points", num_points, low=2,
                note=" (one point cannot be centred and scaled into the unit sphere)")
    V.check_int("seed", seed, low=0)
    V.check_float("val_fraction", val_fraction, low=0.0, high=1.0, high_open=True)
    workers = (os.cpu_count() or 1) if workers is None else workers
    V.check_int("workers", workers, low=1)
    start = time.perf_counter()
    root = Path(out)
    needed = expected_bytes((train_per_class + test_per_class) * len(classes), num_points)
    replacing = claim_output(root, overwrite=overwrite, needed=needed) == "replace"
    replaced = describe_set(root) if replacing else None
    options = {"tool": "pointabstract data synth", "level": level, "seed": seed, "num_points": num_points,
               "train_per_class": train_per_class, "test_per_class": test_per_class,
               "val_fraction": val_fraction, "rotation": rotation, "nuisances": dataclasses.asdict(nuisances)}
    with staged_output(root, options, needed=needed) as staging:
        counts = _write_set(staging, classes, level=level, seed=seed, num_points=num_points,
                            train_per_class=train_per_class, test_per_class=test_per_class,
                            val_fraction=val_fraction, nuisances=nuisances, rotation=rotation,
                            workers=workers, progress=progress)
    mn_dir, sp_dir = root / MODELNET_DIR, root / SHAPENET_PART_DIR
    return {"root": str(root), "modelnet": str(mn_dir), "shapenet_part": str(sp_dir), "counts": counts,
            "seconds": time.perf_counter() - start, "replaced": replaced}
