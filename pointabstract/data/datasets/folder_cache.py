"""Where a folder of the user's own shapes is sampled to: a cache outside their data, keyed by content.

Every shape file is read once and reduced to at most P points (:func:`sample_file`): a mesh is
sampled on its surface by area (the project's sampler, face normals), a cloud with more than P
points is reduced by farthest point sampling from its first point, a smaller cloud is kept
whole. The result is stored as ``<cache>/samples/<sha1 of the file's bytes>_<P>pts_seed<seed>.npz``,
so an edited file gets a new entry (its old one is no longer read), an added file is sampled,
and a renamed or moved file reuses its entry.

The cache folder is ``$POINTABSTRACT_CACHE/folder/<name>-<hash of the data folder's absolute
path>``, with ``$POINTABSTRACT_CACHE`` defaulting to ``$XDG_CACHE_HOME/pointabstract``, else
``~/.cache/pointabstract``. Nothing is ever written into the data folder; a cache set inside it
is refused. The ModelNet OFF loader keeps its HDF5 point cache under the same root
(``.../modelnet/<name>-<hash>``, :func:`cache_folder` with ``kind="modelnet"``).
"""

from __future__ import annotations

import hashlib
import logging
import os
import sys
from pathlib import Path

import numpy as np

__all__ = ["cache_folder", "cache_root", "content_digest", "prepare_samples", "sample_file"]

_log = logging.getLogger(__name__)  # notes: pointabstract/_log.py


def cache_root() -> Path:
    """``$POINTABSTRACT_CACHE``, else ``$XDG_CACHE_HOME/pointabstract``, else ``~/.cache/pointabstract``."""
    if os.environ.get("POINTABSTRACT_CACHE"):
        return Path(os.environ["POINTABSTRACT_CACHE"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "pointabstract"


def cache_folder(root: str | Path, kind: str = "folder") -> Path:
    """The cache folder of the data folder ``root`` (see the module docstring); ``kind`` names
    the loader (``folder``, or ``modelnet`` for the OFF mesh cache of a ModelNet tree)."""
    root = Path(root).resolve()
    key = hashlib.sha1(str(root).encode()).hexdigest()[:12]
    folder = cache_root().resolve() / kind / f"{root.name}-{key}"
    if folder.is_relative_to(root):
        raise ValueError(f"the cache folder {folder} lies inside the data folder {root}; set "
                         "POINTABSTRACT_CACHE to a folder outside it (nothing is written into your data)")
    return folder


def content_digest(path: Path) -> str:
    """sha1 hex digest of the file's bytes (read in 1 MB chunks)."""
    digest = hashlib.sha1()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def sample_file(path: Path, points: int, *, seed: int, digest: str) -> tuple[np.ndarray, np.ndarray | None]:
    """At most ``points`` points of one shape file (see the module docstring).

    Returns:
        pos: (P', 3) float32 with P' = points for meshes and large clouds, the cloud's size else.
        normal: (P', 3) float32, or None for a cloud stored without normals.
    """
    from ..files import read_shape, sample_shape

    shape = read_shape(path)
    rng = np.random.default_rng([seed, int(digest[:8], 16)])
    pos, normal = sample_shape(shape, points, rng=rng)
    if len(pos) > points:
        from .sampling import point_indices

        idx = point_indices(len(pos), points, sampling="fps", pos=pos, source=str(path))
        pos, normal = pos[idx], None if normal is None else normal[idx]
    pos = np.ascontiguousarray(pos, np.float32)
    return pos, None if normal is None else np.ascontiguousarray(normal, np.float32)


def _entry(cache: Path, digest: str, points: int, seed: int) -> Path:
    return cache / "samples" / f"{digest}_{points}pts_seed{seed}.npz"


def _write(entry: Path, pos: np.ndarray, normal: np.ndarray | None) -> None:
    """Write atomically (temporary file + rename): a killed run leaves no broken entry."""
    entry.parent.mkdir(parents=True, exist_ok=True)
    tmp = entry.with_name(f".{entry.name}.{os.getpid()}.tmp.npz")
    try:
        arrays = {"pos": pos} if normal is None else {"pos": pos, "normal": normal}
        np.savez(tmp, **arrays)
        os.replace(tmp, entry)
    finally:
        tmp.unlink(missing_ok=True)


def prepare_samples(files: list[Path], cache: Path, *, points: int, seed: int, progress: bool = True,
                    what: str = "") -> list[Path]:
    """The cache entry of each file, sampling the files whose content has no entry yet.

    Args:
        files: the shape files.
        cache: the cache folder (:func:`cache_folder`).
        points: P, the points kept per shape.
        seed: seeds the surface samples (mesh m: the generator of (seed, its digest)).
        progress: a progress bar on a terminal while sampling.
        what: named in the one note (``INFO``, pointabstract/_log.py) said before sampling (e.g. ``"train"``).

    Returns:
        the ``.npz`` entry of each file, in order.

    Raises:
        ValueError: a file that cannot be read or sampled (naming it), or a cache that cannot
            be written (naming it).
    """
    from tqdm.auto import tqdm

    entries = [_entry(cache, content_digest(f), points, seed) for f in files]
    missing = [(f, e) for f, e in zip(files, entries) if not e.is_file()]
    if missing:
        _log.info(f"folder cache {cache}: sampling {len(missing)} new or changed {what} file(s) of "
                  f"{len(files)}".replace("  ", " "))
    bar = tqdm(missing, desc="sampling shapes", disable=not (progress and sys.stderr.isatty()), leave=False)
    for path, entry in bar:
        pos, normal = sample_file(path, points, seed=seed, digest=entry.name.split("_")[0])
        try:
            _write(entry, pos, normal)
        except OSError as err:
            raise ValueError(f"cannot write the folder cache {entry.parent} ({err}); set POINTABSTRACT_CACHE "
                             "to a writable folder") from None
    return entries
