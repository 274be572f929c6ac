"""The class and part tables shared by loaders, metrics, the synthetic data and the viewer.

ShapeNetPart (Yi et al. 2016): 16 categories, 50 parts with global ids 0-49; every category
owns a contiguous range of part ids. The part names are descriptive (the released files only
carry ids); the id ranges are the ones every ShapeNetPart codebase uses.
"""

from __future__ import annotations

from dataclasses import dataclass


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


def part_range(category: str | int) -> tuple[int, ...]:
    """Global part ids of a category given by name, synset or index into SHAPENET_PART."""
    if isinstance(category, int):
        return SHAPENET_PART[category].parts
    found = CATEGORY_BY_NAME.get(category) or CATEGORY_BY_SYNSET.get(category)
    if found is None:
        raise ValueError(f"unknown ShapeNetPart category {category!r}; choose from "
                         f"{[c.name for c in SHAPENET_PART]}")
    return found.parts


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
