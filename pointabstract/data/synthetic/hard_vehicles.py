"""Vehicle families of the ``hard`` level: airplane, car, rocket, skateboard.

As in :mod:`.hard_furniture`: one proportion range per family, the class-defining structure as
keyword arguments, global ShapeNetPart part ids of the family's category, y up, front at +x.
"""

from __future__ import annotations

import numpy as np

from ..categories import CATEGORY_BY_NAME
from .shapes_primitives import PartMesh, box, capsule, cone, ellipsoid, prism, rod, rotation

__all__ = ["airplane", "car", "rocket", "skateboard"]


def _wing(root_x: float, span: float, chord: float, sweep: float, t: float, *, side: int, y: float = 0.0):
    """A flat tapered wing in the xz plane from the fuselage (z = 0) to z = side * span."""
    outline = np.array([(root_x, 0), (root_x - chord, 0), (root_x - chord * 0.6 - sweep, span),
                        (root_x - sweep, span)])
    v, f = prism(outline, t)  # in the xy plane, thickness along z
    v = v @ rotation("x", side * np.pi / 2).T  # y -> side * z
    v[:, 1] += y
    return v, f


def airplane(rng: np.random.Generator, *, engines: int):
    """Airplane. Parts: body (0) a capsule fuselage; wing (1) two swept wings; tail (2) a fin and
    two stabilisers; engine (3) ``engines`` (0, 2 or 4) nacelles under the wings."""
    body, wing, tail, engine = CATEGORY_BY_NAME["Airplane"].parts
    m = PartMesh()
    length, r = rng.uniform(1.4, 2.0), rng.uniform(0.07, 0.12)
    m.add(body, capsule((-length / 2, 0, 0), (length / 2, 0, 0), r))
    span, chord, sweep = rng.uniform(0.6, 1.0), rng.uniform(0.2, 0.35), rng.uniform(0.0, 0.35)
    root = rng.uniform(0.0, 0.2)
    for side in (-1, 1):
        m.add(wing, _wing(root, span, chord, sweep, 0.025, side=side, y=-r * 0.3))
    ts, tc = span * rng.uniform(0.25, 0.4), chord * rng.uniform(0.5, 0.8)
    for side in (-1, 1):
        m.add(tail, _wing(-length / 2 + tc, ts, tc, tc * 0.3, 0.02, side=side))
    fin = np.array([(-length / 2, 0), (-length / 2 + tc * 1.5, 0), (-length / 2 + tc * 0.3, ts * 1.2),
                    (-length / 2 - 0.05, ts * 1.2)])
    m.add(tail, prism(fin + (0, r * 0.5), 0.02))
    nr, nl = rng.uniform(0.04, 0.07), chord * rng.uniform(0.9, 1.3)
    stations = {0: (), 2: (0.35,), 4: (0.3, 0.65)}[engines]
    for frac in stations:
        for side in (-1, 1):
            x = root - frac * sweep - chord * 0.2
            center = np.array([x, -r * 0.3 - nr * 1.3, side * frac * span])
            m.add(engine, capsule(center - (nl / 2, 0, 0), center + (nl / 2, 0, 0), nr, count=6))
    return m.build()


def car(rng: np.random.Generator, *, kind: str):
    """Car along +x. Parts: body (11) the lower hull; hood (9) the slab in front of the cabin;
    roof (8) the cabin; wheel (10) four wheels (six for ``"truck"``). ``kind``: ``"sedan"``
    (cabin in the middle), ``"pickup"`` (short cabin at the front, open bed behind),
    ``"truck"`` (like pickup, with a second rear axle)."""
    roof, hood, wheel, body = CATEGORY_BY_NAME["Car"].parts
    m = PartMesh()
    length, width = rng.uniform(1.4, 2.0), rng.uniform(0.55, 0.8)
    hull, clear = rng.uniform(0.18, 0.28), rng.uniform(0.08, 0.14)
    wr = rng.uniform(0.11, 0.16)
    m.add(body, box((length, hull, width), center=(0, clear + hull / 2, 0)))
    cab_len = length * (rng.uniform(0.4, 0.55) if kind == "sedan" else rng.uniform(0.22, 0.3))
    cab_x = -length * rng.uniform(0.0, 0.1) if kind == "sedan" else length * rng.uniform(0.05, 0.15)
    cab_h = rng.uniform(0.18, 0.3)
    m.add(roof, box((cab_len, cab_h, width * 0.9), center=(cab_x, clear + hull + cab_h / 2, 0)))
    front = length / 2 - (cab_x + cab_len / 2)
    deck = clear + hull  # height of the hull's top
    m.add(hood, box((front * 0.95, 0.03, width * 0.9), center=(length / 2 - front / 2, deck + 0.015, 0)))
    if kind != "sedan":  # the bed's side walls
        bed = (cab_x - cab_len / 2) + length / 2
        for sz in (-1, 1):
            m.add(body, box((bed, 0.1, 0.03), center=(-length / 2 + bed / 2, deck + 0.05, sz * width * 0.45)))
    axles = [length * 0.33, -length * 0.33] + ([-length * 0.33 + 2.3 * wr] if kind == "truck" else [])
    for x in axles:
        for sz in (-1, 1):
            z0, z1 = sz * (width / 2 - 0.04), sz * (width / 2 + 0.04)
            m.add(wheel, rod((x, wr, z0), (x, wr, z1), wr, sections=14))
    return m.build()


def rocket(rng: np.random.Generator, *, fins: int, boosters: bool):
    """Rocket standing on +y. Parts: body (41) a cylinder (and two side boosters when
    ``boosters``); nose (43) a cone on top (and on each booster); fin (42) ``fins`` (3 or 4)
    flat fins around the base."""
    p_body, fin, nose = CATEGORY_BY_NAME["Rocket"].parts
    m = PartMesh()
    height, r = rng.uniform(1.2, 1.8), rng.uniform(0.1, 0.16)
    m.add(p_body, rod((0, 0, 0), (0, height, 0), r, sections=16))
    m.add(nose, cone((0, height, 0), (0, height + r * rng.uniform(2, 3.5), 0), r))
    fh, fw = height * rng.uniform(0.15, 0.25), r * rng.uniform(1.2, 2.0)
    phase = rng.uniform(0, 2 * np.pi)
    for k in range(fins):
        a = phase + 2 * np.pi * k / fins
        v, f = prism(np.array([(0, 0), (fw, -fh * 0.2), (fw, fh * 0.3), (0, fh)]) + (r * 0.9, 0), 0.02)
        m.add(fin, (v @ rotation("y", a).T, f))
    if boosters:
        br, bh = r * rng.uniform(0.35, 0.5), height * rng.uniform(0.4, 0.6)
        for sx in (-1, 1):
            x = sx * (r + br)
            m.add(p_body, rod((x, 0, 0), (x, bh, 0), br, sections=10))
            m.add(nose, cone((x, bh, 0), (x, bh + br * 2.5, 0), br, sections=10))
    return m.build()


def _board(length: float, width: float, t: float, *, y: float):
    """A flat board with round ends in the xz plane (a stretched disc), ``t`` thick, at height y."""
    v, f = ellipsoid((0, 0, 0), (1, 1, 1), subdivisions=2)
    v = np.clip(v, -0.98, 0.98) * (length / 2 / 0.98, t / 2 / 0.98, width / 2 / 0.98)
    return v + (0, y, 0), f


def skateboard(rng: np.random.Generator, *, wheels: int):
    """Skateboard along +x. Parts: deck (45) a rounded board; truck (46) two axle blocks under it;
    wheel (44) ``wheels`` (4: a pair per truck, or 2: one central wheel per truck, a caster
    board)."""
    p_wheel, deck, truck = CATEGORY_BY_NAME["Skateboard"].parts
    m = PartMesh()
    length, width, t = rng.uniform(1.2, 1.8), rng.uniform(0.3, 0.45), rng.uniform(0.03, 0.05)
    wr, h = rng.uniform(0.04, 0.07), rng.uniform(0.12, 0.2)
    m.add(deck, _board(length, width, t, y=h))
    for x in (-length * 0.33, length * 0.33):
        m.add(truck, box((0.06, h - wr * 1.2, width * 0.5), center=(x, (h + wr * 1.2) / 2, 0)))
        zs = (-width * 0.35, width * 0.35) if wheels == 4 else (0.0,)
        for z in zs:
            m.add(p_wheel, rod((x, wr, z - 0.03), (x, wr, z + 0.03), wr, sections=12))
    return m.build()
