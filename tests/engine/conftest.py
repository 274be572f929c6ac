"""A tiny ModelNet40-HDF5 layout (3 easy classes) and a tiny model config for engine tests."""

import h5py
import numpy as np
import pytest

TINY_MODEL = ["model.widths=[8, 16, 16, 24]", "model.heads=2", "model.k=6", "model.fuse_dim=16",
              "model.head_dims=[16]", "model.dropout=0.0"]


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


def write_tiny_modelnet(root, *, train=24, test=12, n=64, seed=0):
    folder = root / "modelnet40_ply_hdf5_2048"
    folder.mkdir(parents=True)
    (folder / "shape_names.txt").write_text("sphere\nsquare\nline\n")
    rng = np.random.default_rng(seed)
    for split, count in [("train", train), ("test", test)]:
        labels = np.arange(count) % 3
        data = np.stack([_shape(int(k), rng, n) for k in labels]).astype(np.float32)
        with h5py.File(folder / f"ply_data_{split}0.h5", "w") as f:
            f["data"] = data
            f["label"] = labels[:, None].astype(np.int32)
    return folder


@pytest.fixture
def tiny_data(tmp_path):
    write_tiny_modelnet(tmp_path / "data")
    return tmp_path / "data"


@pytest.fixture
def tiny_overrides(tiny_data, tmp_path):
    return [f"data.root={tiny_data}", "data.num_points=48", "data.batch_size=8", "data.eval_batch_size=12",
            "data.workers=0", "optim.epochs=2", f"log.out_dir={tmp_path / 'run'}", "log.progress=false",
            "log.tensorboard=false", "device=cpu", *TINY_MODEL]
