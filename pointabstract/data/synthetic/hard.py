"""The ``hard`` level of the synthetic set: 40 classes told apart by local structure, scan nuisances.

Each class is a *variant* of one of 15 ShapeNetPart categories (its family): classes of a
family share one proportion range and differ in one part or arrangement (engines, armrests,
round vs square top, two vs four wheels, a handle more, ...). Every shape then gets the easy
level's whole-shape variation (per-axis scale, here in [0.75, 1.33], and a random rotation
about y), is sampled into a pool of 6N labelled points, normalised to the unit sphere, and
passes through the scan nuisances of :mod:`.nuisances`. The classification label is the
class index in :data:`HARD_CLASSES`; the part labels are the family's global ShapeNetPart part
ids, so the segmentation layout keeps the ShapeNetPart category of the family as its label.

=====================  ==========  ===========================================
class                  family      what sets it apart
=====================  ==========  ===========================================
airplane_0_engines     Airplane    no engine nacelles
airplane_2_engines     Airplane    two nacelles
airplane_4_engines     Airplane    four nacelles
bag_top_handle         Bag         one arched handle across the top
bag_two_handles        Bag         a handle on each side face (tote)
cap_front_peak         Cap         a visor at the front
hat_round_brim         Cap         a brim all around
car_sedan              Car         cabin in the middle
car_pickup             Car         short front cabin, open bed
car_truck              Car         pickup cabin, bed and a third axle
chair                  Chair       four legs, no arms
armchair               Chair       four legs, armrests
swivel_chair           Chair       five-spoke swivel base, no arms
swivel_armchair        Chair       swivel base, armrests
sled_chair             Chair       two sled runners
headphones             Earphone    cups and headband
headset_cord           Earphone    cups, headband and a cord
guitar                 Guitar      two-lobed body
banjo                  Guitar      round body
knife_pointed          Knife       tapering pointed blade
cleaver                Knife       rectangular blade
lamp_floor             Lamp        base, straight pole, one shade
lamp_desk              Lamp        base, pole with an elbow, tilted shade
lamp_hanging           Lamp        ceiling canopy and cord, no base
lamp_twin              Lamp        base, pole with two arms and two shades
laptop_open            Laptop      screen opened 95-135 degrees
laptop_half_closed     Laptop      screen opened 35-75 degrees
mug                    Mug         one handle
mug_two_handles        Mug         two handles
pistol                 Pistol      one grip
pistol_fore_grip       Pistol      a second grip under the barrel
rocket_3_fins          Rocket      three fins
rocket_4_fins          Rocket      four fins
rocket_boosters        Rocket      four fins and two side boosters
skateboard             Skateboard  four wheels
caster_board           Skateboard  two wheels, one per truck
table_square           Table       square top, four legs
table_round            Table       round top, four legs
table_pedestal         Table       round top on a central column and foot
table_trestle          Table       square top on two end panels and a stretcher
=====================  ==========  ===========================================
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np

from ... import _validate as V
from ..categories import SHAPENET_PART, resolve_category
from .hard_furniture import chair, lamp, laptop, table
from .hard_objects import bag, cap, earphone, guitar, knife, mug, pistol
from .hard_vehicles import airplane, car, rocket, skateboard
from .nuisances import Nuisances, apply_nuisances, normalise_unit_sphere
from .shapes_primitives import rotation
from .surface import sample_surface

__all__ = ["HARD_CLASSES", "HARD_CLASS_NAMES", "ROTATIONS", "HardClass", "random_rotation",
           "sample_hard_shape"]

ROTATIONS = ("up", "so3")
_SCALE_RANGE = (0.75, 1 / 0.75)
_POOL = 6  # pool points per output point


class HardClass:
    """One hard class: its ``name``, its ShapeNetPart ``family`` (index) and its ``build(rng)``."""

    def __init__(self, name: str, family: str, build: Callable):
        self.name, self.family, self.build = name, resolve_category(family), build

    def __repr__(self) -> str:
        return f"HardClass({self.name!r}, {SHAPENET_PART[self.family].name!r})"


HARD_CLASSES: tuple[HardClass, ...] = tuple(HardClass(*c) for c in (
    ("airplane_0_engines", "Airplane", partial(airplane, engines=0)),
    ("airplane_2_engines", "Airplane", partial(airplane, engines=2)),
    ("airplane_4_engines", "Airplane", partial(airplane, engines=4)),
    ("bag_top_handle", "Bag", partial(bag, handles="top")),
    ("bag_two_handles", "Bag", partial(bag, handles="two")),
    ("cap_front_peak", "Cap", partial(cap, brim="front")),
    ("hat_round_brim", "Cap", partial(cap, brim="round")),
    ("car_sedan", "Car", partial(car, kind="sedan")),
    ("car_pickup", "Car", partial(car, kind="pickup")),
    ("car_truck", "Car", partial(car, kind="truck")),
    ("chair", "Chair", partial(chair, arms=False, base="four")),
    ("armchair", "Chair", partial(chair, arms=True, base="four")),
    ("swivel_chair", "Chair", partial(chair, arms=False, base="swivel")),
    ("swivel_armchair", "Chair", partial(chair, arms=True, base="swivel")),
    ("sled_chair", "Chair", partial(chair, arms=False, base="sled")),
    ("headphones", "Earphone", partial(earphone, cord=False)),
    ("headset_cord", "Earphone", partial(earphone, cord=True)),
    ("guitar", "Guitar", partial(guitar, body="figure8")),
    ("banjo", "Guitar", partial(guitar, body="round")),
    ("knife_pointed", "Knife", partial(knife, blade="pointed")),
    ("cleaver", "Knife", partial(knife, blade="square")),
    ("lamp_floor", "Lamp", partial(lamp, kind="floor")),
    ("lamp_desk", "Lamp", partial(lamp, kind="desk")),
    ("lamp_hanging", "Lamp", partial(lamp, kind="hanging")),
    ("lamp_twin", "Lamp", partial(lamp, kind="twin")),
    ("laptop_open", "Laptop", partial(laptop, opening=(95.0, 135.0))),
    ("laptop_half_closed", "Laptop", partial(laptop, opening=(35.0, 75.0))),
    ("mug", "Mug", partial(mug, handles=1)),
    ("mug_two_handles", "Mug", partial(mug, handles=2)),
    ("pistol", "Pistol", partial(pistol, grips=1)),
    ("pistol_fore_grip", "Pistol", partial(pistol, grips=2)),
    ("rocket_3_fins", "Rocket", partial(rocket, fins=3, boosters=False)),
    ("rocket_4_fins", "Rocket", partial(rocket, fins=4, boosters=False)),
    ("rocket_boosters", "Rocket", partial(rocket, fins=4, boosters=True)),
    ("skateboard", "Skateboard", partial(skateboard, wheels=4)),
    ("caster_board", "Skateboard", partial(skateboard, wheels=2)),
    ("table_square", "Table", partial(table, top="square", legs="four")),
    ("table_round", "Table", partial(table, top="round", legs="four")),
    ("table_pedestal", "Table", partial(table, top="round", legs="pedestal")),
    ("table_trestle", "Table", partial(table, top="square", legs="trestle")),
))
HARD_CLASS_NAMES: tuple[str, ...] = tuple(c.name for c in HARD_CLASSES)


def random_rotation(rng: np.random.Generator) -> np.ndarray:
    """A uniform random rotation (3, 3) (QR of a Gaussian matrix, signs fixed, det +1)."""
    q, r = np.linalg.qr(rng.normal(size=(3, 3)))
    q = q * np.sign(np.diag(r))
    if np.linalg.det(q) < 0:
        q[:, 0] = -q[:, 0]
    return q


def sample_hard_shape(label: int, rng: np.random.Generator, *, num_points: int = 2048,
                      nuisances: Nuisances | None = None, rotation_mode: str = "up") -> dict:
    """One random shape of hard class ``label`` as a sample dict.

    Args:
        label: index into :data:`HARD_CLASSES`.
        rng: the only source of randomness.
        num_points: N points returned.
        nuisances: which scan nuisances to apply (None: all, the ``hard`` preset).
        rotation_mode: ``"up"`` (random rotation about y, y stays up) or ``"so3"`` (uniform).

    Returns:
        ``{"pos": (N, 3) float32 in the unit sphere, "normal": (N, 3) float32, "part": (N,)
        int64 global part ids of the family, "label": int, "category": int ShapeNetPart index,
        "source": (N,) int64 index into the pool of 6N surface points (-1: outlier),
        "candidates": the pool indices the nuisances left to draw from, "pool_part": (6N,) int64
        the pool's part ids}`` (see :func:`~.nuisances.apply_nuisances`).
    """
    V.check_int_in("label", label, 0, len(HARD_CLASSES) - 1)
    V.check_int("num_points", num_points, low=1)
    V.check_choice("rotation_mode", rotation_mode, ROTATIONS)
    nuisances = Nuisances() if nuisances is None else nuisances
    if not isinstance(nuisances, Nuisances):
        raise TypeError(f"nuisances must be a Nuisances, got {type(nuisances).__name__}")
    spec = HARD_CLASSES[int(label)]
    vertices, faces, face_part = spec.build(rng)
    vertices = vertices * np.exp(rng.uniform(*np.log(_SCALE_RANGE), size=3))
    turn = rotation("y", rng.uniform(0, 2 * np.pi)) if rotation_mode == "up" else random_rotation(rng)
    vertices = vertices @ turn.T
    pos, normal, part = sample_surface(vertices, faces, _POOL * int(num_points), rng, face_labels=face_part)
    pool = normalise_unit_sphere(pos.astype(np.float64))
    scan = apply_nuisances(pool, normal, part, rng, num_points=int(num_points), nuisances=nuisances)
    return {**scan, "label": int(label), "category": spec.family, "pool_part": part}
