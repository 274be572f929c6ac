"""ModelNet40 / ModelNet10 shape classification in the three layouts the archives unpack to.

Layouts (detected under ``root`` itself, or under its subfolder with the standard name):

- ``"hdf5"``: PointNet's ``modelnet40_ply_hdf5_2048/`` (2,048 points per shape, y up).
- ``"resampled"``: PointNet++'s ``modelnet40_normal_resampled/`` (10,000 points + normals, y up).
- ``"off"``: the original ``ModelNet40/`` meshes (z up, each in its own units), sampled once
  into an HDF5 cache by :func:`pointabstract.data.datasets.off_cache.prepare_off_cache`.

The ``sampling`` argument is :func:`~pointabstract.data.datasets.sampling.point_indices`, shared
with the ShapeNet loaders (re-exported here with ``SAMPLINGS``, ``list_folder`` and ``read_names``,
where they were first defined).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from ... import _validate as V
from ..categories import MODELNET10, MODELNET40
from .base import LayoutNotFoundError, PointDataset
from .checksums import check_columns, check_finite, check_whole, read_h5
from .folder import folder_hint
from .folders import list_folder, read_names
from .off import find_meshes, sample_mesh
from .off_cache import prepare_off_cache, unknown_class
from .sampling import SAMPLINGS, check_sampling, point_indices

__all__ = ["LAYOUTS", "SAMPLINGS", "ModelNet10", "ModelNet40", "detect_layout", "list_folder",
           "point_indices", "read_names"]

LAYOUTS = ("hdf5", "resampled", "off")
_SPLITS = ("train", "test")


def _h5_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("ply_data_*.h5"))


def _looks_like(layout: str, folder: Path) -> bool:
    if not folder.is_dir():
        return False
    if layout == "hdf5":
        return bool(_h5_files(folder)) and not (folder / "all_object_categories.txt").exists()
    if layout == "resampled":
        return (folder / "modelnet40_shape_names.txt").is_file()
    return bool(find_meshes(folder, "train") or find_meshes(folder, "test"))


def detect_layout(root: str | Path, *, layout: str | None = None,
                  off_folders: tuple[str, ...] = ("ModelNet40",)) -> tuple[str, Path]:
    """Find a ModelNet layout under ``root``: ``(layout name, the folder holding it)``.

    ``root`` itself is tried first, then its subfolders with the standard names; layouts are
    tried in the order of :data:`LAYOUTS` unless ``layout`` forces one.

    Raises:
        ValueError: listing the layouts looked for and what ``root`` contains.
    """
    root = Path(root)
    V.check_choice("layout", layout, LAYOUTS, allow_none=True)
    standard = {"hdf5": ("modelnet40_ply_hdf5_2048",), "resampled": ("modelnet40_normal_resampled",),
                "off": off_folders}
    wanted = LAYOUTS if layout is None else (layout,)
    for candidate in [root] + [root / name for kind in wanted for name in standard[kind]]:
        for kind in wanted:
            if _looks_like(kind, candidate):
                return kind, candidate
    looked = {
        "hdf5": "ply_data_{train,test}*.h5 + shape_names.txt (PointNet HDF5)",
        "resampled": "modelnet40_shape_names.txt + modelnet40_{train,test}.txt + <class>/<id>.txt",
        "off": "<class>/{train,test}/*.off meshes",
    }
    lines = [f"  - {looked[k]}, in {root} or {root}/{'|'.join(standard[k])}" for k in wanted]
    raise LayoutNotFoundError(f"no ModelNet layout found under {root}; looked for:\n" + "\n".join(lines)
                     + f"\nfound in {root}: {list_folder(root)}" + folder_hint(root))


class ModelNet40(PointDataset):
    """ModelNet40: 12,311 CAD models in 40 classes (Wu et al., *3D ShapeNets*, CVPR 2015).

    Source: https://modelnet.cs.princeton.edu (research / non-commercial use). Samples are
    ``{"pos": (N, 3) float32, "label": int, "normal": (N, 3) float32 (with use_normals)}``;
    ``label`` indexes :attr:`classes`. Reads whichever layout :func:`detect_layout` finds::

        root/modelnet40_ply_hdf5_2048/       PointNet (Qi et al. 2017), 9,840 train / 2,468 test
            ply_data_train{0..4}.h5            data (S, 2048, 3) float32, label (S, 1) int,
            ply_data_test{0,1}.h5              optional normal (S, 2048, 3); y is up
            shape_names.txt                    one class per line; label = line index
        root/modelnet40_normal_resampled/    PointNet++ (Qi et al. 2017), 9,843 train / 2,468 test
            modelnet40_shape_names.txt         one class per line; label = line index
            modelnet40_{train,test}.txt        shape ids, e.g. night_stand_0001 (class = id
                                               without its last _NNNN)
            <class>/<id>.txt                   10,000 rows x,y,z,nx,ny,nz; y is up
        root/ModelNet40/                     original meshes, 9,843 train / 2,468 test
            <class>/{train,test}/<id>.off      z is up, each mesh in its own units; sampled
                                               once into an HDF5 cache (mesh_points, cache_dir);
                                               .OFF / .Off extensions are read too

    Coordinates are returned as stored: nothing is rotated to a common up axis or normalised
    (use :mod:`pointabstract.data.transforms`). Every file read is validated (shapes, counts,
    finite values, known class names, labels that are whole numbers inside the class range; an
    HDF5 label 7.5 is refused, 7.0 read as 7); errors name the file. No sample is
    dropped or repeated: a split list naming a missing file is an error. HDF5 files and the
    OFF cache are read into memory at construction; resampled ``.txt`` files are read per
    sample, and with ``sampling="first"`` only their first ``num_points`` rows are read.

    Args:
        root: the folder holding one of the layouts (or the layout folder itself).
        split: ``"train"`` or ``"test"``.
        num_points: N points per sample (<= the points stored; None keeps all of them).
        sampling: how the N points are picked, see :func:`point_indices`.
        transform: ``(sample, rng) -> sample`` applied after loading.
        seed: base seed of the per-sample generators.
        use_normals: also return ``"normal"`` (the layout must have normals).
        layout: force ``"hdf5"``, ``"resampled"`` or ``"off"`` instead of detecting.
        mesh_points: points sampled per mesh into the OFF cache (with ``seed``; area-weighted,
            face normals; see :func:`~pointabstract.data.datasets.off_cache.prepare_off_cache`).
        cache_dir: where the OFF cache is written (default: under ``$POINTABSTRACT_CACHE``, never
            the mesh folder; see :func:`~pointabstract.data.datasets.off_cache.prepare_off_cache`).
        resample_meshes: OFF layout only: sample every mesh afresh at each access (with the
            sample's generator, so per epoch) instead of reading the cache. Slow.
        progress: show a progress bar while building the OFF cache.

    Attributes:
        layout, folder: the layout read and the folder holding it.
        classes: class names; ``labels``: (S,) int64 label of each sample.
        sources: the file (and sample) each sample comes from, as named in errors.
    """

    subset: tuple[str, ...] | None = None  # a class subset, re-numbered in this order
    off_folders: tuple[str, ...] = ("ModelNet40",)

    def __init__(self, root: str | Path, split: str = "train", *, num_points: int | None = 1024,
                 sampling: str = "first", transform=None, seed: int = 0, use_normals: bool = False,
                 layout: str | None = None, mesh_points: int = 2048, cache_dir: str | Path | None = None,
                 resample_meshes: bool = False, progress: bool = True):
        super().__init__(transform=transform, seed=seed)
        V.check_choice("split", split, _SPLITS)
        check_sampling(sampling, num_points)
        self.root, self.split, self.num_points, self.sampling = Path(root), split, num_points, sampling
        self.use_normals, self.resample_meshes, self.mesh_points = use_normals, resample_meshes, mesh_points
        self.layout, self.folder = detect_layout(root, layout=layout, off_folders=self.off_folders)
        self._pos = self._normal = self._files = None
        if self.layout == "hdf5":
            classes, labels, self.sources = self._read_hdf5()
        elif self.layout == "resampled":
            classes, labels, self.sources = self._read_resampled_lists()
        else:
            classes, labels, self.sources = self._read_off(cache_dir, progress)
        self._select_subset(classes, labels)

    # -- layouts -------------------------------------------------------------------------------
    def _read_hdf5(self):
        classes = read_names(self.folder / "shape_names.txt")
        pattern = re.compile(rf"ply_data_{self.split}_?\d*\.h5")
        files = [f for f in _h5_files(self.folder) if pattern.fullmatch(f.name)]
        if not files:
            raise ValueError(f"{self.folder}: no ply_data_{self.split}*.h5 file (found "
                             f"{list_folder(self.folder)})")
        files.sort(key=lambda f: int(re.sub(r"\D", "", f.stem) or 0))
        pos, normal, labels, sources = [], [], [], []
        for path in files:
            arrays = read_h5(path, required={"data": (None, None, 3), "label": (None, None)},
                             optional={"normal": (None, None, 3)} if self.use_normals else None)
            data, label = arrays["data"], arrays["label"]
            if label.shape[1] != 1:
                raise ValueError(f"{path}: dataset 'label' has shape {label.shape}, expected (S, 1)")
            check_finite(str(path), data, name="point", unit="sample")
            if self.use_normals:
                if "normal" not in arrays or arrays["normal"].shape != data.shape:
                    raise ValueError(f"{path}: use_normals=True but no dataset 'normal' of shape "
                                     f"{data.shape} (found {sorted(arrays)})")
                check_finite(str(path), arrays["normal"], name="normal", unit="sample")
                normal.append(arrays["normal"].astype(np.float32))
            check_whole(str(path), label[:, 0], name="labels")
            self._check_labels(path, label[:, 0], len(classes))
            pos.append(data.astype(np.float32))
            labels.append(label[:, 0].astype(np.int64))
            sources += [f"{path} sample {i}" for i in range(len(data))]
        self._pos = np.concatenate(pos)
        self._normal = np.concatenate(normal) if self.use_normals else None
        return classes, np.concatenate(labels), sources

    @staticmethod
    def _check_labels(source, labels: np.ndarray, num_classes: int) -> None:
        bad = np.flatnonzero((labels < 0) | (labels >= num_classes))
        if len(bad):
            raise ValueError(f"{source}: label {labels[bad[0]]} of sample {bad[0]} is outside "
                             f"[0, {num_classes}) (the classes of the shape names file)")

    def _read_resampled_lists(self):
        classes = read_names(self.folder / "modelnet40_shape_names.txt")
        index = {name: i for i, name in enumerate(classes)}
        listing = self.folder / f"modelnet40_{self.split}.txt"
        labels, files = [], []
        for number, shape_id in enumerate(read_names(listing), start=1):
            match = re.fullmatch(r"(.+)_(\d+)", shape_id)
            if match is None or match.group(1) not in index:
                raise ValueError(f"{listing}: entry {number} {shape_id!r}: unknown class "
                                 f"{match.group(1) if match else shape_id!r} (not in "
                                 "modelnet40_shape_names.txt)")
            path = self.folder / match.group(1) / f"{shape_id}.txt"
            if not path.is_file():
                raise ValueError(f"{listing}: entry {number} {shape_id!r}: file {path} not found")
            labels.append(index[match.group(1)])
            files.append(path)
        self._files = files
        return classes, np.array(labels, dtype=np.int64), [str(f) for f in files]

    def _load_resampled(self, path: Path) -> tuple[np.ndarray, np.ndarray]:
        rows = self.num_points if self.sampling == "first" else None
        try:
            table = np.loadtxt(path, delimiter=",", dtype=np.float32, ndmin=2, max_rows=rows)
        except ValueError as err:
            raise ValueError(f"{path}: cannot parse x,y,z,nx,ny,nz rows ({err})") from None
        check_columns(str(path), table, columns=6, what="x,y,z,nx,ny,nz")
        check_finite(str(path), table[:, :6], name="value", unit="line", first=1)
        return table[:, :3], table[:, 3:6]

    def _read_off(self, cache_dir, progress):
        known = MODELNET10 if self.folder.name == "ModelNet10" else MODELNET40
        if self.resample_meshes:
            files = find_meshes(self.folder, self.split)
            classes, labels = list(known), []
            for path in files:
                if path.parents[1].name not in known:
                    raise ValueError(unknown_class(path, self.folder))
                labels.append(known.index(path.parents[1].name))
            self._files = files
            return classes, np.array(labels, dtype=np.int64), [str(f) for f in files]
        cache = prepare_off_cache(self.folder, self.split, classes=known, mesh_points=self.mesh_points,
                                  seed=self.seed, cache_dir=cache_dir, progress=progress)
        shape = (None, self.mesh_points, 3)
        arrays = read_h5(cache, required={"data": shape, "label": (None,), "source": (None,),
                                          **({"normal": shape} if self.use_normals else {})})
        self._pos = arrays["data"]
        self._normal = arrays["normal"] if self.use_normals else None
        sources = [str(self.folder / s.decode()) for s in arrays["source"]]
        return list(known), arrays["label"].astype(np.int64), sources

    def _select_subset(self, classes: list[str], labels: np.ndarray) -> None:
        keep = np.arange(len(labels))
        if self.subset is not None:
            missing = [c for c in self.subset if c not in classes]
            if missing:
                raise ValueError(f"{self.folder}: the class list lacks {missing} of {type(self).__name__}")
            remap = np.array([self.subset.index(c) if c in self.subset else -1 for c in classes])
            keep = np.flatnonzero(remap[labels] >= 0)
            labels, classes = remap[labels[keep]], list(self.subset)
        self.classes: tuple[str, ...] = tuple(classes)
        self.labels: np.ndarray = labels.astype(np.int64)
        self._rows = keep  # row of each sample in the stored arrays / file list
        self.sources = [self.sources[i] for i in keep]

    # -- samples -------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.labels)

    def load(self, index: int, rng: np.random.Generator) -> dict:
        row, source = self._rows[index], self.sources[index]
        if self._pos is not None:
            pos, normal = self._pos[row], self._normal[row] if self._normal is not None else None
        elif self.layout == "resampled":
            pos, normal = self._load_resampled(self._files[row])
        else:
            pos, normal = sample_mesh(self._files[row], self.mesh_points, rng=rng)
        idx = point_indices(len(pos), self.num_points, sampling=self.sampling, rng=rng, pos=pos,
                            source=source)
        sample = {"pos": np.ascontiguousarray(pos[idx], dtype=np.float32), "label": int(self.labels[index])}
        if self.use_normals:
            sample["normal"] = np.ascontiguousarray(normal[idx], dtype=np.float32)
        return sample


class ModelNet10(ModelNet40):
    """ModelNet10: the 10-class subset of ModelNet40, labels 0-9 in ``MODELNET10`` order.

    3,991 train / 908 test shapes. Reads the same layouts as :class:`ModelNet40` (keeping the
    shapes of the 10 classes), and also the original ``ModelNet10/<class>/{train,test}/*.off``
    meshes (source: http://3dvision.princeton.edu/projects/2014/3DShapeNets/ModelNet10.zip),
    which are tried before ``ModelNet40/``. Arguments as for :class:`ModelNet40`.
    """

    subset = MODELNET10
    off_folders = ("ModelNet10", "ModelNet40")
