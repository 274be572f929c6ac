"""Integrity of what the loaders read: md5 of the published archives, and array checks.

The md5 table lists only values this project has verified against a download; it is empty
today (the project cannot download anything), so :func:`verify_md5` needs the expected value
from the user (for example from the publisher's page or a colleague's verified copy) for any
archive without one. Values are never guessed.

The ``check_*`` helpers are the validation every loader runs on the arrays it read; each
error names the file (``source``) and the offending row or sample.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["ARCHIVES", "Archive", "check_columns", "check_finite", "check_whole", "file_md5", "read_h5",
           "verify_md5"]


@dataclass(frozen=True)
class Archive:
    """One published archive.

    Attributes:
        name: the file name as published (e.g. ``"ModelNet40.zip"``).
        url: where it was published (some of these servers are offline today; mirrors exist).
        folder: the folder it unpacks to, which the loaders look for.
        md5: the verified md5 hex digest, or None when no verified value is known.
    """

    name: str
    url: str
    folder: str
    md5: str | None = None


ARCHIVES: dict[str, Archive] = {a.name: a for a in (
    Archive("ModelNet40.zip", "http://modelnet.cs.princeton.edu/ModelNet40.zip", "ModelNet40"),
    Archive("ModelNet10.zip", "http://3dvision.princeton.edu/projects/2014/3DShapeNets/ModelNet10.zip",
            "ModelNet10"),
    Archive("modelnet40_ply_hdf5_2048.zip",
            "https://shapenet.cs.stanford.edu/media/modelnet40_ply_hdf5_2048.zip",
            "modelnet40_ply_hdf5_2048"),
    Archive("modelnet40_normal_resampled.zip",
            "https://shapenet.cs.stanford.edu/media/modelnet40_normal_resampled.zip",
            "modelnet40_normal_resampled"),
    Archive("shapenetcore_partanno_segmentation_benchmark_v0_normal.zip",
            "https://shapenet.cs.stanford.edu/media/"
            "shapenetcore_partanno_segmentation_benchmark_v0_normal.zip",
            "shapenetcore_partanno_segmentation_benchmark_v0_normal"),
    Archive("shapenetcore_partanno_segmentation_benchmark_v0.zip",
            "https://shapenet.cs.stanford.edu/ericyi/shapenetcore_partanno_segmentation_benchmark_v0.zip",
            "shapenetcore_partanno_segmentation_benchmark_v0"),
    Archive("shapenet_part_seg_hdf5_data.zip",
            "https://shapenet.cs.stanford.edu/media/shapenet_part_seg_hdf5_data.zip",
            "shapenet_part_seg_hdf5_data"),
)}


def file_md5(path: str | Path, *, chunk_size: int = 1 << 20) -> str:
    """The md5 hex digest of a file, read in chunks of ``chunk_size`` bytes."""
    from ... import _validate as V  # imports torch: here, so the readers importing this module do not

    V.check_int("chunk_size", chunk_size, low=1)
    digest = hashlib.md5()
    with open(path, "rb") as handle:
        while chunk := handle.read(chunk_size):
            digest.update(chunk)
    return digest.hexdigest()


def verify_md5(path: str | Path, expected: str | None = None) -> str:
    """Check a downloaded archive against an expected md5 and return its digest.

    Args:
        path: the archive.
        expected: md5 hex digest to compare with; None looks the file name up in
            :data:`ARCHIVES` and fails when no verified value is recorded there.

    Raises:
        ValueError: naming the file when the digests differ or no expected value is known.
    """
    path = Path(path)
    if expected is None:
        known = ARCHIVES.get(path.name)
        if known is None or known.md5 is None:
            raise ValueError(f"{path}: no verified md5 is recorded for {path.name!r}; pass the "
                             "expected md5 (e.g. from the publisher's page)")
        expected = known.md5
    expected = expected.strip().lower()
    if len(expected) != 32 or any(c not in "0123456789abcdef" for c in expected):
        raise ValueError(f"expected must be a 32-digit md5 hex digest, got {expected!r}")
    actual = file_md5(path)
    if actual != expected:
        raise ValueError(f"{path}: md5 {actual} does not match the expected {expected} "
                         "(incomplete or altered download?)")
    return actual


def check_finite(source: str, array: np.ndarray, *, name: str, unit: str = "row",
                 first: int = 0) -> None:
    """Raise naming ``source`` and the first ``unit`` (numbered from ``first``) with NaN/Inf."""
    flat = array.reshape(len(array), -1)
    bad = np.flatnonzero(~np.isfinite(flat).all(axis=1))
    if len(bad):
        raise ValueError(f"{source}: non-finite {name} (NaN or Inf) at {unit} {bad[0] + first}")


def check_whole(source: str, values: np.ndarray, *, name: str, unit: str = "sample", first: int = 0) -> None:
    """Raise naming ``source``, the first value that is not a whole number and its ``unit``.

    Class labels and part ids are cast to int64 after reading; a float 7.5 would silently
    become 7. Integer dtypes pass; floats pass when every value is integer-valued (3.0); any
    other dtype (strings, complex) is refused.

    Args:
        source: the file (and sample) named in the error.
        values: (S, ...) the values read; the error names the first row ``S`` (numbered from
            ``first``) holding a bad value.
        name: what the values are, plural (``"labels"``, ``"part ids"``).
    """
    values = np.asarray(values)
    if values.dtype.kind in "biu" or values.size == 0:
        return
    if values.dtype.kind != "f":
        raise ValueError(f"{source}: {name} must be whole numbers, got values of dtype {values.dtype}")
    flat = values.reshape(len(values), -1) if values.ndim else values.reshape(1, 1)  # (S, *)
    with np.errstate(invalid="ignore"):
        bad = ~(np.isfinite(flat) & (flat == np.round(flat)))
    rows = np.flatnonzero(bad.any(axis=1))
    if len(rows):
        row = rows[0]
        raise ValueError(f"{source}: {name} must be whole numbers, got {flat[row][bad[row]][0]} at "
                         f"{unit} {row + first}")


def check_columns(source: str, array: np.ndarray, *, columns: int, what: str) -> None:
    """Raise naming ``source`` unless ``array`` is a (rows, >= columns) table of ``what``."""
    if array.ndim != 2 or array.shape[1] < columns:
        raise ValueError(f"{source}: expected rows of {columns} values ({what}), got an array "
                         f"of shape {array.shape}")


def read_h5(path: str | Path, *, required: dict[str, tuple],
            optional: dict[str, tuple] | None = None) -> dict:
    """Read whole datasets from an HDF5 file, checking that they exist and their shapes.

    Args:
        path: the ``.h5`` file.
        required: dataset name -> expected shape, ``None`` entries matching any size
            (``{"data": (None, None, 3)}``).
        optional: the same for datasets that may be absent (absent ones are left out).

    Returns:
        dict name -> numpy array. All datasets have the same first dimension S.

    Raises:
        ValueError: naming the file: unreadable, a dataset missing or of the wrong shape, or no
            shape at all (S = 0 in the first required dataset).
    """
    import h5py

    path = Path(path)
    out = {}
    try:
        with h5py.File(path, "r") as handle:
            for name, shape in {**required, **(optional or {})}.items():
                if name not in handle:
                    if name in required:
                        raise ValueError(f"{path}: missing dataset {name!r} (found {sorted(handle)})")
                    continue
                array = handle[name][()]
                if len(array.shape) != len(shape) or any(
                        want is not None and got != want for got, want in zip(array.shape, shape)):
                    want = tuple("S" if i == 0 else "*" if w is None else w for i, w in enumerate(shape))
                    raise ValueError(f"{path}: dataset {name!r} has shape {array.shape}, "
                                     f"expected {want}")
                out[name] = array
    except OSError as err:
        raise ValueError(f"{path}: cannot read HDF5 file ({err})") from err
    first = next(iter(required))
    if not len(out[first]):
        raise ValueError(f"{path}: holds no shape (dataset {first!r} has shape {out[first].shape}); remove "
                         "the file or write its shapes")
    sizes = {name: len(a) for name, a in out.items()}
    if len(set(sizes.values())) > 1:
        raise ValueError(f"{path}: datasets disagree on the number of samples: {sizes}")
    return out
