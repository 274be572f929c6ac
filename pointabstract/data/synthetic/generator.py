"""The built-in synthetic dataset, written in the real ModelNet40-HDF5 and ShapeNetPart-HDF5 layouts.

One collection of procedurally built, part-labelled shapes (:mod:`.shapes`) in the 16
ShapeNetPart categories is sampled (area-weighted, 2,048 points with normals, small noise
along the normals, centred and scaled into the unit sphere, y up) and written twice, so the
demo goes through the real loaders:

::

    out/
      modelnet40_ply_hdf5_2048/           classification (labels = the 16 class names below)
        ply_data_train0.h5 ...            data (S, N, 3) float32, label (S, 1) int32,
        ply_data_test0.h5 ...             normal (S, N, 3) float32; at most 2,048 shapes a file
        shape_names.txt                   16 lowercase class names, one per line
        train_files.txt, test_files.txt   data/modelnet40_ply_hdf5_2048/ply_data_*.h5, as the original
      shapenet_part_seg_hdf5_data/        part segmentation
        ply_data_{train,val,test}0.h5 ... data, normal, label (S, 1) int32 category index in
                                          SHAPENET_PART order, pid (S, N) int32 global part ids
        all_object_categories.txt         <Name>\\t<synset> per line
        {train,val,test}_hdf5_file_list.txt   file names, one per line

Shape ``i`` of a split has category ``i % 16`` and is drawn with its own generator
``np.random.SeedSequence([seed, split_id, i])`` (train 0, test 1), so the output is the same
for any number of worker processes; the HDF5 files carry no timestamps, so the same seed
gives the same bytes. The part set's val split is the last ``val_fraction`` of each class's
train shapes; the classification train split keeps all of them (ModelNet40 has no val split).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import sys
import time
from pathlib import Path

import h5py
import numpy as np
from tqdm import tqdm

from ..categories import SHAPENET_PART
from .shapes import build_shape
from .surface import sample_surface

__all__ = ["CLASS_NAMES", "MODELNET_DIR", "SHAPENET_PART_DIR", "generate", "sample_shape"]

CLASS_NAMES: tuple[str, ...] = tuple(c.name.lower() for c in SHAPENET_PART)
MODELNET_DIR = "modelnet40_ply_hdf5_2048"
SHAPENET_PART_DIR = "shapenet_part_seg_hdf5_data"
_SPLIT_IDS = {"train": 0, "test": 1}
_FILE_SIZE = 2048  # shapes per HDF5 file, like the original archives
_NOISE = 0.004  # std of the displacement along the normal, in units of the bounding radius


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
    if isinstance(num_points, bool) or not isinstance(num_points, (int, np.integer)) or num_points < 1:
        raise ValueError(f"num_points must be a positive int, got {num_points!r}")
    vertices, faces, face_part = build_shape(category, rng)
    pos, normal, part = sample_surface(vertices, faces, int(num_points), rng, face_labels=face_part)
    pos = _normalise(pos.astype(np.float64))
    pos = _normalise(pos + normal * rng.normal(0.0, _NOISE, (len(pos), 1)))
    return {"pos": pos.astype(np.float32), "normal": normal, "part": part}


def _make(task: tuple[int, int, int, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    seed, split_id, index, num_points = task
    rng = np.random.default_rng(np.random.SeedSequence([seed, split_id, index]))
    s = sample_shape(index % len(SHAPENET_PART), rng, num_points=num_points)
    return s["pos"], s["normal"], s["part"].astype(np.int32)


def _context():
    # fork shares the imported library with the workers at no cost; elsewhere use the default
    if sys.platform.startswith("linux") and "fork" in mp.get_all_start_methods():
        return mp.get_context("fork")
    return mp.get_context()


def _generate_split(split: str, count: int, *, seed, num_points, workers, progress):
    """(pos (S, N, 3), normal (S, N, 3), pid (S, N)) of one split, in index order."""
    tasks = [(seed, _SPLIT_IDS[split], i, num_points) for i in range(count)]
    pos = np.empty((count, num_points, 3), np.float32)
    normal = np.empty_like(pos)
    pid = np.empty((count, num_points), np.int32)
    bar = tqdm(total=count, desc=f"synthetic {split}", unit="shape", disable=not progress)
    with bar:
        if workers > 1 and count >= 64:
            with _context().Pool(workers) as pool:
                results = pool.imap(_make, tasks, chunksize=16)
                for i, (p, n, q) in enumerate(results):
                    pos[i], normal[i], pid[i] = p, n, q
                    bar.update()
        else:
            for i, task in enumerate(tasks):
                pos[i], normal[i], pid[i] = _make(task)
                bar.update()
    return pos, normal, pid


def _write_h5(path: Path, **arrays: np.ndarray) -> None:
    with h5py.File(path, "w") as f:
        for key, value in arrays.items():
            f.create_dataset(key, data=value, track_times=False)


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


def _check_count(name: str, value, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")


def generate(out, *, train_per_class: int = 250, test_per_class: int = 63, num_points: int = 2048,
             seed: int = 0, val_fraction: float = 0.1, workers: int | None = None,
             progress: bool = True) -> dict:
    """Generate the synthetic dataset under ``out`` (layouts in the module docstring).

    Args:
        out: folder to write into (created). Old ``ply_data_*.h5`` files in its two dataset
            folders are deleted first, so a smaller run never leaves stale files behind.
        train_per_class / test_per_class: shapes per category and split (16 categories; the
            defaults give 4,000 train and 1,008 test shapes).
        num_points: N points per shape.
        seed: base seed; the same seed gives byte-identical files.
        val_fraction: share of each class's train shapes that the part set moves to val.
        workers: processes generating shapes (default: the CPU count); never changes the data.
        progress: show a tqdm bar per split.

    Returns:
        ``{"root", "modelnet", "shapenet_part"}`` paths, ``"counts"`` per split
        (train / val / test of the part set; the classification train is train + val) and
        ``"seconds"`` taken.
    """
    _check_count("train_per_class", train_per_class, 1)
    _check_count("test_per_class", test_per_class, 1)
    _check_count("num_points", num_points, 1)
    _check_count("seed", seed, 0)
    if not 0 <= val_fraction < 1:
        raise ValueError(f"val_fraction must be in [0, 1), got {val_fraction!r}")
    workers = (os.cpu_count() or 1) if workers is None else workers
    _check_count("workers", workers, 1)
    start = time.perf_counter()
    root = Path(out)
    mn_dir, sp_dir = root / MODELNET_DIR, root / SHAPENET_PART_DIR
    for folder in (mn_dir, sp_dir):
        folder.mkdir(parents=True, exist_ok=True)
        for stale in folder.glob("ply_data_*.h5"):
            stale.unlink()
    n_cls = len(SHAPENET_PART)
    per_class_val = int(round(train_per_class * val_fraction))
    if val_fraction > 0 and train_per_class > 1:
        per_class_val = max(per_class_val, 1)
    n_val = min(per_class_val, train_per_class - 1) * n_cls  # the last n_val train shapes
    counts = {}
    for split, per_class in (("train", train_per_class), ("test", test_per_class)):
        count = per_class * n_cls
        pos, normal, pid = _generate_split(split, count, seed=seed, num_points=num_points,
                                           workers=workers, progress=progress)
        label = (np.arange(count) % n_cls).astype(np.int32)[:, None]
        names = _write_chunks(mn_dir, f"ply_data_{split}", data=pos, label=label, normal=normal)
        _write_lines(mn_dir / f"{split}_files.txt", (f"data/{MODELNET_DIR}/{n}" for n in names))
        parts = {"test": slice(None)} if split == "test" else {
            "train": slice(0, count - n_val), "val": slice(count - n_val, count)}
        for part_split, rows in parts.items():
            names = _write_chunks(sp_dir, f"ply_data_{part_split}", data=pos[rows], label=label[rows],
                                  pid=pid[rows], normal=normal[rows])
            _write_lines(sp_dir / f"{part_split}_hdf5_file_list.txt", names)
            counts[part_split] = len(label[rows])
    _write_lines(mn_dir / "shape_names.txt", CLASS_NAMES)
    _write_lines(sp_dir / "all_object_categories.txt", (f"{c.name}\t{c.synset}" for c in SHAPENET_PART))
    return {"root": str(root), "modelnet": str(mn_dir), "shapenet_part": str(sp_dir), "counts": counts,
            "seconds": time.perf_counter() - start}
