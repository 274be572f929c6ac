"""Object File Format (OFF) meshes, as in the original ModelNet archives, and their point cache.

A file is a header line ``OFF``, a counts line ``V F E``, V vertex lines ``x y z`` and F face
lines ``n i_1 ... i_n`` (0-based vertex indices, optionally followed by a colour). The reader
also accepts what the published ModelNet40 files contain besides: the malformed header where
``OFF`` is glued to the counts (``OFF3514 3546 0`` on the first line), Windows line endings,
``#`` comments and blank lines, and polygons with 4 or more corners, which are split into a
fan of triangles ``(i_1, i_k, i_{k+1})``.

:func:`prepare_off_cache` samples every mesh of a ``<class>/<split>/*.off`` tree once (area
weighted, with normals, seeded per mesh) into one HDF5 file, so training reads points, not
meshes.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import sys
import zlib
from pathlib import Path

import numpy as np

from ..synthetic.surface import sample_surface

__all__ = ["CACHE_VERSION", "find_meshes", "prepare_off_cache", "read_off", "sample_mesh", "write_off"]

CACHE_VERSION = 2  # 2: keyed on (size, mtime_ns) of every mesh and the class list

_HEADER = re.compile(r"^(?:ST)?C?N?OFF(?=\s|\d|$)(.*)$")


def _content_lines(path: Path) -> list[tuple[int, str]]:
    """(1-based line number, text without comment) of every line that holds data."""
    try:
        text = path.read_bytes().decode("latin-1")
    except OSError as err:
        raise ValueError(f"{path}: cannot read OFF file ({err})") from err
    rows = text.splitlines()
    if "#" in text:
        rows = [row.split("#", 1)[0] for row in rows]
    return [(number, stripped) for number, row in enumerate(rows, start=1) if (stripped := row.strip())]


def _parse_counts(path: Path, lines: list[tuple[int, str]]) -> tuple[int, int, int]:
    """(V, F, index of the first vertex line in ``lines``) from the header."""
    if not lines:
        raise ValueError(f"{path}: empty file (no OFF header)")
    number, first = lines[0]
    match = _HEADER.match(first)
    if match is None:
        raise ValueError(f"{path}:{number}: expected the header 'OFF', got {first[:40]!r}")
    rest, start = match.group(1).strip(), 1
    if not rest:  # the usual case: counts on the next data line
        if len(lines) < 2:
            raise ValueError(f"{path}:{number}: truncated file: no counts line after the header")
        number, rest = lines[1]
        start = 2
    fields = rest.split()
    try:
        counts = [int(f) for f in fields]
    except ValueError:
        counts = []
    if len(counts) not in (2, 3) or min(counts) < 0:
        raise ValueError(f"{path}:{number}: bad counts line {rest!r}: expected 'V F E', "
                         "non-negative integers")
    n_vertices, n_faces = counts[0], counts[1]
    if n_vertices == 0 or n_faces == 0:
        raise ValueError(f"{path}:{number}: empty mesh ({n_vertices} vertices, {n_faces} faces)")
    return n_vertices, n_faces, start


def _fast_table(lines: list[tuple[int, str]], dtype, columns: int) -> np.ndarray | None:
    """The lines as a (len(lines), columns) table, or None when they are not all that shape."""
    try:
        table = np.loadtxt(io.StringIO("\n".join(text for _, text in lines)), dtype=dtype,
                           ndmin=2, comments=None)
    except ValueError:
        return None
    return table if table.shape == (len(lines), columns) else None


def _parse_vertices(path: Path, lines: list[tuple[int, str]]) -> np.ndarray:
    """(V, 3) float64 from the vertex lines (extra values such as colours are ignored)."""
    vertices = _fast_table(lines, np.float64, 3)
    if vertices is None:  # line by line: extra values, or a bad line to report
        fields = [text.split() for _, text in lines]
        vertices = np.empty((len(lines), 3))
        for row, (number, text) in enumerate(lines):
            try:
                vertices[row] = [float(f) for f in fields[row][:3]]
                if len(fields[row]) < 3:
                    raise ValueError
            except ValueError:
                raise ValueError(f"{path}:{number}: bad vertex line {text[:60]!r}: "
                                 "expected 'x y z'") from None
    bad = np.flatnonzero(~np.isfinite(vertices).all(axis=1))
    if len(bad):
        number, text = lines[bad[0]]
        raise ValueError(f"{path}:{number}: non-finite vertex {text[:60]!r}")
    return vertices


def _parse_faces(path: Path, lines: list[tuple[int, str]], n_vertices: int) -> np.ndarray:
    """(F', 3) int64 triangles (polygons fan-triangulated), indices checked against V."""
    table = _fast_table(lines, np.int64, 4)
    faces = None
    if table is not None and (table[:, 0] == 3).all():
        faces, owner = table[:, 1:], np.arange(len(lines))
    if faces is None:  # line by line: polygons, colours, or a bad line to report
        fields = [text.split() for _, text in lines]
        triangles, owners = [], []
        for row, (number, text) in enumerate(lines):
            try:
                corners = int(fields[row][0])
                polygon = [int(f) for f in fields[row][1: 1 + corners]]
            except ValueError:
                corners, polygon = -1, []
            if corners < 3 or len(polygon) != corners:
                raise ValueError(f"{path}:{number}: bad face line {text[:60]!r}: expected "
                                 "'n i_1 ... i_n' with n >= 3")
            for k in range(1, corners - 1):  # fan: (i_1, i_k, i_{k+1})
                triangles.append((polygon[0], polygon[k], polygon[k + 1]))
                owners.append(row)
        faces, owner = np.array(triangles, dtype=np.int64), np.array(owners)
    bad = np.flatnonzero(((faces < 0) | (faces >= n_vertices)).any(axis=1))
    if len(bad):
        number, text = lines[owner[bad[0]]]
        raise ValueError(f"{path}:{number}: face index out of range [0, {n_vertices}) in "
                         f"{text[:60]!r}")
    return np.ascontiguousarray(faces)


def read_off(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """Read a triangle mesh from an OFF file.

    Args:
        path: the ``.off`` file.

    Returns:
        vertices: (V, 3) float64 vertex positions.
        faces: (F, 3) int64 triangles; ``faces[f, j]`` indexes ``vertices``. Polygons with
            n > 3 corners become n - 2 triangles, so F can exceed the header's face count.

    Raises:
        ValueError: naming the file and line, for a missing or malformed header, bad counts,
            an empty mesh, a truncated file, data after the last face, an unparsable line, a
            non-finite vertex or a face index out of range.
    """
    path = Path(path)
    lines = _content_lines(path)
    n_vertices, n_faces, start = _parse_counts(path, lines)
    end = start + n_vertices + n_faces
    if len(lines) < end:
        last = lines[-1][0]
        raise ValueError(f"{path}:{last}: truncated file: the header announces {n_vertices} "
                         f"vertices and {n_faces} faces, found {len(lines) - start} data lines")
    if len(lines) > end:
        number, text = lines[end]
        raise ValueError(f"{path}:{number}: unexpected data after the last face: {text[:60]!r}")
    vertices = _parse_vertices(path, lines[start: start + n_vertices])
    faces = _parse_faces(path, lines[start + n_vertices: end], n_vertices)
    return vertices, faces


def write_off(path: str | Path, vertices: np.ndarray, faces: np.ndarray) -> None:
    """Write a triangle mesh as a standard OFF file (tests and benchmarks build meshes with it).

    Args:
        path: destination file (its folder must exist).
        vertices: (V, 3) float vertex positions.
        faces: (F, 3) int triangles indexing ``vertices``.
    """
    vertices = np.asarray(vertices, dtype=np.float64)
    faces = np.asarray(faces, dtype=np.int64)
    if vertices.ndim != 2 or vertices.shape[1] != 3:
        raise ValueError(f"vertices must have shape (V, 3), got {vertices.shape}")
    if faces.ndim != 2 or faces.shape[1] != 3:
        raise ValueError(f"faces must have shape (F, 3), got {faces.shape}")
    rows = [f"OFF\n{len(vertices)} {len(faces)} 0\n"]
    rows += [f"{x:.7g} {y:.7g} {z:.7g}\n" for x, y, z in vertices]
    rows += [f"3 {a} {b} {c}\n" for a, b, c in faces]
    Path(path).write_text("".join(rows))


def find_meshes(folder: str | Path, split: str) -> list[Path]:
    """The meshes ``folder/<class>/<split>/*.off``, sorted by path.

    The extension is matched in any case (``.off``, ``.OFF``, ``.Off``): archives unpacked on
    a case-insensitive file system, or re-exported by some tools, carry upper-case names, and a
    user of ModelNet expects them read, not skipped.
    """
    found = (p for p in Path(folder).glob(f"*/{split}/*") if p.suffix.lower() == ".off" and p.is_file())
    return sorted(found)


def sample_mesh(path: str | Path, n: int, *, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Read an OFF mesh and sample ``n`` points on it: points (n, 3), normals (n, 3) float32."""
    vertices, faces = read_off(path)
    try:
        return sample_surface(vertices, faces, n, rng)
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from None


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

    The cache ``<cache_dir or folder>/<folder name>_<split>_<mesh_points>pts_seed<seed>.h5``
    holds ``data`` (S, P, 3) float32 points, ``normal`` (S, P, 3) float32 face normals,
    ``label`` (S,) int64 (index into ``classes``) and ``source`` (S,) the mesh paths relative
    to ``folder`` and ``stat`` (S, 2) int64 their byte size and modification time (ns). It is
    reused while the class list, the list of meshes and the size and modification time of each
    are unchanged; otherwise it is rebuilt, after one line on stderr saying why (``mesh cache
    ... out of date (1 mesh changed): rebuilding ...``). It is written to a temporary file
    first, so a killed run leaves no broken cache.

    Args:
        folder: the mesh tree (e.g. ``datasets/ModelNet40``).
        split: the ``<split>`` folder name (``"train"`` or ``"test"``).
        classes: known class names; a class folder not among them is an error.
        mesh_points: P points per mesh.
        seed: mesh ``m`` is sampled with the generator seeded by (seed, crc32 of its path).
        cache_dir: where to write the cache (default ``folder``).
        progress: show a tqdm progress bar.
        workers: processes sampling meshes in parallel (0: this process).

    Returns:
        the cache path.
    """
    import h5py
    from tqdm.auto import tqdm

    folder = Path(folder)
    if mesh_points < 1:
        raise ValueError(f"mesh_points must be >= 1, got {mesh_points}")
    files = find_meshes(folder, split)
    if not files:
        raise ValueError(f"{folder}: no <class>/{split}/*.off mesh found (extension in any case)")
    names = [f.relative_to(folder).as_posix() for f in files]
    labels = []
    for path in files:
        if path.parents[1].name not in classes:
            raise ValueError(f"{path}: unknown class folder {path.parents[1].name!r}")
        labels.append(classes.index(path.parents[1].name))
    stats = _mesh_stats(files)
    signature = _signature(names, stats, classes)
    out_dir = Path(cache_dir) if cache_dir is not None else folder
    cache = out_dir / f"{folder.name}_{split}_{mesh_points}pts_seed{seed}.h5"
    reason = _stale_reason(cache, signature, names, stats)
    if reason is None:
        return cache
    print(f"{reason}: {'re' if cache.exists() else ''}building it from {len(files)} meshes", file=sys.stderr,
          flush=True)
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
