"""A folder of the user's own shapes, one sub-folder per class: ``data.dataset=folder``.

Layouts (class names are the folder names, any names; labels follow their sorted order)::

    ROOT/<class>/<files>               any depth below the class folder; split by the seeded
                                       rule below
    ROOT/<class>/{train,test}/<files>  the split as given by the folders
    ROOT/{train,test}/<class>/<files>  the same, split folders first
    ROOT/{train,test}.txt + ROOT/<class>/<files>
                                       the split as listed: one path per line, relative to
                                       ROOT (``chair/0001.obj``); files listed in neither are
                                       left out and counted in the notes

Files: any type :mod:`pointabstract.data.files` reads (PLY, OFF, OBJ, STL, PCD, XYZ / TXT /
CSV, NPY / NPZ), in any mix. Names starting with ``.`` are skipped.

Seeded split (no split folders or lists): within each class the files are ordered by the sha1 of
``"<seed>:<path relative to ROOT>"`` and the first ``test_fraction * n`` (rounded half up) go
to test, at least one and at most n - 1 when the class has two files or more (a class of one file
trains only). Each class is split alone (stratified); a file's rank depends only on its path
and the seed, so adding a file to a class moves at most one of its other files across the split.

A split, once made, is kept: a run records it (``split_record``, written by the trainer to
``<log.out_dir>/split.json``) and ``eval`` / ``--resume`` give it back (``split_file=``), so
files added later never move into train or test (:mod:`.folder_split`).

Every file is sampled once into a cache outside ROOT (:mod:`.folder_cache`): meshes by area,
large clouds by farthest point sampling, to ``points_per_shape`` points.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ... import _validate as V
from .base import LayoutNotFoundError, PointDataset
from .folder_split import read_split_record, reuse_split, split_of, split_record
from .folders import list_folder, read_names
from .sampling import check_sampling, point_indices

__all__ = ["FolderLayout", "ShapeFolder", "describe_folder", "folder_hint", "scan_folder", "split_of"]

_SPLITS = ("train", "test")


@dataclass
class FolderLayout:
    """What :func:`scan_folder` found: the layout kind, the classes, each split's files and notes."""

    kind: str  # "seeded split" | "class/split folders" | "split/class folders" | "split lists"
    classes: tuple[str, ...]
    files: dict[str, list[tuple[Path, int]]]  # split -> (file, label), sorted by path
    notes: list[str] = field(default_factory=list)


def _shape_files(folder: Path) -> list[Path]:
    from ..files import SUPPORTED_SUFFIXES

    return sorted(p for p in folder.rglob("*") if p.suffix.lower() in SUPPORTED_SUFFIXES and p.is_file()
                  and not any(part.startswith(".") for part in p.relative_to(folder).parts))


def _subfolders(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))


def _labelled(groups: dict[str, list[Path]], classes: list[str]) -> list[tuple[Path, int]]:
    return [(f, classes.index(name)) for name in classes for f in groups.get(name, [])]


def _split_first(root: Path) -> FolderLayout:
    """``ROOT/{train,test}/<class>/<files>``."""
    classes = sorted({c.name for s in _SPLITS if (root / s).is_dir() for c in _subfolders(root / s)})
    files = {s: _labelled({c: _shape_files(root / s / c) for c in classes if (root / s / c).is_dir()},
                          classes) for s in _SPLITS}
    return FolderLayout("split/class folders", tuple(classes), files)


def _class_first(root: Path, class_dirs: list[Path]) -> FolderLayout:
    """``ROOT/<class>/{train,test}/<files>``: every class folder must have the split folders."""
    without = [c.name for c in class_dirs if not any((c / s).is_dir() for s in _SPLITS)]
    if without:
        raise ValueError(f"{root}: class folder {without[0]!r} has no train/ or test/ folder while others "
                         "have: give every class folder train/ and test/, or none (a seeded split is made)")
    classes = [c.name for c in class_dirs]
    files = {s: _labelled({c: _shape_files(root / c / s) for c in classes if (root / c / s).is_dir()},
                          classes) for s in _SPLITS}
    return FolderLayout("class/split folders", tuple(classes), files)


def _listed(root: Path, groups: dict[str, list[Path]], classes: list[str]) -> FolderLayout:
    """``ROOT/{train,test}.txt`` lists of paths relative to ROOT."""
    known = {f.relative_to(root).as_posix(): (f, classes.index(c)) for c, fs in groups.items() for f in fs}
    files, seen = {}, {}
    for split in _SPLITS:
        listing = root / f"{split}.txt"
        files[split] = []
        for number, name in enumerate(read_names(listing), start=1):
            name = name.replace("\\", "/").removeprefix("./")
            if name not in known:
                raise ValueError(f"{listing}: entry {number} {name!r}: no such shape file under {root} "
                                 "(paths are relative to the data folder, e.g. chair/0001.obj)")
            if name in seen:
                raise ValueError(f"{listing}: entry {number} {name!r} is also listed in {seen[name]}")
            seen[name] = listing.name
            files[split].append(known[name])
    left = len(known) - len(seen)
    notes = [f"{left} shape file(s) listed in neither train.txt nor test.txt: left out"] if left else []
    return FolderLayout("split lists", tuple(classes), {s: sorted(v) for s, v in files.items()}, notes)


def scan_folder(root: str | Path) -> FolderLayout:
    """Find the classes and files of a folder of shapes (layouts in the module docstring); the
    seeded split is not applied here (:func:`split_of`).

    Raises:
        LayoutNotFoundError: ``root`` is not a folder or has no class folder.
        ValueError: naming the folder, for a class folder without shape files, or mixed layouts.
    """
    root = Path(root)
    if not root.is_dir():
        raise LayoutNotFoundError(f"{root}: no such folder (data.dataset=folder reads "
                                  "ROOT/<class>/<shape files>)")
    class_dirs = _subfolders(root)
    names = {c.name for c in class_dirs}
    if names and names <= {"train", "test", "val"} and {"train", "test"} & names:
        layout = _split_first(root)
    elif not class_dirs:
        raise LayoutNotFoundError(f"{root}: no class folders: data.dataset=folder reads ROOT/<class>/<shape "
                                  f"files> (found in {root}: {list_folder(root)})")
    elif any((c / s).is_dir() for c in class_dirs for s in _SPLITS):
        layout = _class_first(root, class_dirs)
    else:
        groups = {c.name: _shape_files(c) for c in class_dirs}
        empty = [c for c in class_dirs if not groups[c.name]]
        if empty:
            raise ValueError(f"{empty[0]}: class folder without any shape file ({_suffixes()}); "
                             f"it holds: {list_folder(empty[0], limit=8)}")
        classes = sorted(groups)
        if (root / "train.txt").is_file() or (root / "test.txt").is_file():
            return _listed(root, groups, classes)
        return FolderLayout("seeded split", tuple(classes), {"all": _labelled(groups, classes)})
    for split in _SPLITS:
        if not layout.files[split]:
            raise ValueError(f"{root}: no {split} shape file ({_suffixes()}) in the {layout.kind} layout")
    return layout


def _suffixes() -> str:
    from ..files import SUPPORTED_SUFFIXES

    return " ".join(SUPPORTED_SUFFIXES)


def folder_hint(root: str | Path) -> str:
    """A line suggesting ``data.dataset=folder`` when ``root`` holds class folders of shape
    files (``""`` otherwise); the ModelNet layout errors end with it."""
    root = Path(root)
    try:
        classes = [c.name for c in _subfolders(root) if _has_shape(c)]
    except OSError:
        return ""
    if not classes:
        return ""
    shown = ", ".join(classes[:5]) + (", ..." if len(classes) > 5 else "")
    return (f"\n{root} holds {len(classes)} class folder(s) of shape files ({shown}): to train on your own "
            "shapes, use data.dataset=folder")


def _has_shape(folder: Path) -> bool:
    from ..files import SUPPORTED_SUFFIXES

    return any(p.suffix.lower() in SUPPORTED_SUFFIXES and p.is_file() for p in folder.rglob("*"))


class ShapeFolder(PointDataset):
    """A folder of the user's own shapes in class sub-folders (layouts and split in the module
    docstring). Samples are ``{"pos": (N, 3), "label": int, "normal": (N, 3) (use_normals)}``.

    Args:
        root: the data folder ROOT.
        split: ``"train"`` or ``"test"``.
        num_points: N points per sample (a shape kept with fewer points gets some repeated).
        sampling: how N of the cached points are picked (:func:`point_indices`).
        transform: ``(sample, rng) -> sample`` applied after loading.
        seed: seeds the split and the surface samples.
        use_normals: also return ``"normal"`` (every shape must have normals: meshes do).
        test_fraction: share of each class held out by the seeded split.
        points_per_shape: P points cached per shape (at least ``num_points``).
        progress: a progress bar while sampling new files.
        split_file: the split a run recorded (its ``split.json``), reused exactly instead of
            making one: its files with its labels; files found now that it does not list are left
            out (``new_files``), and a listed file that is gone is a ValueError naming it.

    Attributes:
        classes, labels, sources: class names, (S,) labels, the file of each sample.
        layout: the :class:`FolderLayout`; cache: the cache folder.
        split_file: the recorded split given, or None; split_record: the split as a run records
            it (JSON-ready dict); new_files: files left out because the recorded split predates them.
    """

    def __init__(self, root: str | Path, split: str = "train", *, num_points: int | None = 1024,
                 sampling: str = "first", transform=None, seed: int = 0, use_normals: bool = False,
                 test_fraction: float = 0.2, points_per_shape: int = 2048, progress: bool = True,
                 split_file: str | Path | None = None):
        from .folder_cache import cache_folder, prepare_samples

        super().__init__(transform=transform, seed=seed)
        V.check_choice("split", split, _SPLITS)
        check_sampling(sampling, num_points)
        self.root, self.split, self.num_points, self.sampling = Path(root), split, num_points, sampling
        self.use_normals = use_normals
        self.cache = cache_folder(self.root)
        self.layout = scan_folder(self.root)
        self.split_file = None if split_file is None else Path(split_file)
        self.new_files: list[Path] = []
        if self.split_file is not None:
            self.split_record = read_split_record(self.split_file)
            splits, self.new_files = reuse_split(self.layout, self.root, self.split_record,
                                                 where=self.split_file)
            self.classes: tuple[str, ...] = tuple(self.split_record["classes"])
        else:
            splits = split_of(self.layout, self.root, seed=seed, test_fraction=test_fraction)
            self.classes = self.layout.classes
            self.split_record = split_record(self.root, splits, self.classes, kind=self.layout.kind,
                                             seed=seed, test_fraction=test_fraction)
        files = [f for f, _ in splits[split]]
        self.labels = np.array([label for _, label in splits[split]], dtype=np.int64)
        self.sources = [str(f) for f in files]
        points = max(points_per_shape, num_points or 0)
        self._entries = prepare_samples(files, self.cache, points=points, seed=seed, progress=progress,
                                        what=split)
        if use_normals:
            self._check_normals()

    def _check_normals(self) -> None:
        for entry, source in zip(self._entries, self.sources):
            with np.load(entry) as arrays:
                if "normal" not in arrays.files:
                    raise ValueError(f"{source}: data.use_normals=true but this point cloud has no normals")

    def __len__(self) -> int:
        return len(self.labels)

    def load(self, index: int, rng: np.random.Generator) -> dict:
        with np.load(self._entries[index]) as arrays:
            pos = arrays["pos"]
            normal = arrays["normal"] if self.use_normals else None
        idx = point_indices(len(pos), self.num_points, sampling=self.sampling, rng=rng, pos=pos,
                            source=self.sources[index], undersized="repeat")
        sample = {"pos": np.ascontiguousarray(pos[idx]), "label": int(self.labels[index])}
        if normal is not None:
            sample["normal"] = np.ascontiguousarray(normal[idx])
        return sample


def describe_folder(root: str | Path, *, seed: int = 0, test_fraction: float = 0.2) -> dict:
    """What ``data info`` says about a folder of shapes, without sampling anything.

    Returns:
        ``{"layout", "classes", "counts": {split: {class: n}}, "types": {suffix: n}, "files", "cache",
        "notes"}``.
    """
    from .folder_cache import cache_folder

    root = Path(root)
    layout = scan_folder(root)
    splits = split_of(layout, root, seed=seed, test_fraction=test_fraction)
    counts = {s: {c: sum(1 for _, lab in splits[s] if lab == i) for i, c in enumerate(layout.classes)}
              for s in _SPLITS}
    types: dict[str, int] = {}
    for f, _ in splits["train"] + splits["test"]:
        types[f.suffix.lower()] = types.get(f.suffix.lower(), 0) + 1
    return {"layout": layout.kind, "classes": layout.classes, "counts": counts,
            "types": dict(sorted(types.items())), "files": [f for s in _SPLITS for f, _ in splits[s]],
            "cache": cache_folder(root), "notes": layout.notes}
