"""ShapeNetPart part segmentation in its three published layouts."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from ... import _validate as V
from ..categories import SHAPENET_PART, resolve_categories, resolve_category
from .base import LayoutNotFoundError, PointDataset
from .checksums import check_columns, check_finite, check_whole, read_h5
from .folders import list_folder
from .sampling import check_sampling, point_indices

__all__ = ["PART_LAYOUTS", "PART_SPLITS", "ShapeNetPart", "detect_part_layout"]

PART_LAYOUTS = ("normal", "v0", "hdf5")
PART_SPLITS = ("train", "val", "test", "trainval")
_FOLDERS = {"normal": "shapenetcore_partanno_segmentation_benchmark_v0_normal",
            "v0": "shapenetcore_partanno_segmentation_benchmark_v0",
            "hdf5": "shapenet_part_seg_hdf5_data"}
_LOOKED = {"normal": "synsetoffset2category.txt + train_test_split/ + <synset>/<token>.txt",
           "v0": "synsetoffset2category.txt + train_test_split/ + <synset>/points/<token>.pts",
           "hdf5": "ply_data_{train,val,test}*.h5 + all_object_categories.txt"}
# lowest and highest global part id of each category (every category owns a contiguous range)
_LO = np.array([c.parts[0] for c in SHAPENET_PART])
_HI = np.array([c.parts[-1] for c in SHAPENET_PART])


def _kind(folder: Path) -> str | None:
    if not folder.is_dir():
        return None
    if (folder / "all_object_categories.txt").is_file() and any(folder.glob("ply_data_*.h5")):
        return "hdf5"
    if (folder / "synsetoffset2category.txt").is_file() and (folder / "train_test_split").is_dir():
        return "v0" if any(folder.glob("*/points")) else "normal"
    return None


def detect_part_layout(root: str | Path, *, layout: str | None = None) -> tuple[str, Path]:
    """Find a ShapeNetPart layout under ``root`` (itself first, then the standard subfolders).

    Returns ``(layout, folder)`` with layout one of :data:`PART_LAYOUTS`; raises ValueError
    listing the layouts looked for and what ``root`` contains.
    """
    root = Path(root)
    V.check_choice("layout", layout, PART_LAYOUTS, allow_none=True)
    wanted = PART_LAYOUTS if layout is None else (layout,)
    for folder in [root] + [root / _FOLDERS[k] for k in wanted]:
        kind = _kind(folder)
        if kind in wanted:
            return kind, folder
    lines = [f"  - {_LOOKED[k]}, in {root} or {root}/{_FOLDERS[k]}" for k in wanted]
    raise LayoutNotFoundError(f"no ShapeNetPart layout found under {root}; looked for:\n" + "\n".join(lines)
                     + f"\nfound in {root}: {list_folder(root)}")


def _read_category_table(path: Path) -> dict[str, int]:
    """``<Name>\\t<synset>`` lines -> {synset: index into SHAPENET_PART}, in file order."""
    if not path.is_file():
        raise ValueError(f"{path}: file not found")
    out = {}
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        fields = line.split()
        try:
            index = resolve_category(fields[0]) if len(fields) == 2 else None
        except ValueError:
            index = None
        if index is None or SHAPENET_PART[index].synset != fields[1]:
            raise ValueError(f"{path}:{number}: unknown category line {line.strip()!r} (expected "
                             "'<Name> <synset>' of a ShapeNetPart category)")
        out[fields[1]] = index
    return out


def check_parts(source: str, part: np.ndarray, *, category: int, unit: str = "point", first: int = 0) -> None:
    """Raise naming ``source`` when a global part id is outside ``category``'s range."""
    bad = np.flatnonzero((part < _LO[category]) | (part > _HI[category]))
    if len(bad):
        c = SHAPENET_PART[category]
        raise ValueError(f"{source}: part id {part[bad[0]]} at {unit} {bad[0] + first} is not one of "
                         f"{c.name}'s parts {list(c.parts)}")


def _loadtxt(path: Path, dtype, ndmin: int) -> np.ndarray:
    try:
        return np.loadtxt(path, dtype=dtype, ndmin=ndmin)
    except ValueError as err:
        raise ValueError(f"{path}: cannot parse ({err})") from None


class ShapeNetPart(PointDataset):
    """ShapeNetPart: 16,881 shapes of 16 categories with 50 labelled parts (Yi et al., *A Scalable
    Active Framework for Region Annotation in 3D Shape Collections*, SIGGRAPH Asia 2016).

    Source: https://cs.stanford.edu/~ericyi/project_page/part_annotation/ (ShapeNet terms:
    research / non-commercial use). Official split 12,137 train / 1,870 val / 2,874 test.
    Samples are ``{"pos": (N, 3) float32, "part": (N,) int64 global part ids 0-49,
    "category": int index into SHAPENET_PART, "normal": (N, 3) float32 (with use_normals)}``.
    Reads whichever layout :func:`detect_part_layout` finds::

        root/shapenetcore_partanno_segmentation_benchmark_v0_normal/   (PointNet++; has normals)
            synsetoffset2category.txt       <Name>\\t<synset> per line
            train_test_split/shuffled_{train,val,test}_file_list.json
                                            ["shape_data/<synset>/<token>", ...]
            <synset>/<token>.txt            rows "x y z nx ny nz part", global part ids
        root/shapenetcore_partanno_segmentation_benchmark_v0/           (original release)
            synsetoffset2category.txt, train_test_split/ as above
            <synset>/points/<token>.pts     rows "x y z"
            <synset>/points_label/<token>.seg   one LOCAL part id 1..k per row (mapped to global)
        root/shapenet_part_seg_hdf5_data/                              (PointNet; 2,048 points)
            ply_data_{train,val,test}<i>.h5  data (S, 2048, 3), label (S, 1) category index
                                             into all_object_categories.txt, pid (S, 2048) global
            all_object_categories.txt        <Name>\\t<synset> per line

    Every file read is validated (columns, counts, finite values, labels and part ids that
    are whole numbers, part ids inside the category's range); errors name the file. Split
    entries are never dropped: a missing file is an error. Shapes hold different numbers of
    points (about 2,000-3,000 in the normal layout): see ``undersized``.

    Args:
        root: folder holding a layout (or the layout folder itself).
        split: ``"train"``, ``"val"``, ``"test"`` or ``"trainval"``.
        categories: None (all 16) or names (any case) / synsets / indices to keep.
        num_points: N points per sample; None keeps every stored point (N varies).
        sampling: ``"random"`` (default: the stored order is not random), ``"first"`` or
            ``"fps"`` (see :func:`~pointabstract.data.datasets.sampling.point_indices`).
        transform: ``(sample, rng) -> sample`` applied after loading.
        seed: base seed of the per-sample generators.
        use_normals: also return ``"normal"`` (normal layout, or HDF5 files with ``normal``).
        layout: force ``"normal"``, ``"v0"`` or ``"hdf5"`` instead of detecting.
        undersized: a shape with fewer than ``num_points`` points raises (``"error"``) or has
            points drawn again (``"repeat"``, the PointNet++ loader's behaviour).

    Attributes:
        layout, folder: the layout read and the folder holding it.
        categories: (S,) int64 category of each sample (index into SHAPENET_PART).
        category_ids: the categories kept; ``sources``: the file of each sample.
    """

    def __init__(self, root: str | Path, split: str = "train", *, categories=None,
                 num_points: int | None = 2048, sampling: str = "random", transform=None, seed: int = 0,
                 use_normals: bool = False, layout: str | None = None, undersized: str = "error"):
        super().__init__(transform=transform, seed=seed)
        V.check_choice("split", split, PART_SPLITS)
        check_sampling(sampling, num_points, undersized)
        self.split, self.num_points, self.sampling = split, num_points, sampling
        self.use_normals, self.undersized = use_normals, undersized
        self.category_ids = resolve_categories(categories)
        self.layout, self.folder = detect_part_layout(root, layout=layout)
        if use_normals and self.layout == "v0":
            raise ValueError(f"{self.folder}: use_normals=True but the v0 layout has no normals")
        self._pos = self._normal = self._part = None
        if self.layout == "hdf5":
            self._read_hdf5()
        else:
            self._read_lists()

    # -- layouts -------------------------------------------------------------------------------
    def _split_names(self) -> tuple[str, ...]:
        return ("train", "val") if self.split == "trainval" else (self.split,)

    def _read_lists(self) -> None:
        synsets = _read_category_table(self.folder / "synsetoffset2category.txt")
        categories, files, seen = [], [], set()
        for split in self._split_names():
            listing = self.folder / "train_test_split" / f"shuffled_{split}_file_list.json"
            try:
                entries = json.loads(listing.read_text())
            except (OSError, ValueError) as err:
                raise ValueError(f"{listing}: cannot read the split list ({err})") from None
            if not isinstance(entries, list):
                raise ValueError(f"{listing}: expected a JSON list of 'shape_data/<synset>/<token>'")
            for number, entry in enumerate(entries):
                match = re.fullmatch(r"(?:.*/)?(\w+)/([^/]+)", str(entry))
                if match is None or match.group(1) not in synsets:
                    raise ValueError(f"{listing}: entry {number} {entry!r}: unknown synset (not in "
                                     "synsetoffset2category.txt)")
                if entry in seen:
                    raise ValueError(f"{listing}: entry {number} {entry!r} is listed twice")
                seen.add(entry)
                category = synsets[match.group(1)]
                if category not in self.category_ids:
                    continue  # a category the caller did not ask for
                synset, token = match.groups()
                paths = ((self.folder / synset / f"{token}.txt",) if self.layout == "normal" else
                         (self.folder / synset / "points" / f"{token}.pts",
                          self.folder / synset / "points_label" / f"{token}.seg"))
                for path in paths:
                    if not path.is_file():
                        raise ValueError(f"{listing}: entry {number} {entry!r}: file {path} not found")
                categories.append(category)
                files.append(paths)
        self.categories = np.array(categories, dtype=np.int64)
        self._files = files
        self.sources = [str(f[0]) for f in files]

    def _read_hdf5(self) -> None:
        synsets = list(_read_category_table(self.folder / "all_object_categories.txt").values())
        pos, normal, part, categories, self.sources = [], [], [], [], []
        for split in self._split_names():
            pattern = re.compile(rf"ply_data_{split}_?\d*\.h5")
            files = sorted((f for f in self.folder.glob("ply_data_*.h5") if pattern.fullmatch(f.name)),
                           key=lambda f: int(re.sub(r"\D", "", f.stem) or 0))
            if not files:
                raise ValueError(f"{self.folder}: no ply_data_{split}*.h5 file (found "
                                 f"{list_folder(self.folder)})")
            for path in files:
                arrays = read_h5(path, required={"data": (None, None, 3), "label": (None, 1),
                                                 "pid": (None, None)}, optional={"normal": (None, None, 3)})
                check_whole(str(path), arrays["label"][:, 0], name="labels")
                check_whole(str(path), arrays["pid"], name="part ids")
                data, label, pid = arrays["data"], arrays["label"][:, 0].astype(np.int64), arrays["pid"]
                if pid.shape != data.shape[:2]:
                    raise ValueError(f"{path}: 'pid' has shape {pid.shape}, expected {data.shape[:2]}")
                bad = np.flatnonzero((label < 0) | (label >= len(synsets)))
                if len(bad):
                    raise ValueError(f"{path}: label {label[bad[0]]} of sample {bad[0]} is outside "
                                     f"[0, {len(synsets)}) (all_object_categories.txt)")
                category = np.array(synsets)[label]
                check_finite(str(path), data, name="point", unit="sample")
                for s in np.flatnonzero(~self._check_pid(pid, category)):
                    check_parts(f"{path} sample {s}", pid[s], category=int(category[s]))
                keep = np.flatnonzero(np.isin(category, self.category_ids))
                if self.use_normals:
                    if "normal" not in arrays:
                        raise ValueError(f"{path}: use_normals=True but there is no dataset 'normal'")
                    check_finite(str(path), arrays["normal"], name="normal", unit="sample")
                    normal.append(arrays["normal"][keep].astype(np.float32))
                pos.append(data[keep].astype(np.float32))
                part.append(pid[keep].astype(np.int64))
                categories.append(category[keep])
                self.sources += [f"{path} sample {i}" for i in keep]
        self._pos, self._part = np.concatenate(pos), np.concatenate(part)
        self._normal = np.concatenate(normal) if self.use_normals else None
        self.categories = np.concatenate(categories).astype(np.int64)

    @staticmethod
    def _check_pid(pid: np.ndarray, category: np.ndarray) -> np.ndarray:
        """(S,) True where every part id of the sample is inside its category's range."""
        return ((pid >= _LO[category][:, None]) & (pid <= _HI[category][:, None])).all(axis=1)

    def _load_file(self, index: int) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
        category, paths = int(self.categories[index]), self._files[index]
        table, local = (_loadtxt(paths[0], np.float32, 2),
                        _loadtxt(paths[1], np.int64, 1) if self.layout == "v0" else None)
        source = str(paths[0])
        if self.layout == "normal":
            check_columns(source, table, columns=7, what="x y z nx ny nz part")
            check_finite(source, table, name="value", unit="line", first=1)
            check_whole(source, table[:, 6], name="part ids", unit="line", first=1)
            part = table[:, 6].astype(np.int64)
            check_parts(source, part, category=category, unit="line", first=1)
            return table[:, :3], table[:, 3:6], part
        check_columns(source, table, columns=3, what="x y z")
        check_finite(source, table, name="value", unit="line", first=1)
        if len(local) != len(table):
            raise ValueError(f"{paths[1]}: {len(local)} labels for the {len(table)} points of {source}")
        parts = np.array(SHAPENET_PART[category].parts)
        bad = np.flatnonzero((local < 1) | (local > len(parts)))
        if len(bad):
            raise ValueError(f"{paths[1]}: local part id {local[bad[0]]} at line {bad[0] + 1} is outside "
                             f"1..{len(parts)} ({SHAPENET_PART[category].name})")
        return table[:, :3], None, parts[local - 1]

    # -- samples -------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.categories)

    def load(self, index: int, rng: np.random.Generator) -> dict:
        if self._pos is not None:
            pos, part = self._pos[index], self._part[index]
            normal = self._normal[index] if self._normal is not None else None
        else:
            pos, normal, part = self._load_file(index)
        idx = point_indices(len(pos), self.num_points, sampling=self.sampling, rng=rng, pos=pos,
                            source=self.sources[index], undersized=self.undersized)
        sample = {"pos": np.ascontiguousarray(pos[idx], dtype=np.float32),
                  "part": np.ascontiguousarray(part[idx], dtype=np.int64),
                  "category": int(self.categories[index])}
        if self.use_normals:
            sample["normal"] = np.ascontiguousarray(normal[idx], dtype=np.float32)
        return sample
