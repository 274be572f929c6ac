"""Procedural, part-labelled shapes for the 16 ShapeNetPart categories (the synthetic dataset).

Every category has a builder ``build_<name>(rng) -> (vertices (V, 3) float64, faces (F, 3)
int64, face_part (F,) int64)`` that assembles a mesh from primitives (boxes, cylinders, cones,
spheres, capsules, tori from ``trimesh.creation``; lathes, swept tubes and extruded outlines
from :mod:`.shapes_primitives`) with random proportions and optional parts, and labels every
triangle with a **global** ShapeNetPart part id of its category (the table in
:mod:`pointabstract.data.categories`). Axis convention: **y is up** (as in the PointNet ModelNet40
HDF5 files), objects stand on or around y = 0 and face +x (vehicles, knife, pistol, mug
handle) or +z (chair, guitar).

=========== ============================================= =======================
category    parts (global ids)                            optional (some shapes)
=========== ============================================= =======================
Airplane    body 0, wing 1, tail 2, engine 3               engine (0, 2 or 4)
Bag         handle 4, body 5
Cap         panel 6, peak 7
Car         roof 8, hood 9, wheel 10, body 11
Chair       back 12, seat 13, leg 14, arm 15               arm
Earphone    earcup 16, headband 17, cord 18                headband, cord
Guitar      head 19, neck 20, body 21
Knife       blade 22, handle 23
Lamp        base 24, shade 25, canopy 26, pole 27          base, canopy
Laptop      keyboard 28, screen 29
Motorbike   tank 30, seat 31, wheel 32, handle 33,
            light 34, frame 35
Mug         handle 36, body 37
Pistol      barrel 38, grip 39, trigger 40
Rocket      body 41, fin 42, nose 43
Skateboard  wheel 44, deck 45, truck 46
Table       top 47, leg 48, support 49                     support
=========== ============================================= =======================

:func:`build_shape` adds the whole-shape variation: a per-axis scale in [0.85, 1.15] of the
object's own axes and a uniform random rotation about y.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..categories import SHAPENET_PART, resolve_category
from .shapes_furniture import build_chair, build_lamp, build_laptop, build_table
from .shapes_objects import (
    build_bag,
    build_cap,
    build_earphone,
    build_guitar,
    build_knife,
    build_mug,
    build_pistol,
)
from .shapes_primitives import rotation
from .shapes_vehicles import build_airplane, build_car, build_motorbike, build_rocket, build_skateboard

__all__ = [
    "BUILDERS",
    "OPTIONAL_PARTS",
    "build_airplane",
    "build_bag",
    "build_cap",
    "build_car",
    "build_chair",
    "build_earphone",
    "build_guitar",
    "build_knife",
    "build_lamp",
    "build_laptop",
    "build_motorbike",
    "build_mug",
    "build_pistol",
    "build_rocket",
    "build_shape",
    "build_skateboard",
    "build_table",
]

Builder = Callable[[np.random.Generator], tuple[np.ndarray, np.ndarray, np.ndarray]]

# One builder per ShapeNetPart category, in SHAPENET_PART order (index = category label).
BUILDERS: dict[str, Builder] = {
    "Airplane": build_airplane, "Bag": build_bag, "Cap": build_cap, "Car": build_car,
    "Chair": build_chair, "Earphone": build_earphone, "Guitar": build_guitar, "Knife": build_knife,
    "Lamp": build_lamp, "Laptop": build_laptop, "Motorbike": build_motorbike, "Mug": build_mug,
    "Pistol": build_pistol, "Rocket": build_rocket, "Skateboard": build_skateboard, "Table": build_table,
}
assert tuple(BUILDERS) == tuple(c.name for c in SHAPENET_PART)

# Global part ids that only some shapes of a category have; every other part is always there.
OPTIONAL_PARTS: dict[str, tuple[int, ...]] = {
    "Airplane": (3,), "Chair": (15,), "Earphone": (17, 18), "Lamp": (24, 26), "Table": (49,),
}

_SCALE_RANGE = (0.6, 1 / 0.6)


def build_shape(category: int | str, rng: np.random.Generator, *, augment: bool = True):
    """Build one random shape of ``category`` (index, name or synset).

    Args:
        category: which of the 16 ShapeNetPart categories.
        rng: the only source of randomness (same generator state => same mesh).
        augment: apply the per-axis scale and the random rotation about y.

    Returns:
        vertices (V, 3) float64, faces (F, 3) int64 (outward-facing), face_part (F,) int64
        global part ids of the category.
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    vertices, faces, face_part = BUILDERS[SHAPENET_PART[resolve_category(category)].name](rng)
    if augment:
        vertices = vertices * np.exp(rng.uniform(*np.log(_SCALE_RANGE), size=3))
        vertices = vertices @ rotation("y", rng.uniform(0, 2 * np.pi)).T
    return vertices, faces, face_part
