"""ShapeNetCore point clouds for reconstruction (autoencoders): no labels besides the category."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ... import _validate as V
from ..categories import SHAPENET_CORE, SHAPENET_CORE13, SHAPENET_PART, resolve_categories
from .base import LayoutNotFoundError, PointDataset
from .folders import list_folder
from .ply import read_ply_points
from .sampling import check_sampling, point_indices
from .shapenet_part import PART_LAYOUTS, ShapeNetPart, detect_part_layout

__all__ = ["CORE_LAYOUTS", "ShapeNetCore", "find_ply_folder"]

CORE_LAYOUTS = ("ply", *PART_LAYOUTS)
_PLY_FOLDERS = ("customShapeNet", "shapenet_core13/customShapeNet")
_CORE_OF_SYNSET = {synset: i for i, (_, synset) in enumerate(SHAPENET_CORE)}


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
    random without replacement (seeded; ``sampling`` to change it). ``category`` is always an
    index into :data:`~pointabstract.data.categories.SHAPENET_CORE` (the 13 ShapeNetCore13
    categories first, then the other ShapeNetPart ones), whatever the layout, and
    ``category_names`` is that table's names, so a per-category table never mixes label spaces.
    Two sources:

    - ``layout="ply"``: the ShapeNetCore13 point clouds of AtlasNet (Groueix et al. 2018), as
      used by 3D-PointCapsNet (Zhao et al. 2019); ``category`` < 13 equals the index into
      SHAPENET_CORE13::

        root/  (or root/customShapeNet/, root/shapenet_core13/customShapeNet/)
            <synset>/ply/<token>.points.ply     PLY point cloud (ascii or binary) with x, y, z

      Split: per category, the first 80 % of the sorted file names are ``"train"``, the rest
      ``"test"`` (AtlasNet's rule; its loader also skips the first training file, we keep it).
    - a ShapeNetPart layout (see :class:`~pointabstract.data.ShapeNetPart`): its points
      without part labels, its splits; the ShapeNetPart category index of every sample is kept
      in the attribute ``part_categories``.

    Licence: ShapeNet terms of use (research / non-commercial). Errors name the file.

    Args:
        root: the folder holding a layout.
        split: ``"train"`` / ``"test"`` (ply), or a ShapeNetPart split.
        categories: None (all the layout has) or names / synsets / SHAPENET_CORE indices.
        num_points: N points per sample (None: all stored points).
        sampling: ``"random"`` (default), ``"first"`` or ``"fps"``.
        transform, seed: as for every :class:`~pointabstract.data.PointDataset`.
        layout: ``"ply"`` or a ShapeNetPart layout name; None detects (``"ply"`` first).
        undersized: a cloud with fewer than N points raises (``"error"``) or repeats points.

    Attributes:
        layout, folder: the layout read and its folder.
        categories: (S,) int64 SHAPENET_CORE index of each sample; ``sources``: its file.
        category_names: the names of SHAPENET_CORE (index = ``category``).
        part_categories: (S,) int64 SHAPENET_PART index of each sample (ShapeNetPart layouts
            only; None for ``"ply"``).
    """

    category_names = tuple(c.name for c in SHAPENET_CORE)

    def __init__(self, root: str | Path, split: str = "train", *, categories=None,
                 num_points: int | None = 2048, sampling: str = "random", transform=None, seed: int = 0,
                 layout: str | None = None, undersized: str = "error"):
        super().__init__(transform=transform, seed=seed)
        V.check_choice("layout", layout, CORE_LAYOUTS, allow_none=True)
        check_sampling(sampling, num_points, undersized)
        wanted = None if categories is None else resolve_categories(categories, SHAPENET_CORE)
        root = Path(root)
        folder = find_ply_folder(root) if layout in (None, "ply") else None
        self._part, self.part_categories = None, None
        if folder is None and layout == "ply":
            raise LayoutNotFoundError(f"no ShapeNetCore13 PLY layout (<synset>/ply/*.ply) found under "
                                      f"{root}, in it: {list_folder(root)}")
        if folder is None:
            try:
                detect_part_layout(root, layout=layout)
            except ValueError as err:
                raise LayoutNotFoundError(
                    f"{err}\n(and no ShapeNetCore13 PLY layout <synset>/ply/*.ply)") from None
            self._part = ShapeNetPart(root, split, categories=self._part_selection(wanted),
                                      num_points=num_points, sampling=sampling, seed=seed, layout=layout,
                                      undersized=undersized)
            self.layout, self.folder, self.sources = self._part.layout, self._part.folder, self._part.sources
            self.part_categories = self._part.categories
            to_core = np.array([_CORE_OF_SYNSET[c.synset] for c in SHAPENET_PART], dtype=np.int64)
            self.categories = to_core[self.part_categories]
            return
        V.check_choice("split", split, ("train", "test"), note=" for the PLY layout")
        outside = [SHAPENET_CORE[i].name for i in wanted or () if i >= len(SHAPENET_CORE13)]
        if outside:
            raise ValueError(f"categories: {outside} are not ShapeNetCore13 categories (the PLY layout has "
                             f"{[name for name, _ in SHAPENET_CORE13]})")
        self.layout, self.folder, self.split = "ply", folder, split
        self.num_points, self.sampling, self.undersized = num_points, sampling, undersized
        self._read_ply_tree(list(range(len(SHAPENET_CORE13))) if wanted is None else wanted)

    @staticmethod
    def _part_selection(wanted: list[int] | None) -> list[int] | None:
        """SHAPENET_CORE indices -> SHAPENET_PART indices (ValueError for one ShapeNetPart lacks)."""
        if wanted is None:
            return None
        of_synset = {c.synset: i for i, c in enumerate(SHAPENET_PART)}
        outside = [SHAPENET_CORE[i].name for i in wanted if SHAPENET_CORE[i].synset not in of_synset]
        if outside:
            raise ValueError(f"categories: {outside} are not ShapeNetPart categories (the ShapeNetPart "
                             f"layouts have {[c.name for c in SHAPENET_PART]})")
        return [of_synset[SHAPENET_CORE[i].synset] for i in wanted]

    def _read_ply_tree(self, wanted: list[int]) -> None:
        synsets = {synset: i for i, (_, synset) in enumerate(SHAPENET_CORE13)}  # = SHAPENET_CORE index
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
            return {"pos": sample["pos"], "category": int(self.categories[index])}
        pos = read_ply_points(self._files[index])
        idx = point_indices(len(pos), self.num_points, sampling=self.sampling, rng=rng, pos=pos,
                            source=self.sources[index], undersized=self.undersized)
        return {"pos": np.ascontiguousarray(pos[idx]), "category": int(self.categories[index])}
