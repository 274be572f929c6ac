"""The point cache of an OFF mesh tree: every mesh of ``<class>/<split>/*.off`` sampled once.

:func:`prepare_off_cache` samples each mesh (area weighted, with normals, seeded per mesh) into
one HDF5 file, so training reads points, not meshes; the cache is reused until a mesh, the list
of meshes or the class list changes. The OFF format itself is read in :mod:`.off`.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sys
import zlib
from pathlib import Path

import numpy as np

from ... import _validate as V
from .folder_cache import cache_folder
from .off import find_meshes, sample_mesh

__all__ = ["CACHE_VERSION", "prepare_off_cache", "unknown_class"]

_log = logging.getLogger(__name__)  # notes: pointabstract/_log.py

CACHE_VERSION = 2  # 2: keyed on (size, mtime_ns) of every mesh and the class list


def unknown_class(path: Path, folder: Path) -> str:
    """The error of a mesh in a class folder that is not a ModelNet class, with the way out."""
    return (f"{path}: unknown class folder {path.parents[1].name!r} (the ModelNet layout has its fixed "
            f"classes); to train on your own classes use data.dataset=folder data.root={folder}")


def _mesh_job(job: tuple[Path, int, int, str]) -> tuple[np.ndarray, np.ndarray]:
    path, n, seed, name = job  # each mesh has its own generator: results do not depend on order
    return sample_mesh(path, n, rng=np.random.default_rng([seed, zlib.crc32(name.encode())]))


# The cache is keyed on (byte size, mtime_ns) of every mesh, not on a hash of its content: an
# edit in place changes the mtime, and stat costs ~5 us per mesh (0.1 ms for the 23 real
# meshes of ../shared/realdata/ModelNet40, about 0.06 s for the 12,311 meshes of ModelNet40),
# while hashing reads every byte at every dataset construction: md5 38 ms, sha1 12 ms for
# those 16.7 MB even from the page cache (440 / 1,400 MB/s), i.e. about 20 s / 6 s for the
# ~9 GB of ModelNet40 at their 0.73 MB per mesh, and far more from a cold disk. Measured on
# this project's 2-core machine (hashlib over Path.read_bytes, best of 5, warm page cache).
# What it misses: a rewrite with the same size within one tick of the file clock (a few ms
# on ext4) of the previous write, or a copy that restores the old mtime (cp -p, rsync -t).
def _mesh_stats(files: list[Path]) -> np.ndarray:
    """(S, 2) int64: byte size and modification time in ns of each mesh."""
    stats = [f.stat() for f in files]
    return np.array([(st.st_size, st.st_mtime_ns) for st in stats], dtype=np.int64).reshape(-1, 2)


def _signature(names: list[str], stats: np.ndarray, classes: tuple[str, ...]) -> str:
    rows = [f"{n} {size} {mtime}" for n, (size, mtime) in zip(names, stats.tolist())]
    digest = hashlib.md5("\n".join([" ".join(classes), *rows]).encode()).hexdigest()
    return f"v{CACHE_VERSION} {digest}"


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 'es'}"


def _stale_reason(cache: Path, signature: str, names: list[str], stats: np.ndarray) -> str | None:
    """None when ``cache`` is up to date, else why it is not (one line)."""
    import h5py

    if not cache.exists():
        return f"mesh cache {cache} not found"
    try:
        with h5py.File(cache, "r") as handle:
            if handle.attrs.get("signature") == signature:
                return None
            if not str(handle.attrs.get("signature", "")).startswith(f"v{CACHE_VERSION} "):
                return f"mesh cache {cache} was written by another version of pointabstract"
            old = dict(zip((s.decode() for s in handle["source"][()]), map(tuple, handle["stat"][()])))
    except (OSError, KeyError) as err:
        return f"mesh cache {cache} is unreadable ({err})"
    new = dict(zip(names, map(tuple, stats)))
    changed = sum(1 for n in new if n in old and old[n] != new[n])
    added, removed = len(new.keys() - old.keys()), len(old.keys() - new.keys())
    parts = [f"{_plural(count, 'mesh')} {what}" for count, what in
             ((changed, "changed"), (added, "added"), (removed, "removed")) if count]
    return f"mesh cache {cache} out of date ({', '.join(parts) or 'the class list changed'})"


def prepare_off_cache(folder: str | Path, split: str, *, classes: tuple[str, ...], mesh_points: int = 2048,
                      seed: int = 0, cache_dir: str | Path | None = None, progress: bool = True,
                      workers: int = 0) -> Path:
    """Sample every mesh of ``folder/<class>/<split>/*.off`` (any case, see :func:`find_meshes`)
    once into an HDF5 cache.

    The cache ``<cache_dir>/<folder name>_<split>_<mesh_points>pts_seed<seed>.h5`` (default
    ``cache_dir``: the mesh tree's folder under ``$POINTABSTRACT_CACHE/modelnet/``, see
    :mod:`.folder_cache`: nothing is written into the user's data; an up-to-date cache that
    earlier versions wrote into ``folder`` is still read from there)
    holds ``data`` (S, P, 3) float32 points, ``normal`` (S, P, 3) float32 face normals,
    ``label`` (S,) int64 (index into ``classes``) and ``source`` (S,) the mesh paths relative
    to ``folder`` and ``stat`` (S, 2) int64 their byte size and modification time (ns). It is
    reused while the class list, the list of meshes and the size and modification time of each
    are unchanged; otherwise it is rebuilt, after one note saying why (an ``INFO`` record,
    pointabstract/_log.py: ``mesh cache ... out of date (1 mesh changed): rebuilding ...``). It is
    written to a temporary file first, so a killed run leaves no broken cache.

    Args:
        folder: the mesh tree (e.g. ``datasets/ModelNet40``).
        split: the ``<split>`` folder name (``"train"`` or ``"test"``).
        classes: known class names; a class folder not among them is an error.
        mesh_points: P points per mesh.
        seed: mesh ``m`` is sampled with the generator seeded by (seed, crc32 of its path).
        cache_dir: where to write the cache (default: outside ``folder``, see above).
        progress: show a tqdm progress bar.
        workers: processes sampling meshes in parallel (0: this process).

    Returns:
        the cache path.
    """
    import h5py
    from tqdm.auto import tqdm

    folder = Path(folder)
    V.check_int("mesh_points", mesh_points, low=1)
    files = find_meshes(folder, split)
    if not files:
        raise ValueError(f"{folder}: no <class>/{split}/*.off mesh found (extension in any case)")
    names = [f.relative_to(folder).as_posix() for f in files]
    labels = []
    for path in files:
        if path.parents[1].name not in classes:
            raise ValueError(unknown_class(path, folder))
        labels.append(classes.index(path.parents[1].name))
    stats = _mesh_stats(files)
    signature = _signature(names, stats, classes)
    name = f"{folder.name}_{split}_{mesh_points}pts_seed{seed}.h5"
    # where 0.1.0 before 2026-11 wrote it: read while up to date, never written (a shim removed in 0.2.0)
    legacy = folder / name
    if cache_dir is None and legacy.is_file() and _stale_reason(legacy, signature, names, stats) is None:
        return legacy
    out_dir = Path(cache_dir) if cache_dir is not None else cache_folder(folder, "modelnet")
    cache = out_dir / name
    reason = _stale_reason(cache, signature, names, stats)
    if reason is None:
        return cache
    _log.info(f"{reason}: {'re' if cache.exists() else ''}building it from {len(files)} meshes")
    tmp = cache.with_name(f"{cache.name}.{os.getpid()}.tmp")
    jobs = [(f, mesh_points, seed, n) for f, n in zip(files, names)]
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        with h5py.File(tmp, "w") as handle:
            shape = (len(files), mesh_points, 3)
            data = handle.create_dataset("data", shape, dtype="f4", chunks=(1, mesh_points, 3))
            normal = handle.create_dataset("normal", shape, dtype="f4", chunks=(1, mesh_points, 3))
            handle["label"] = np.array(labels, dtype=np.int64)
            handle["source"] = np.array(names, dtype="S")
            handle["stat"] = stats
            bar = tqdm(total=len(jobs), desc=f"sampling {folder.name}/{split} meshes",
                       disable=not (progress and sys.stderr.isatty()))
            with _Pool(workers) as pool:
                for row, (points, normals) in enumerate(pool(_mesh_job, jobs)):
                    data[row], normal[row] = points, normals
                    bar.update()
            bar.close()
            handle.attrs.update(signature=signature, seed=seed, mesh_points=mesh_points, split=split)
        os.replace(tmp, cache)
    except OSError as err:
        raise ValueError(f"cannot write the mesh cache {cache} ({err}); pass another cache_dir") from err
    finally:
        tmp.unlink(missing_ok=True)
    return cache


class _Pool:
    """``with _Pool(workers) as pool: pool(fn, jobs)`` maps in order, in processes when workers > 0."""

    def __init__(self, workers: int):
        self.workers, self.executor = workers, None

    def __enter__(self):
        if self.workers > 0:
            from concurrent.futures import ProcessPoolExecutor

            self.executor = ProcessPoolExecutor(self.workers)
            return lambda fn, jobs: self.executor.map(fn, jobs, chunksize=4)
        return map

    def __exit__(self, *exc):
        if self.executor is not None:
            self.executor.shutdown(cancel_futures=True)
