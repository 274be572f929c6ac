"""What a predictor accepts, turned into clouds: paths, arrays (NumPy or torch), lists of either.

Each input becomes one :class:`Cloud` in its own coordinates and precision: a file is read by
:func:`pointabstract.data.files.read_shape` (float64 where it stores doubles or text, float32
where it stores float32; its note, e.g. a mesh without faces used as a cloud, is kept), an array
row-wise as ``x y z [nx ny nz]`` (float64 for float64 or integer arrays, float32 for float32
ones). Nothing is cast to float32 before :mod:`.prepare` has centred and scaled it. Bad input is
a ValueError naming the input and what is wrong.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

__all__ = ["Cloud", "as_clouds", "is_batch"]


@dataclass
class Cloud:
    """One input as read, in its own coordinates."""

    name: str  # the file path, or "cloud <i>" for an array
    points: np.ndarray  # (V, 3) a cloud's points or a mesh's vertices, float32 or float64 as given
    normals: np.ndarray | None = None  # (V, 3) float32 or None
    faces: np.ndarray | None = None  # (F, 3) int64 for a mesh, else None
    path: Path | None = None
    notes: list[str] = field(default_factory=list)
    shape: object = None  # the ShapeFile a file was read into (meshes are sampled from it)

    @property
    def is_mesh(self) -> bool:
        return self.faces is not None and len(self.faces) > 0


def is_batch(x) -> bool:
    """Whether ``x`` holds several inputs (a list / tuple, a (B, N, C) array, a folder or a glob):
    the predictor then returns a list of results, else one result."""
    if isinstance(x, (list, tuple)):
        return True
    if isinstance(x, (np.ndarray, torch.Tensor)):
        return x.ndim == 3
    if isinstance(x, (str, Path)):
        return Path(x).is_dir() or any(c in str(x) for c in "*?[")
    return False


def as_clouds(x) -> list[Cloud]:
    """``x`` (see :func:`is_batch`) as clouds, in the order given (a folder: its supported files
    in sorted order, as :func:`~pointabstract.data.files.find_shape_files` lists them)."""
    if isinstance(x, (str, Path)):
        if is_batch(x):
            from ..data.files import find_shape_files

            return [read_cloud(p) for p in _found(find_shape_files([x]), x)]
        return [read_cloud(x)]
    if isinstance(x, (np.ndarray, torch.Tensor)):
        array = _numpy(x, "x")
        if array.ndim == 3:
            return [array_cloud(a, f"cloud {i}") for i, a in enumerate(array)]
        return [array_cloud(array, "cloud 0")]
    if isinstance(x, (list, tuple)):
        if not x:
            raise ValueError("x is an empty list: give at least one path or cloud")
        return [c for i, item in enumerate(x) for c in _one(item, i)]
    raise TypeError(f"x must be a path, an (N, 3|6) or (B, N, 3|6) array (NumPy or torch) or a list of "
                    f"those, got {type(x).__name__}")


def _one(item, i: int) -> list[Cloud]:
    if isinstance(item, (str, Path)):
        return [read_cloud(item)]
    if isinstance(item, (np.ndarray, torch.Tensor)):
        return [array_cloud(_numpy(item, f"x[{i}]"), f"cloud {i}")]
    raise TypeError(f"x[{i}] must be a path or an (N, 3|6) array, got {type(item).__name__}")


def _found(files: list[Path], pattern) -> list[Path]:
    if not files:
        raise ValueError(f"{pattern}: no shape file found there")
    return files


def _numpy(x, name: str) -> np.ndarray:
    array = x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)
    if not np.issubdtype(array.dtype, np.number) or np.issubdtype(array.dtype, np.complexfloating):
        raise TypeError(f"{name} must hold real numbers, got dtype {array.dtype}")
    return array


def read_cloud(path: str | Path) -> Cloud:
    """A file read by :func:`~pointabstract.data.files.read_shape` as a :class:`Cloud`."""
    from ..data.files import read_shape

    shape = read_shape(path)
    notes = [shape.note] if shape.note else []
    return Cloud(str(path), shape.points, shape.normals, shape.faces, Path(path), notes, shape)


def array_cloud(array: np.ndarray, name: str) -> Cloud:
    """An (N, 3) or (N, 6) array (``x y z [nx ny nz]``) as a :class:`Cloud`."""
    if array.ndim != 2 or array.shape[1] not in (3, 6):
        raise ValueError(f"{name} must have shape (N, 3) or (N, 6) (x y z [nx ny nz]), or be a batch "
                         f"(B, N, 3|6), got {tuple(array.shape)}")
    if array.shape[0] == 0:
        raise ValueError(f"{name} has no points")
    if not np.isfinite(array).all():
        row = int(np.flatnonzero(~np.isfinite(array).all(1))[0])
        raise ValueError(f"{name} holds NaN or Inf values (first at point {row})")
    from ..data.files import coordinate_dtype

    normals = np.ascontiguousarray(array[:, 3:6], dtype=np.float32) if array.shape[1] == 6 else None
    return Cloud(name, np.ascontiguousarray(array[:, :3], dtype=coordinate_dtype(array)), normals)
