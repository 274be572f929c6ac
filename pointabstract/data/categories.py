"""Every class and category table of the package, and the one resolver that looks entries up.

Tables (a tuple each; an entry's index in its table is the integer label the loaders return):

- :data:`SHAPENET_PART`: the 16 ShapeNetPart categories (Yi et al. 2016) with their global
  part ids 0-49; every category owns a contiguous range. The part names are descriptive (the
  released files only carry ids); the id ranges are the ones every ShapeNetPart codebase uses.
- :data:`SHAPENET_CORE13`: the 13 ShapeNetCore categories of 3D-R2N2 / AtlasNet /
  3D-PointCapsNet, ordered by synset.
- :data:`SHAPENET_CORE`: every ShapeNet category a loader here knows, the 13 of
  SHAPENET_CORE13 first (same indices) then the ShapeNetPart categories not among them. This
  is the label space of :class:`~pointabstract.data.ShapeNetCore`'s ``category`` in every
  layout, so per-category tables never mix two label spaces.
- :data:`MODELNET40`, :data:`MODELNET10`: class names, label = index.

:func:`resolve_category` is the only lookup: an entry is found by its index (an int in range),
its name (any letter case) or its synset; anything else is an error naming the table and the
choices. :func:`resolve_categories` does the same for a selection (None: all).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from .. import _validate as V

__all__ = [
    "CATEGORY_BY_NAME", "CATEGORY_BY_SYNSET", "CATEGORY_OF_PART", "MODELNET10", "MODELNET40",
    "NUM_PARTS", "SHAPENET_CORE", "SHAPENET_CORE13", "SHAPENET_PART", "CoreCategory", "PartCategory",
    "part_range", "resolve_categories", "resolve_category",
]


@dataclass(frozen=True)
class PartCategory:
    """One ShapeNetPart category.

    Attributes:
        name: category name as in ``synsetoffset2category.txt`` (e.g. ``"Airplane"``).
        synset: ShapeNet synset id, the folder name on disk (e.g. ``"02691156"``).
        parts: global part ids owned by the category, ascending.
        part_names: one descriptive name per part id.
    """

    name: str
    synset: str
    parts: tuple[int, ...]
    part_names: tuple[str, ...]


class CoreCategory(NamedTuple):
    """One ShapeNetCore category: ``(name, synset)`` (unpacks like a pair)."""

    name: str
    synset: str


SHAPENET_PART: tuple[PartCategory, ...] = (
    PartCategory("Airplane", "02691156", (0, 1, 2, 3), ("body", "wing", "tail", "engine")),
    PartCategory("Bag", "02773838", (4, 5), ("handle", "body")),
    PartCategory("Cap", "02954340", (6, 7), ("panel", "peak")),
    PartCategory("Car", "02958343", (8, 9, 10, 11), ("roof", "hood", "wheel", "body")),
    PartCategory("Chair", "03001627", (12, 13, 14, 15), ("back", "seat", "leg", "arm")),
    PartCategory("Earphone", "03261776", (16, 17, 18), ("earcup", "headband", "cord")),
    PartCategory("Guitar", "03467517", (19, 20, 21), ("head", "neck", "body")),
    PartCategory("Knife", "03624134", (22, 23), ("blade", "handle")),
    PartCategory("Lamp", "03636649", (24, 25, 26, 27), ("base", "shade", "canopy", "pole")),
    PartCategory("Laptop", "03642806", (28, 29), ("keyboard", "screen")),
    PartCategory("Motorbike", "03790512", (30, 31, 32, 33, 34, 35),
                 ("tank", "seat", "wheel", "handle", "light", "frame")),
    PartCategory("Mug", "03797390", (36, 37), ("handle", "body")),
    PartCategory("Pistol", "03948459", (38, 39, 40), ("barrel", "grip", "trigger")),
    PartCategory("Rocket", "04099429", (41, 42, 43), ("body", "fin", "nose")),
    PartCategory("Skateboard", "04225987", (44, 45, 46), ("wheel", "deck", "truck")),
    PartCategory("Table", "04379243", (47, 48, 49), ("top", "leg", "support")),
)
NUM_PARTS = 50

CATEGORY_BY_NAME = {c.name: c for c in SHAPENET_PART}
CATEGORY_BY_SYNSET = {c.synset: c for c in SHAPENET_PART}
CATEGORY_OF_PART = {p: i for i, c in enumerate(SHAPENET_PART) for p in c.parts}

SHAPENET_CORE13: tuple[CoreCategory, ...] = tuple(CoreCategory(*c) for c in (
    ("airplane", "02691156"), ("bench", "02828884"), ("cabinet", "02933112"), ("car", "02958343"),
    ("chair", "03001627"), ("display", "03211117"), ("lamp", "03636649"), ("loudspeaker", "03691459"),
    ("rifle", "04090263"), ("sofa", "04256520"), ("table", "04379243"), ("telephone", "04401088"),
    ("watercraft", "04530566"),
))
SHAPENET_CORE: tuple[CoreCategory, ...] = SHAPENET_CORE13 + tuple(
    CoreCategory(c.name.lower(), c.synset) for c in SHAPENET_PART
    if c.synset not in {s for _, s in SHAPENET_CORE13})

# ModelNet40 (Wu et al. 2015), alphabetical as in shape_names.txt; label = index.
MODELNET40: tuple[str, ...] = (
    "airplane", "bathtub", "bed", "bench", "bookshelf", "bottle", "bowl", "car", "chair", "cone",
    "cup", "curtain", "desk", "door", "dresser", "flower_pot", "glass_box", "guitar", "keyboard",
    "lamp", "laptop", "mantel", "monitor", "night_stand", "person", "piano", "plant", "radio",
    "range_hood", "sink", "sofa", "stairs", "stool", "table", "tent", "toilet", "tv_stand", "vase",
    "wardrobe", "xbox",
)
# ModelNet10: the 10-class subset, labels re-numbered 0-9 in this order.
MODELNET10: tuple[str, ...] = (
    "bathtub", "bed", "chair", "desk", "dresser", "monitor", "night_stand", "sofa", "table", "toilet",
)

_TABLE_NAMES = {id(SHAPENET_PART): "ShapeNetPart", id(SHAPENET_CORE13): "ShapeNetCore13",
                id(SHAPENET_CORE): "ShapeNetCore", id(MODELNET40): "ModelNet40", id(MODELNET10): "ModelNet10"}


def _names(table) -> list[str]:
    return [entry if isinstance(entry, str) else entry.name for entry in table]


def resolve_category(category, table=SHAPENET_PART, *, argument: str = "category") -> int:
    """Index into ``table`` of one entry given by index, name (any letter case) or synset.

    Args:
        category: an int index in ``[0, len(table))``, a name or a ShapeNet synset id.
        table: one of this module's tables (entries with ``name``/``synset``, or plain names).
        argument: the argument name the error messages use.

    Raises:
        TypeError: for anything but an int or a str (bool included).
        ValueError: naming the table and its choices, for an unknown entry or an index out of range.
    """
    label = _TABLE_NAMES.get(id(table), "category")
    if isinstance(category, (bool, np.bool_)) or not isinstance(category, (int, np.integer, str)):
        raise TypeError(f"{argument} must be an int index, a name or a synset, got {category!r}")
    if not isinstance(category, str):
        return V.check_int_in(argument, category, 0, len(table) - 1, note=f" (a {label} index)")
    key = category.lower()
    for i, entry in enumerate(table):
        name, synset = (entry, None) if isinstance(entry, str) else (entry.name, entry.synset)
        if name.lower() == key or synset == category:
            return i
    raise ValueError(f"{argument}: unknown {label} category {category!r}; choose from {_names(table)}, "
                     f"their synsets or indices 0-{len(table) - 1}")


def resolve_categories(categories, table=SHAPENET_PART, *, argument: str = "categories") -> list[int]:
    """Sorted unique indices into ``table`` of a selection: None (all), one entry or a list of
    entries, each as :func:`resolve_category` accepts."""
    if categories is None:
        return list(range(len(table)))
    if isinstance(categories, (str, int, np.integer)):
        categories = [categories]
    return sorted({resolve_category(c, table, argument=argument) for c in categories})


def part_range(category) -> tuple[int, ...]:
    """Global part ids of a ShapeNetPart category given by name, synset or index."""
    return SHAPENET_PART[resolve_category(category)].parts
