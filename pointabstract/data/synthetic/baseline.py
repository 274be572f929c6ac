"""Non-learned baseline classifiers: how hard is a classification set without learning?

Each shape becomes a small feature vector; features are standardised with the training set's
mean and standard deviation and every test shape takes the label of its nearest training
shape (1-NN, Euclidean). Two descriptors (``features=``):

- ``"histogram"`` (the default, :func:`baseline_features`): the sorted extents of the
  axis-aligned bounding box (3 numbers, invariant to which axis is which) and a histogram of
  the points' distances to their centroid divided by the largest one (``bins`` numbers).
- ``"statistics"`` (:func:`statistics_features`, stronger): 12 global shape statistics, the
  sorted axis-aligned extents, the first four moments of the distance to the centroid, the
  two PCA eigenvalue ratios and the extents along the principal axes.

On the synthetic set both must stay clearly below 100 %, or the set is too easy to say
anything about a network.

It reads the ModelNet40-HDF5 layout (``ply_data_{train,test}*.h5`` with ``data`` and
``label``, and ``shape_names.txt``) with h5py directly.
"""

from __future__ import annotations

import re
from pathlib import Path

import h5py
import numpy as np

from ... import _validate as V
from ..datasets.checksums import check_whole

__all__ = ["FEATURES", "baseline_features", "evaluate_baseline", "nearest_neighbour_predict",
           "statistics_features"]

_MODELNET_DIR = "modelnet40_ply_hdf5_2048"
FEATURES = ("histogram", "statistics")


def baseline_features(pos: np.ndarray, *, bins: int = 16) -> np.ndarray:
    """Sorted bounding-box extents and radial-distance histogram of each cloud.

    Args:
        pos: (S, N, 3) point clouds.
        bins: B, histogram bins over [0, 1] of distance-to-centroid / max distance.

    Returns:
        (S, 3 + B) float64: extents in descending order, then the fraction of points per bin.
    """
    pos = np.asarray(pos, dtype=np.float64)
    if pos.ndim != 3 or pos.shape[2] != 3 or pos.shape[1] == 0:
        raise ValueError(f"pos must have shape (S, N, 3) with N > 0, got {pos.shape}")
    V.check_int("bins", bins, low=1)
    extents = np.sort(pos.max(1) - pos.min(1), axis=1)[:, ::-1]
    radius = np.linalg.norm(pos - pos.mean(1, keepdims=True), axis=2)  # (S, N)
    radius /= np.maximum(radius.max(1, keepdims=True), 1e-12)
    which = np.minimum((radius * bins).astype(np.int64), bins - 1)
    hist = np.stack([np.bincount(row, minlength=bins) for row in which]) / pos.shape[1]
    return np.concatenate([extents, hist], axis=1)


def statistics_features(pos: np.ndarray) -> np.ndarray:
    """Twelve global statistics of each cloud (the stronger non-learned descriptor).

    Args:
        pos: (S, N, 3) point clouds.

    Returns:
        (S, 12) float64: axis-aligned extents in descending order (3); mean, standard deviation,
        skewness and kurtosis of the distance to the centroid over its maximum (4); PCA
        eigenvalue ratios l2 / l1 and l3 / l1 (2); extents along the principal axes, descending (3).
    """
    pos = np.asarray(pos, dtype=np.float64)
    if pos.ndim != 3 or pos.shape[2] != 3 or pos.shape[1] < 2:
        raise ValueError(f"pos must have shape (S, N, 3) with N >= 2, got {pos.shape}")
    extents = np.sort(pos.max(1) - pos.min(1), axis=1)[:, ::-1]
    centred = pos - pos.mean(1, keepdims=True)
    radius = np.linalg.norm(centred, axis=2)  # (S, N)
    radius /= np.maximum(radius.max(1, keepdims=True), 1e-12)
    mean, std = radius.mean(1), np.maximum(radius.std(1), 1e-12)
    z = (radius - mean[:, None]) / std[:, None]
    moments = np.stack([mean, std, (z ** 3).mean(1), (z ** 4).mean(1)], axis=1)
    cov = np.einsum("snc,snd->scd", centred, centred) / pos.shape[1]  # (S, 3, 3)
    eigval, eigvec = np.linalg.eigh(cov)  # ascending
    ratios = eigval[:, [1, 0]] / np.maximum(eigval[:, 2:], 1e-12)
    local = np.einsum("snc,scd->snd", centred, eigvec)  # coordinates along the principal axes
    pca_extents = np.sort(local.max(1) - local.min(1), axis=1)[:, ::-1]
    return np.concatenate([extents, moments, ratios, pca_extents], axis=1)


def nearest_neighbour_predict(train_x: np.ndarray, train_y: np.ndarray, test_x: np.ndarray) -> np.ndarray:
    """1-NN labels (S_test,) of ``test_x`` (S_test, C) among ``train_x`` (S_train, C) with labels
    ``train_y`` (S_train,), after standardising every feature with the training statistics.
    Ties go to the lowest training index."""
    train_x, test_x = np.asarray(train_x, np.float64), np.asarray(test_x, np.float64)
    if train_x.ndim != 2 or test_x.ndim != 2 or train_x.shape[1] != test_x.shape[1]:
        raise ValueError(f"train_x and test_x must be (S, C) with the same C, got {train_x.shape} "
                         f"and {test_x.shape}")
    if len(train_x) == 0 or len(train_y) != len(train_x):
        raise ValueError(f"train_y must have one label per train_x row (>= 1), got {len(train_y)} "
                         f"labels for {len(train_x)} rows")
    mean, std = train_x.mean(0), train_x.std(0)
    std[std == 0] = 1.0
    a, b = (train_x - mean) / std, (test_x - mean) / std
    dist = (b ** 2).sum(1)[:, None] - 2 * b @ a.T + (a ** 2).sum(1)[None, :]  # (S_test, S_train)
    return np.asarray(train_y)[dist.argmin(1)]


def _read_split(folder: Path, split: str) -> tuple[np.ndarray, np.ndarray]:
    def index(path: Path) -> int:
        return int(re.search(r"(\d+)\.h5$", path.name).group(1))

    files = sorted(folder.glob(f"ply_data_{split}*.h5"), key=index)
    if not files:
        raise FileNotFoundError(f"no ply_data_{split}*.h5 under {folder}")
    data, labels = [], []
    for path in files:
        with h5py.File(path, "r") as f:
            for key in ("data", "label"):
                if key not in f:
                    raise ValueError(f"{path}: no dataset {key!r} (found {sorted(f)})")
            data.append(f["data"][:])
            label = f["label"][:].reshape(-1)
            check_whole(str(path), label, name="labels")
            labels.append(label.astype(np.int64))
    return np.concatenate(data), np.concatenate(labels)


def evaluate_baseline(root, *, bins: int = 16, features: str = "histogram") -> dict:
    """Fit the 1-NN baseline on the train split of a ModelNet40-HDF5-style set, score the test split.

    Args:
        root: the folder holding ``ply_data_*.h5`` and ``shape_names.txt``, or its parent
            (e.g. the synthetic set's output folder).
        bins: radial-histogram bins (``features="histogram"``).
        features: ``"histogram"`` (default) or ``"statistics"`` (see the module docstring).

    Returns:
        ``{"accuracy": float, "per_class": {name: accuracy}, "num_train": int, "num_test": int}``;
        classes without test shapes are left out of ``per_class``.
    """
    V.check_choice("features", features, FEATURES)
    folder = Path(root)
    if not (folder / "shape_names.txt").is_file() and (folder / _MODELNET_DIR).is_dir():
        folder = folder / _MODELNET_DIR
    names_file = folder / "shape_names.txt"
    if not names_file.is_file():
        raise FileNotFoundError(f"root must hold shape_names.txt (or {_MODELNET_DIR}/), got {root}")
    names = [line.strip() for line in names_file.read_text().splitlines() if line.strip()]
    train_pos, train_y = _read_split(folder, "train")
    test_pos, test_y = _read_split(folder, "test")
    if features == "histogram":
        train_x, test_x = baseline_features(train_pos, bins=bins), baseline_features(test_pos, bins=bins)
    else:
        train_x, test_x = statistics_features(train_pos), statistics_features(test_pos)
    predicted = nearest_neighbour_predict(train_x, train_y, test_x)
    correct = predicted == test_y
    per_class = {names[c]: float(correct[test_y == c].mean()) for c in np.unique(test_y)}
    return {"accuracy": float(correct.mean()), "per_class": per_class,
            "num_train": len(train_y), "num_test": len(test_y)}
