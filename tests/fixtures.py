"""What the tests share: model sizes from the registry, random clouds, tiny datasets written in
the real layouts, tiny trained runs, and small checks (import as ``from tests.fixtures import ...``;
pytest fixtures themselves live in the conftest.py files)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import socket
from pathlib import Path

import h5py
import numpy as np
import pytest
import torch

from pointabstract.data.categories import SHAPENET_PART
from pointabstract.data.synthetic.nuisances import NUISANCES, Nuisances


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


# ---------------------------------------------------------------------------- clouds

def cloud(batch: int, n: int, c: int = 3, *, dtype=torch.float32, seed: int = 0) -> torch.Tensor:
    """A reproducible random cloud (B, N, C) with coordinates in [-1, 1)."""
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(batch, n, c, generator=g, dtype=torch.float64) * 2 - 1).to(dtype)



NO_NUISANCES = Nuisances(**{name: False for name in NUISANCES})  # the hard synthetic shapes, clean


def over_shape_grid(test):
    """Parametrise ``test(dtype, batch, n)`` over the grid every fast op is compared with its
    naive reference on: float32 / float64, B in {1, 3}, N in {1, 7, 64, 1000}."""
    for name, values in (("n", [1, 7, 64, 1000]), ("batch", [1, 3]), ("dtype", [torch.float32, torch.float64])):
        test = pytest.mark.parametrize(name, values)(test)
    return test



def split_backends(op: str) -> tuple[list[str], list[str]]:
    """The backends of ``op`` that must equal its naive reference index for index (our numba and
    torch code), and the libraries it dispatches to (exact up to documented ties)."""
    from pointabstract.ops import backends

    exact = ["numba", "torch"]
    return exact, [b for b in backends()[op] if b not in exact]


def degenerate_cloud(kind: str, *, batch: int = 2, n: int = 600, seed: int = 0) -> torch.Tensor:
    """A (B, N, 3) float32 cloud full of exact duplicates and exactly tied distances.

    ``kind``: ``"identical"`` (one point repeated), ``"half duplicates"`` (every other point
    at one spot, the rest uniform), ``"few values"`` (7 distinct points repeated at random),
    ``"lattice"`` (a shuffled 7^3 grid of spacing 0.125 plus repeats of some of its points).
    """
    g = torch.Generator().manual_seed(seed)
    rand = torch.rand(batch, n, 3, generator=g)
    if kind == "identical":
        return torch.full((batch, n, 3), 0.25)
    if kind == "half duplicates":
        return torch.where(torch.arange(n).view(1, n, 1) % 2 == 0, torch.tensor(0.5), rand)
    if kind == "few values":
        return rand[:, :7][:, torch.randint(0, 7, (n,), generator=g)]
    if kind == "lattice":
        axis = torch.arange(7.0) * 0.125  # exact in binary: many exactly equal distances
        grid = torch.stack(torch.meshgrid(axis, axis, axis, indexing="ij"), -1).reshape(-1, 3)
        pick = torch.cat([torch.randperm(343, generator=g), torch.randint(0, 343, (n - 343,), generator=g)])
        return grid[pick[torch.randperm(n, generator=g)]].expand(batch, n, 3).contiguous()
    raise ValueError(f"kind must be identical, half duplicates, few values or lattice, got {kind!r}")


# ---------------------------------------------------------------------------- on-disk layouts

def resampled_layout(root, bad_line: str = "0.1,0.2,nan,0,0,1", bad_split: str = "train"):
    """A ModelNet 'resampled' layout (one text file per shape, read when a sample is loaded):
    8 train and 8 test shapes of 2 classes; the fifth ``bad_split`` file has ``bad_line`` at line 3."""
    root.mkdir()
    (root / "modelnet40_shape_names.txt").write_text("airplane\nbathtub\n")
    rng = torch.Generator().manual_seed(0)
    for split, first in (("train", 1), ("test", 101)):
        ids = [f"{name}_{i:04d}" for name in ("airplane", "bathtub") for i in range(first, first + 4)]
        (root / f"modelnet40_{split}.txt").write_text("\n".join(ids) + "\n")
        for number, shape_id in enumerate(ids):
            (root / shape_id.rsplit("_", 1)[0]).mkdir(exist_ok=True)
            rows = [",".join(f"{v:.4f}" for v in row) for row in torch.rand(64, 6, generator=rng).tolist()]
            if number == 4 and split == bad_split:
                rows[2] = bad_line
            (root / shape_id.rsplit("_", 1)[0] / f"{shape_id}.txt").write_text("\n".join(rows) + "\n")
    return root


PART_NORMAL = "shapenetcore_partanno_segmentation_benchmark_v0_normal"
PART_V0 = "shapenetcore_partanno_segmentation_benchmark_v0"
PART_HDF5 = "shapenet_part_seg_hdf5_data"
CAP, MUG, TABLE = 2, 11, 15  # indices into SHAPENET_PART
# (split, category, token); parts of each shape: the category's parts in turn
PART_SHAPES = [("train", CAP, "c0"), ("train", MUG, "m0"), ("val", CAP, "c1"), ("test", TABLE, "t0"),
          ("test", MUG, "m1")]


def part_shape(category, n, seed):
    """(pos, normal, part) of a random shape of ``category`` with ``n`` points, its parts in turn."""
    rng = np.random.default_rng(seed)
    pos = rng.normal(size=(n, 3)).astype(np.float32)
    parts = np.array(SHAPENET_PART[category].parts)
    return pos, pos / np.linalg.norm(pos, axis=1, keepdims=True), parts[np.arange(n) % len(parts)]


def _part_category_table(path):
    path.write_text("".join(f"{c.name}\t{c.synset}\n" for c in SHAPENET_PART))


def _part_split_lists(folder):
    (folder / "train_test_split").mkdir(parents=True)
    for split in ("train", "val", "test"):
        entries = [f"shape_data/{SHAPENET_PART[c].synset}/{t}" for s, c, t in PART_SHAPES if s == split]
        (folder / "train_test_split" / f"shuffled_{split}_file_list.json").write_text(json.dumps(entries))


def _part_text_layout(folder: Path, n: int, write_shape) -> Path:
    """A ShapeNetPart text layout of :data:`PART_SHAPES` in ``folder`` (split lists, category
    table); ``write_shape(category folder, token, category, pos, normal, part)`` writes each shape."""
    _part_split_lists(folder)
    _part_category_table(folder / "synsetoffset2category.txt")
    for i, (_, c, token) in enumerate(PART_SHAPES):
        write_shape(folder / SHAPENET_PART[c].synset, token, c, *part_shape(c, n + i, i))
    return folder


def _normal_file(base: Path, token, category, pos, normal, part) -> None:
    base.mkdir(exist_ok=True)
    np.savetxt(base / f"{token}.txt", np.column_stack([pos, normal, part]), fmt="%.6f")


def _v0_files(base: Path, token, category, pos, normal, part) -> None:
    (base / "points").mkdir(parents=True, exist_ok=True)
    (base / "points_label").mkdir(exist_ok=True)
    np.savetxt(base / "points" / f"{token}.pts", pos, fmt="%.6f")
    np.savetxt(base / "points_label" / f"{token}.seg", part - SHAPENET_PART[category].parts[0] + 1, fmt="%d")


def write_normal(root, n=40):
    """The ShapeNetPart "normal" layout (one text file per shape) of :data:`PART_SHAPES`."""
    return _part_text_layout(root / PART_NORMAL, n, _normal_file)


def write_v0(root, n=40):
    """The ShapeNetPart v0 layout (points + points_label files) of :data:`PART_SHAPES`."""
    return _part_text_layout(root / PART_V0, n, _v0_files)


def write_part_hdf5(root, n=32):
    """The ShapeNetPart HDF5 layout of :data:`PART_SHAPES`, its categories listed in another order."""
    folder = root / PART_HDF5
    folder.mkdir()
    order = [c for c in SHAPENET_PART[::-1]]  # a file order unlike SHAPENET_PART's, on purpose
    (folder / "all_object_categories.txt").write_text("".join(f"{c.name}\t{c.synset}\n" for c in order))
    for split in ("train", "val", "test"):
        chosen = [(i, c) for i, (s, c, _) in enumerate(PART_SHAPES) if s == split]
        shapes = [part_shape(c, n, i) for i, c in chosen]
        with h5py.File(folder / f"ply_data_{split}0.h5", "w") as handle:
            handle["data"] = np.stack([s[0] for s in shapes]).reshape(-1, n, 3)
            handle["label"] = np.array([[order.index(SHAPENET_PART[c])] for _, c in chosen], np.uint8).reshape(-1, 1)
            handle["pid"] = np.stack([s[2] for s in shapes]).reshape(-1, n).astype(np.uint8)
    return folder


PLY_HEADER = "ply\nformat {fmt} 1.0\ncomment written by a test\nelement vertex {n}\n{props}end_header\n"
PLY_PROPS = "property float x\nproperty float y\nproperty float z\nproperty float nx\nproperty float ny\nproperty float nz\n"


def write_ply(path, points, *, fmt="ascii"):
    """``points`` (N, 3) with unit normals as a PLY file (ascii, binary_little_endian or binary_big_endian)."""
    table = np.hstack([points, points / np.linalg.norm(points, axis=1, keepdims=True)]).astype(np.float32)
    head = PLY_HEADER.format(fmt=fmt, n=len(points), props=PLY_PROPS).encode()
    if fmt == "ascii":
        body = "".join(" ".join(f"{v:.6f}" for v in row) + "\n" for row in table).encode()
    else:
        body = table.astype("<f4" if fmt == "binary_little_endian" else ">f4").tobytes()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(head + body)


TETRA = (np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], float), [(0, 2, 1), (0, 1, 3), (0, 3, 2), (1, 2, 3)])
PYRAMID = (np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [0.5, 0.5, 2]], float),
           [(0, 3, 2, 1), (0, 1, 4), (1, 2, 4), (2, 3, 4), (3, 0, 4)])
SLAB = (np.array([(x, 3 * y, 0.2 * z) for x in (0, 1) for y in (0, 1) for z in (0, 1)], float),
        [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)])


def write_mesh(path: Path, mesh, scale: float = 1.0) -> Path:
    """A polygon mesh as OBJ, ascii PLY or OFF by the path's suffix (polygons kept, fan-split on reading)."""
    vertices, faces = mesh[0] * scale, mesh[1]
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [f"{x:.6g} {y:.6g} {z:.6g}" for x, y, z in vertices]
    if path.suffix == ".obj":
        text = "\n".join("v " + r for r in rows) + "\n" + "".join("f " + " ".join(str(i + 1) for i in f) + "\n" for f in faces)
    elif path.suffix == ".ply":
        text = (f"ply\nformat ascii 1.0\nelement vertex {len(rows)}\nproperty float x\nproperty float y\nproperty float z\n"
                f"element face {len(faces)}\nproperty list uchar int vertex_indices\nend_header\n" + "\n".join(rows) + "\n"
                + "".join(f"{len(f)} " + " ".join(map(str, f)) + "\n" for f in faces))
    else:
        text = f"OFF\n{len(rows)} {len(faces)} 0\n" + "\n".join(rows) + "\n" + "".join(
            f"{len(f)} " + " ".join(map(str, f)) + "\n" for f in faces)
    path.write_text(text)
    return path


def write_shapes(root: Path, per_class: int = 5) -> Path:
    """3 classes of tiny meshes: tetra as OBJ, pyramid as PLY, slab as OFF (and one of each type elsewhere)."""
    for i in range(per_class):
        write_mesh(root / "tetra" / f"t{i}.obj", TETRA, 1 + 0.1 * i)
        write_mesh(root / "pyramid" / f"p{i}.ply", PYRAMID, 1 + 0.1 * i)
        write_mesh(root / "slab" / ("nested" if i == 0 else "") / f"s{i}.off", SLAB, 1 + 0.1 * i)
    return root


def snapshot(root: Path) -> dict:
    """{relative path: (size, mtime)} of every file below ``root``: equal snapshots mean nothing was written."""
    return {p.relative_to(root).as_posix(): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*")}



def read_h5(path) -> dict[str, np.ndarray]:
    """Every dataset of the HDF5 file ``path``, read into memory."""
    with h5py.File(path, "r") as f:
        return {k: f[k][:] for k in f}


def file_digests(root: Path) -> dict[str, str]:
    """{relative path: SHA-256} of every file below ``root``: equal digests mean equal contents."""
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


# ---------------------------------------------------------------------------- trained runs

_RUNS: dict[str, Path] = {}


def tiny_runs(tmp_path_factory) -> dict[str, Path]:
    """``{"classification" | "reconstruction" | "part_segmentation": last.pt, "data": root}``: one
    epoch each on the smallest built-in synthetic set (16 test shapes of 64 points), evaluated in
    batches of 8 (so votes run over two batches)."""
    from pointabstract.engine import load_config, train

    if not _RUNS:
        root = tmp_path_factory.mktemp("predict")
        data = write_tiny_synthetic(root / "data")
        common = [f"data.root={data}", "data.workers=0", "optim.epochs=1", "log.progress=false",
                  "log.tensorboard=false", "data.eval_batch_size=8", "data.batch_size=8"]
        runs = {"classification": ["model=centroid_transformer", "data.num_points=48", *tiny_model("centroid_transformer")],
                "reconstruction": ["model=capsule_ae_demo_ca", "task=reconstruction", "data.dataset=shapenet_part",
                                   "data.num_points=64", "task.bn_batches=2", *tiny_model("capsule_ae_demo_ca")],
                "part_segmentation": ["model=sequoia_seg", "data.dataset=shapenet_part", "data.num_points=48",
                                      *tiny_model("sequoia_seg")]}
        for task, overrides in runs.items():
            train(load_config(None, [*common, *overrides, f"log.out_dir={root / task}"]))
            _RUNS[task] = root / task / "last.pt"
        _RUNS["data"] = data
    return _RUNS


def eval_outputs(checkpoint, key: str, *, votes: int | None = None, raw: bool = False):
    """The restored run, and ``model(...)[key]`` of every forward pass the task's own ``evaluate``
    makes over the test split (a hook on the model), in order."""
    from pointabstract.engine import restore
    from pointabstract.engine.trainer import ShardSampler, make_loader

    run = restore(checkpoint, overrides={"data.workers": 0, **({"task.votes": votes} if votes else {})})
    seen = []
    hook = run.model.register_forward_hook(lambda m, i, out: seen.append(out[key].detach().float()))
    loader = make_loader(run.dataset, ShardSampler(len(run.dataset)), run.config.data.eval_batch_size, 0)
    kwargs = {} if run.config.task == "classification" or votes is None else {"votes": votes}
    metrics = run.task.evaluate(run.model, loader, torch.device("cpu"), autocast=contextlib.nullcontext, **kwargs)
    hook.remove()
    if raw:
        run.dataset.transform = None
    return run, seen, metrics


# ---------------------------------------------------------------------------- checks and ports

def check_png(path, size: tuple[int, int], out: str) -> None:
    """``path`` is a ``size`` PNG whose metadata names a backend, the one the CLI's ``out`` says."""
    from PIL import Image

    from pointabstract.viz.core.render import png_backend

    assert Image.open(path).size == size
    backend = png_backend(path)
    assert backend in ("offscreen", "legacy", "software") and f"drawn by the {backend} renderer" in out


def free_port() -> int:
    """A TCP port free on localhost now (for a torchrun master)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
