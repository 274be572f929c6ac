"""The user's own shape files: one reader for every supported format, finding them, sampling them.

=============================  ===============================================================
suffix (any case)              read as
=============================  ===============================================================
``.ply``                       point cloud, or mesh when it has a ``face`` element (ascii / binary)
``.off``                       mesh (ModelNet's glued ``OFF3514 3546 0`` header, CRLF, polygons);
                               0 faces: a point cloud
``.obj``                       mesh (``v`` / ``vn`` / ``f`` with ``i/t/n`` corners, negative
                               indices, polygons); no ``f`` line: a point cloud
``.stl``                       mesh (ascii, any keyword case / binary); identical corners merged
``.pcd``                       point cloud (ascii / binary / binary_compressed; ``x y z
                               [normal_x normal_y normal_z]``; an organised cloud's NaN points
                               dropped, the note says how many)
``.xyz`` ``.txt`` ``.csv``     point cloud, ``x y z [nx ny nz]`` columns, delimiter sniffed (a
                               header naming the columns lets others such as colours sit beside;
                               ShapeNetPart's ``x y z nx ny nz part`` is read without its part ids)
``.xyzn`` ``.xyzrgb``          point cloud, ``x y z nx ny nz`` / ``x y z r g b`` (colours not read)
``.pts``                       point cloud, a count line then ``x y z [i] [r g b]`` rows (Leica)
``.npy``                       point cloud, an (N, 3) or (N, 6) array (xyz, normals)
``.npz``                       point cloud, the ``points`` / ``xyz`` / ``pos`` array or the only
                               one; optional ``normals`` / ``normal``
=============================  ===============================================================

Every problem is a :class:`ShapeFileError` (a ``ValueError``, so the CLI prints it as one
``error:`` line) naming the file: unreadable, empty, unknown extension, non-finite
coordinates, a table or array that is not (N, 3 | 6), a face referring to a missing vertex.

Coordinates are returned as stored, in the file's own precision, never centred or scaled
(:func:`coordinate_dtype`): float32 where the file stores float32 (binary PLY / PCD ``float``,
binary STL, a float32 ``.npy``), float64 where it stores doubles or integers, and for every
text format (ASCII PLY / PCD / STL, OFF, OBJ, ``.xyz`` / ``.txt`` / ``.csv``, which parse to
float64). So a georeferenced scan (UTM coordinates in the millions of metres) keeps its
millimetres: the caller centres and scales it in float64 before any cast to a model's float32
(``pointabstract predict`` does). Normals are float32 (unit vectors need no more). Six unnamed columns
(a header-less table, an (N, 6) array) hold normals only when columns 4-6 look like unit
vectors (:func:`~pointabstract.data.datasets.point_table.unit_normals`); otherwise (a scan's
``x y z r g b``) only x y z are read and the note says so.

Everything here imports numpy only, so ``import pointabstract.data.files`` stays cheap.
"""

from __future__ import annotations

import glob
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["SUPPORTED_SUFFIXES", "ShapeFile", "ShapeFileError", "coordinate_dtype", "find_shape_files",
           "read_shape", "sample_shape"]

SUPPORTED_SUFFIXES: tuple[str, ...] = (".ply", ".off", ".obj", ".stl", ".pcd", ".xyz", ".txt", ".csv",
                                       ".xyzn", ".xyzrgb", ".pts", ".npy", ".npz")
NO_FACES = "mesh without faces: used as a point cloud"
NOT_NORMALS = "columns 4-6 are not unit normals (colours?): only x y z are read"


class ShapeFileError(ValueError):
    """A shape file that cannot be used; ``str()`` is one line naming the file and what is wrong."""


def coordinate_dtype(*arrays: np.ndarray) -> np.dtype:
    """The precision a reader keeps for coordinates stored in ``arrays`` (the columns or the
    array as read): float32 when every one holds float32 (or a narrower float), else float64
    (doubles, integers, text parsed to float64). Never narrower than what is stored."""
    narrow = all(np.asarray(a).dtype.kind == "f" and np.asarray(a).dtype.itemsize <= 4 for a in arrays)
    return np.dtype(np.float32 if narrow else np.float64)


@dataclass(frozen=True)
class ShapeFile:
    """One shape as read from a file, in the file's own coordinates.

    Attributes:
        path: the file.
        points: (V, 3) mesh vertices or cloud points in the file's own coordinates and precision:
            float32 where the file stores float32, else float64 (:func:`coordinate_dtype`).
        normals: (V, 3) float32 per-point normals as stored, or None.
        faces: (F, 3) int64 triangles indexing ``points`` (polygons fan-split), None for a cloud.
        note: what the reader decided that the user should hear (e.g. :data:`NO_FACES`).
    """

    path: Path
    points: np.ndarray
    normals: np.ndarray | None
    faces: np.ndarray | None
    note: str | None = None

    @property
    def is_mesh(self) -> bool:
        """True when the shape has triangles (it is then sampled on its surface)."""
        return self.faces is not None and len(self.faces) > 0


def _one_line(text: str) -> str:
    return " ".join(str(text).split("\n"))


def _mesh(points, normals, faces):
    """A mesh format's result: a cloud with a note when it has no face."""
    if faces is None or len(faces) == 0:
        return points, normals, None, NO_FACES
    return points, normals, faces, None


def _read_ply(path: Path):
    from .datasets.ply import read_ply

    points, normals, faces = read_ply(path)
    return (points, normals, None, None) if faces is None else _mesh(points, normals, faces)


def _read_off(path: Path):
    from .datasets.off import read_off

    vertices, faces = read_off(path, allow_no_faces=True)
    return _mesh(vertices, None, faces)


def _read_obj(path: Path):
    from .datasets.obj import read_obj

    return _mesh(*read_obj(path))


def _read_stl(path: Path):
    from .datasets.stl import read_stl

    vertices, faces = read_stl(path)
    if not len(faces):
        raise ShapeFileError(f"{path}: empty: the STL file has no triangle")
    return vertices, None, faces, None


def _read_pcd(path: Path):
    from .datasets.pcd import read_pcd

    points, normals, note = read_pcd(path)
    return points, normals, None, note


def _read_fixed(path: Path):
    from .datasets import point_formats as formats

    suffix = path.suffix.lower()
    if suffix == ".xyzn":
        return (*formats.read_xyzn(path), None, None)
    return (formats.read_xyzrgb if suffix == ".xyzrgb" else formats.read_pts)(path), None, None, None


def _unit_or_note(points: np.ndarray, extra: np.ndarray | None):
    """(points, normals, None, note): three unnamed extra columns are normals only when they are
    unit vectors (see unit_normals); otherwise (colours, a scan's x y z r g b) they are left out,
    said in the note."""
    from .datasets.point_table import unit_normals

    if extra is None or unit_normals(np.asarray(extra, dtype=np.float64)):
        return points, extra, None, None
    return points, None, None, NOT_NORMALS


def _read_table(path: Path):
    from .datasets.point_table import read_point_table

    table = read_point_table(path)
    if table.known:
        return table.points, table.normals, None, table.note
    points, normals, _, note = _unit_or_note(table.points, table.normals)
    return points, normals, None, table.note or note


def _split_array(path: Path, array: np.ndarray, what: str):
    """(points, normals) of an (N, 3) or (N, 6) numeric array."""
    if array.dtype.kind not in "iuf" or array.ndim != 2 or array.shape[1] not in (3, 6):
        raise ShapeFileError(f"{path}: {what} must be a numeric (N, 3) or (N, 6) array (x y z [nx ny nz]), "
                             f"got shape {array.shape} of dtype {array.dtype}")
    return array[:, :3], (array[:, 3:] if array.shape[1] == 6 else None)


def _check_npy_header(path: Path, handle, available: int, what: str) -> None:
    """ValueError naming ``path`` when the ``.npy`` header at ``handle`` announces more bytes than the
    ``available`` ones: numpy would allocate the announced array first (a damaged header asking for a
    terabyte is a MemoryError, not a one-line error)."""
    head = handle.read(12)  # magic, version, header length: checked before numpy reads that length
    version = tuple(head[6:8])
    length = int.from_bytes(head[8:10] if version == (1, 0) else head[8:12], "little")
    damaged = ShapeFileError(f"{path}: {what} is not a whole .npy array (damaged header)")
    known = version in ((1, 0), (2, 0), (3, 0))
    if head[:6] != b"\x93NUMPY" or not known or length > min(available, 2 ** 20):
        raise damaged
    handle.seek(handle.tell() - len(head) + 8)
    reader = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
    try:
        shape, _, dtype = reader(handle)
    except Exception:  # noqa: BLE001 - numpy parses the header text: SyntaxError, TokenError, ValueError...
        raise damaged from None
    need = int(np.prod(shape, dtype=object)) * dtype.itemsize
    if need > available or any(not 0 <= size < 2 ** 62 for size in shape):
        raise ShapeFileError(f"{path}: {what} announces {shape} {dtype} values ({need} bytes), the file "
                             f"holds {available}: cut short or damaged")


def _read_npy(path: Path):
    with open(path, "rb") as handle:
        _check_npy_header(path, handle, path.stat().st_size, "the array")
    return _unit_or_note(*_split_array(path, np.load(path, allow_pickle=False), "the array"))


def _read_npz(path: Path):
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            with archive.open(info) as handle:  # a member may inflate, but never past its own size
                _check_npy_header(path, handle, info.file_size, f"array {info.filename!r}")
            if info.file_size > 1100 * max(info.compress_size, 1) + 2 ** 16:  # deflate expands <= 1032x
                raise ShapeFileError(f"{path}: member {info.filename!r} claims {info.file_size} bytes from "
                                     f"{info.compress_size} compressed: damaged")
    with np.load(path, allow_pickle=False) as archive:
        arrays = {name: archive[name] for name in archive.files}
    key = next((k for k in ("points", "xyz", "pos") if k in arrays), None)
    if key is None and len(arrays) == 1:
        key = next(iter(arrays))
    if key is None:
        raise ShapeFileError(f"{path}: no 'points', 'xyz' or 'pos' array, and more than one array "
                             f"(found {sorted(arrays)})")
    points, normals = _split_array(path, arrays[key], f"array {key!r}")
    extra = next((arrays[k] for k in ("normals", "normal") if k in arrays), None)
    if extra is None:
        return _unit_or_note(points, normals)
    if normals is not None or extra.shape != points.shape:
        raise ShapeFileError(f"{path}: 'normals' must be ({len(points)}, 3) beside a (N, 3) {key!r}, "
                             f"got {extra.shape} beside {arrays[key].shape}")
    return points, extra, None, None


_READERS = {".ply": _read_ply, ".off": _read_off, ".obj": _read_obj, ".stl": _read_stl, ".pcd": _read_pcd,
            ".xyz": _read_table, ".txt": _read_table, ".csv": _read_table, ".xyzn": _read_fixed,
            ".xyzrgb": _read_fixed, ".pts": _read_fixed, ".npy": _read_npy, ".npz": _read_npz}


def _check_suffix(path: Path) -> None:
    if path.suffix.lower() not in _READERS:
        raise ShapeFileError(f"{path}: unknown extension {path.suffix or '(none)'!r}; supported: "
                             f"{' '.join(SUPPORTED_SUFFIXES)}")


def _checked(path: Path, points, normals, faces, note) -> ShapeFile:
    """The arrays as a ShapeFile, after the checks every format shares."""
    points = np.asarray(points)
    if len(points) == 0:
        raise ShapeFileError(f"{path}: empty: no point")
    bad = np.flatnonzero(~np.isfinite(points).all(axis=1))
    if len(bad):
        raise ShapeFileError(f"{path}: non-finite coordinates (NaN or Inf) at point {bad[0]} "
                             f"({len(bad)} of {len(points)} points)")
    if normals is not None:
        normals = np.asarray(normals, dtype=np.float32)
        if not np.isfinite(normals).all():
            raise ShapeFileError(f"{path}: non-finite normals (NaN or Inf)")
    if faces is not None:
        faces = np.ascontiguousarray(faces, dtype=np.int64)
        if ((faces < 0) | (faces >= len(points))).any():
            raise ShapeFileError(f"{path}: a face refers to a missing vertex (indices must be in "
                                 f"[0, {len(points)}))")
    return ShapeFile(path, np.ascontiguousarray(points, dtype=coordinate_dtype(points)), normals, faces, note)


def read_shape(path: str | Path) -> ShapeFile:
    """Read one shape file of any supported format (see the module table).

    Args:
        path: the file; its suffix (any case) picks the reader.

    Returns:
        the :class:`ShapeFile`: points (V, 3) as stored (float32 where the file stores float32,
        else float64: see the module docstring), normals (V, 3) float32 or None, faces (F, 3)
        int64 or None, and a note when the reader made a choice (a mesh format without faces).

    Raises:
        ShapeFileError: one line naming the file, for an unknown extension, a missing or
            unreadable file, an empty or malformed one, non-finite coordinates, a table or
            array that is not (N, 3 | 6), or a face referring to a missing vertex.
    """
    path = Path(path)
    _check_suffix(path)
    if not path.is_file():
        raise ShapeFileError(f"{path}: {'is a folder, not a file' if path.is_dir() else 'file not found'}")
    try:
        points, normals, faces, note = _READERS[path.suffix.lower()](path)
    except ShapeFileError:
        raise
    except ValueError as err:  # the format readers name the file (and line) already
        message = _one_line(err)
        raise ShapeFileError(message if str(path) in message else f"{path}: {message}") from None
    except (OSError, EOFError, zipfile.BadZipFile) as err:
        raise ShapeFileError(f"{path}: cannot read ({_one_line(err)})") from None
    return _checked(path, points, normals, faces, note)


def _has_glob(text: str) -> bool:
    return any(c in text for c in "*?[")


def _in_folder(folder: Path) -> list[Path]:
    """The supported files under ``folder`` (recursive, sorted), hidden files and folders skipped."""
    found = [p for p in folder.rglob("*") if p.suffix.lower() in _READERS and p.is_file()
             and not any(part.startswith(".") for part in p.relative_to(folder).parts)]
    if not found:
        from .datasets.folders import list_folder

        raise ShapeFileError(f"{folder}: no shape file ({' '.join(SUPPORTED_SUFFIXES)}) in this folder "
                             f"or below (it holds: {list_folder(folder, limit=8)})")
    return sorted(found)


def _matching(pattern: str) -> list[Path]:
    """The supported files a glob pattern matches (``**`` recurses); other files are skipped."""
    found = sorted(Path(p) for p in glob.glob(pattern, recursive=True)
                   if Path(p).suffix.lower() in _READERS and Path(p).is_file())
    if not found:
        raise ShapeFileError(f"{pattern}: no shape file ({' '.join(SUPPORTED_SUFFIXES)}) matches "
                             "this pattern")
    return found


def find_shape_files(inputs: Iterable[str | Path]) -> list[Path]:
    """The shape files named by ``inputs``, in order, each once.

    Args:
        inputs: files (their extension must be supported), folders (searched recursively for
            supported extensions, sorted by path; names starting with ``.`` skipped) and glob
            patterns (``scans/*.ply``, ``data/**/*.obj``; files of other extensions skipped).

    Raises:
        ShapeFileError: naming the input, for an unknown extension given explicitly, a path
            that does not exist, a folder or pattern without any supported file, or no input.
    """
    inputs = [inputs] if isinstance(inputs, (str, Path)) else list(inputs)
    if not inputs:
        raise ShapeFileError("no input given: pass files, folders or glob patterns")
    found: dict[Path, None] = {}
    for item in inputs:
        path = Path(item)
        if path.is_dir():
            files = _in_folder(path)
        elif path.is_file():
            _check_suffix(path)
            files = [path]
        elif _has_glob(str(item)):
            files = _matching(str(item))
        else:
            raise ShapeFileError(f"{path}: no such file or folder")
        found.update(dict.fromkeys(files))
    return list(found)


def sample_shape(shape: ShapeFile, n: int, *,
                 rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray | None]:
    """Points to feed a model: ``n`` surface samples of a mesh, or a cloud's points as they are.

    Meshes are sampled with the project's area-weighted sampler
    (:func:`pointabstract.data.synthetic.surface.sample_surface`, the one the OFF loaders use):
    each point on a triangle picked with probability proportional to its area, with that
    triangle's normal. A float64 mesh is sampled around its vertex centroid (the sampler's
    float32 result is an offset from it, added back in float64), so a mesh far from the origin
    keeps its precision. A point cloud is returned unchanged, whatever its size (reducing it to
    the model's N, e.g. by farthest point sampling, is the caller's choice).

    Args:
        shape: a shape from :func:`read_shape`.
        n: number of points to sample on a mesh (>= 1).
        rng: the generator of the mesh samples.

    Returns:
        points: (n, 3) for a mesh, (V, 3) for a cloud, in the shape's precision (float32 or
            float64, as ``shape.points``).
        normals: (n, 3) float32 face normals for a mesh; the cloud's normals or None.

    Raises:
        ShapeFileError: naming the file, for a mesh whose triangles all have zero area.
    """
    from .. import _validate as V  # imports torch: here, so that importing this module does not

    V.check_int("n", n, low=1)
    if not shape.is_mesh:
        return shape.points, shape.normals
    from .synthetic.surface import sample_surface

    wide = shape.points.dtype == np.float64
    centre = shape.points.mean(axis=0) if wide else np.zeros(3)
    try:
        points, normals = sample_surface(shape.points - centre if wide else shape.points, shape.faces,
                                         int(n), rng)
    except ValueError as err:
        raise ShapeFileError(f"{shape.path}: {err}") from None
    return (points.astype(np.float64) + centre if wide else points), normals
