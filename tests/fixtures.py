"""On-disk test fixtures shared by every test folder: tiny datasets in the real layouts and
the tiny run overrides (import as ``from tests.fixtures import ...``)."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np


def tiny_sizes(name: str, **extra) -> dict[str, object]:
    """``{"model.key": value}`` sizing model ``name`` at its registry tiny size (``MODELS[name].tiny``,
    the one place tests take small models from), then ``extra``; lists where the spec has tuples."""
    from pointabstract.models import MODELS

    sizes = {**MODELS[name].tiny, **extra}
    return {f"model.{k}": list(v) if isinstance(v, tuple) else v for k, v in sizes.items()}


def tiny_model(name: str, **extra) -> list[str]:
    """:func:`tiny_sizes` as ``model.key=value`` overrides, the form the CLI and ``load_config`` read."""
    return [f"{k}={'null' if v is None else v}" for k, v in tiny_sizes(name, **extra).items()]


def _shape(kind: int, rng: np.random.Generator, n: int) -> np.ndarray:
    if kind == 0:  # sphere
        p = rng.normal(size=(n, 3))
        return p / np.linalg.norm(p, axis=1, keepdims=True)
    if kind == 1:  # flat square
        p = rng.uniform(-1, 1, size=(n, 3))
        p[:, 1] = 0
        return p
    t = rng.uniform(-1, 1, size=n)  # a line along y
    return np.stack([0.05 * rng.normal(size=n), t, 0.05 * rng.normal(size=n)], 1)


def write_modelnet_hdf5(root: Path, classes: list[str], splits: dict[str, tuple[np.ndarray, np.ndarray]]) -> Path:
    """A ModelNet40-HDF5 layout under ``root`` holding ``splits = {split: (pos (S, N, 3), labels (S,))}``."""
    folder = Path(root) / "modelnet40_ply_hdf5_2048"
    folder.mkdir(parents=True)
    (folder / "shape_names.txt").write_text("".join(f"{name}\n" for name in classes))
    for split, (pos, labels) in splits.items():
        with h5py.File(folder / f"ply_data_{split}0.h5", "w") as f:
            f["data"] = np.asarray(pos, dtype=np.float32)
            f["label"] = np.asarray(labels, dtype=np.int32)[:, None]
    return folder


def write_tiny_modelnet(root: Path, *, train: int = 24, test: int = 12, n: int = 64, seed: int = 0) -> Path:
    """A ModelNet40-HDF5 layout of 3 easily told classes (sphere, square, line) under ``root``."""
    rng = np.random.default_rng(seed)
    splits = {}
    for split, count in [("train", train), ("test", test)]:
        labels = np.arange(count) % 3
        splits[split] = np.stack([_shape(int(k), rng, n) for k in labels]), labels
    return write_modelnet_hdf5(root, ["sphere", "square", "line"], splits)


def write_tiny_synthetic(root: Path, *, n: int = 64) -> Path:
    """The built-in synthetic set at its smallest (2 train + 1 test shape per category) in its
    ModelNet40-HDF5 and ShapeNetPart-HDF5 layouts: serves every task."""
    from pointabstract.data import generate_synthetic

    generate_synthetic(root, train_per_class=2, test_per_class=1, num_points=n, workers=1, progress=False,
                       val_fraction=0.0)
    return Path(root)


# what each task's smoke test reads from write_tiny_synthetic's root
TASK_DATA = {
    "classification": {"data.dataset": "modelnet40"},
    "reconstruction": {"data.dataset": "modelnet40"},
    "part_segmentation": {"data.dataset": "shapenet_part"},
}
