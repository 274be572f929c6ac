"""ShapeNetCore point clouds for reconstruction (autoencoders): no labels besides the category."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .base import PointDataset
from .categories import SHAPENET_PART
from .checksums import check_finite
from .modelnet import check_sampling, list_folder, point_indices
from .shapenet_part import PART_LAYOUTS, ShapeNetPart, detect_part_layout

__all__ = ["CORE_LAYOUTS", "SHAPENET_CORE13", "ShapeNetCore", "find_ply_folder", "read_ply_points"]

# The 13 ShapeNetCore categories of 3D-R2N2 / AtlasNet / 3D-PointCapsNet: (name, synset),
# ordered by synset (which is also alphabetical by name); ``category`` indexes this table.
SHAPENET_CORE13: tuple[tuple[str, str], ...] = (
    ("airplane", "02691156"), ("bench", "02828884"), ("cabinet", "02933112"), ("car", "02958343"),
    ("chair", "03001627"), ("display", "03211117"), ("lamp", "03636649"), ("loudspeaker", "03691459"),
    ("rifle", "04090263"), ("sofa", "04256520"), ("table", "04379243"), ("telephone", "04401088"),
    ("watercraft", "04530566"),
)
CORE_LAYOUTS = ("ply", *PART_LAYOUTS)
_PLY_FOLDERS = ("customShapeNet", "shapenet_core13/customShapeNet")
_PLY_TYPES = {"char": "i1", "int8": "i1", "uchar": "u1", "uint8": "u1", "short": "i2", "int16": "i2",
              "ushort": "u2", "uint16": "u2", "int": "i4", "int32": "i4", "uint": "u4", "uint32": "u4",
              "float": "f4", "float32": "f4", "double": "f8", "float64": "f8"}


def read_ply_points(path: str | Path) -> np.ndarray:
    """The vertex positions of a PLY file (ascii or binary), as (N, 3) float32.

    Only the first element must be ``vertex`` with scalar properties including x, y, z (the
    point-cloud PLY files of AtlasNet's ShapeNet); later elements (faces) are not read.

    Raises:
        ValueError: naming the file, for a bad header, a truncated body or non-finite values.
    """
    path = Path(path)
    raw = path.read_bytes()
    end = raw.find(b"end_header")
    if not raw.startswith(b"ply") or end < 0:
        raise ValueError(f"{path}: not a PLY file (no 'ply' ... 'end_header' header)")
    body = raw.index(b"\n", end) + 1 if b"\n" in raw[end:] else len(raw)
    header = raw[:end].decode("latin-1").splitlines()
    fmt, count, props, element = None, 0, [], None
    for number, line in enumerate(header, start=1):
        fields = line.split()
        if not fields or fields[0] in ("ply", "comment", "obj_info"):
            continue
        if fields[0] == "format":
            fmt = fields[1] if len(fields) > 1 else None
        elif fields[0] == "element":
            if element is None:
                if len(fields) != 3 or fields[1] != "vertex" or not fields[2].isdigit():
                    raise ValueError(f"{path}:{number}: the first element must be 'vertex N', got {line!r}")
                count = int(fields[2])
            element = fields[1]
        elif fields[0] == "property" and element == "vertex":
            if len(fields) != 3 or fields[1] not in _PLY_TYPES:
                raise ValueError(f"{path}:{number}: unsupported vertex property {line!r}")
            props.append((fields[2], _PLY_TYPES[fields[1]]))
    names = [p for p, _ in props]
    if fmt not in ("ascii", "binary_little_endian", "binary_big_endian") or not all(
            a in names for a in "xyz"):
        raise ValueError(f"{path}: unsupported PLY header (format {fmt!r}, vertex properties {names})")
    if count <= 0:
        raise ValueError(f"{path}: empty point cloud (element vertex {count})")
    columns = [names.index(a) for a in "xyz"]
    if fmt == "ascii":
        try:
            table = np.loadtxt(raw[body:].decode("latin-1").splitlines()[:count], dtype=np.float64, ndmin=2)
        except ValueError as err:
            raise ValueError(f"{path}: cannot parse the vertex rows ({err})") from None
        if table.shape != (count, len(props)):
            raise ValueError(f"{path}: truncated or malformed: expected {count} rows of {len(props)} "
                             f"values, got an array of shape {table.shape}")
        points = table[:, columns]
    else:
        order = "<" if fmt == "binary_little_endian" else ">"
        dtype = np.dtype([(n, order + t) for n, t in props])
        if len(raw) - body < dtype.itemsize * count:
            raise ValueError(f"{path}: truncated: {count} vertices need {dtype.itemsize * count} bytes, "
                             f"the file has {len(raw) - body}")
        table = np.frombuffer(raw, dtype=dtype, count=count, offset=body)
        points = np.stack([table[a] for a in "xyz"], axis=1)
    points = points.astype(np.float32)
    check_finite(str(path), points, name="point", unit="vertex")
    return points


def find_ply_folder(root: str | Path) -> Path | None:
    """The folder holding ``<synset>/ply/*.ply`` (root, or its standard subfolders), or None."""
    root = Path(root)
    for folder in [root] + [root / name for name in _PLY_FOLDERS]:
        if folder.is_dir() and any(folder.glob("*/ply/*.ply")):
            return folder
    return None


class ShapeNetCore(PointDataset):
    """ShapeNetCore point clouds (Chang et al., *ShapeNet*, 2015) for reconstruction.

    Samples are ``{"pos": (N, 3) float32, "category": int}``; N points are drawn uniformly at
    random without replacement (seeded; ``sampling`` to change it). Two sources:

    - ``layout="ply"``: the ShapeNetCore13 point clouds of AtlasNet (Groueix et al. 2018), as
      used by 3D-PointCapsNet (Zhao et al. 2019); ``category`` indexes :data:`SHAPENET_CORE13`::

        root/  (or root/customShapeNet/, root/shapenet_core13/customShapeNet/)
            <synset>/ply/<token>.points.ply     PLY point cloud (ascii or binary) with x, y, z

      Split: per category, the first 80 % of the sorted file names are ``"train"``, the rest
      ``"test"`` (AtlasNet's rule; its loader also skips the first training file, we keep it).
    - a ShapeNetPart layout (see :class:`~pointabstract.data.shapenet_part.ShapeNetPart`):
      its points without part labels, its splits; ``category`` indexes SHAPENET_PART.

    Licence: ShapeNet terms of use (research / non-commercial). Errors name the file.

    Args:
        root: the folder holding a layout.
        split: ``"train"`` / ``"test"`` (ply), or a ShapeNetPart split.
        categories: None (all) or names / synsets / indices of the layout's category table.
        num_points: N points per sample (None: all stored points).
        sampling: ``"random"`` (default), ``"first"`` or ``"fps"``.
        transform, seed: as for every :class:`~pointabstract.data.PointDataset`.
        layout: ``"ply"`` or a ShapeNetPart layout name; None detects (``"ply"`` first).
        undersized: a cloud with fewer than N points raises (``"error"``) or repeats points.
    """

    def __init__(self, root: str | Path, split: str = "train", *, categories=None,
                 num_points: int | None = 2048, sampling: str = "random", transform=None, seed: int = 0,
                 layout: str | None = None, undersized: str = "error"):
        super().__init__(transform=transform, seed=seed)
        if layout is not None and layout not in CORE_LAYOUTS:
            raise ValueError(f"layout must be one of {CORE_LAYOUTS} or None, got {layout!r}")
        check_sampling(sampling, num_points, undersized)
        root = Path(root)
        folder = find_ply_folder(root) if layout in (None, "ply") else None
        self._part = None
        if folder is None and layout == "ply":
            raise ValueError(f"no ShapeNetCore13 PLY layout (<synset>/ply/*.ply) found under {root}, "
                             f"in it: {list_folder(root)}")
        if folder is None:
            try:
                detect_part_layout(root, layout=layout)
            except ValueError as err:
                raise ValueError(f"{err}\n(and no ShapeNetCore13 PLY layout <synset>/ply/*.ply)") from None
            self._part = ShapeNetPart(root, split, categories=categories, num_points=num_points,
                                      sampling=sampling, seed=seed, layout=layout, undersized=undersized)
            self.layout, self.folder = self._part.layout, self._part.folder
            self.categories, self.sources = self._part.categories, self._part.sources
            self.category_names = tuple(c.name for c in SHAPENET_PART)
            return
        if split not in ("train", "test"):
            raise ValueError(f"split must be 'train' or 'test' for the PLY layout, got {split!r}")
        self.layout, self.folder, self.split = "ply", folder, split
        self.num_points, self.sampling, self.undersized = num_points, sampling, undersized
        self.category_names = tuple(name for name, _ in SHAPENET_CORE13)
        self._read_ply_tree(self._resolve(categories))

    @staticmethod
    def _resolve(categories) -> list[int]:
        if categories is None:
            return list(range(len(SHAPENET_CORE13)))
        out = []
        for c in [categories] if isinstance(categories, (str, int)) else categories:
            hits = [i for i, (name, synset) in enumerate(SHAPENET_CORE13) if c in (i, name, synset)]
            if not hits:
                raise ValueError(f"categories: unknown ShapeNetCore13 category {c!r}; choose from "
                                 f"{[n for n, _ in SHAPENET_CORE13]}, their synsets or indices 0-12")
            out += hits
        return sorted(set(out))

    def _read_ply_tree(self, wanted: list[int]) -> None:
        synsets = {synset: i for i, (_, synset) in enumerate(SHAPENET_CORE13)}
        categories, files = [], []
        for sub in sorted(p for p in self.folder.iterdir() if (p / "ply").is_dir()):
            if sub.name not in synsets:
                raise ValueError(f"{sub}: unknown synset folder (ShapeNetCore13 synsets: {sorted(synsets)})")
            if synsets[sub.name] not in wanted:
                continue
            names = sorted((sub / "ply").glob("*.ply"))
            cut = int(len(names) * 0.8)
            chosen = names[:cut] if self.split == "train" else names[cut:]
            files += chosen
            categories += [synsets[sub.name]] * len(chosen)
        self.categories, self._files = np.array(categories, dtype=np.int64), files
        self.sources = [str(f) for f in files]

    def __len__(self) -> int:
        return len(self.categories)

    def load(self, index: int, rng: np.random.Generator) -> dict:
        if self._part is not None:
            sample = self._part.load(index, rng)
            return {"pos": sample["pos"], "category": sample["category"]}
        pos = read_ply_points(self._files[index])
        idx = point_indices(len(pos), self.num_points, sampling=self.sampling, rng=rng, pos=pos,
                            source=self.sources[index], undersized=self.undersized)
        return {"pos": np.ascontiguousarray(pos[idx]), "category": int(self.categories[index])}

