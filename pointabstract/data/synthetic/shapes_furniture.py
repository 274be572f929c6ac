"""Synthetic furniture and appliances: chair, table, lamp, laptop.

Each ``build_<name>(rng)`` returns ``(vertices (V, 3), faces (F, 3), face_part (F,))`` with the
category's global ShapeNetPart part ids. y is up, the floor is y = 0, a chair faces +z.
"""

from __future__ import annotations

import numpy as np

from ..categories import CATEGORY_BY_NAME
from .shapes_primitives import PartMesh, box, ellipsoid, lathe, place, rod, rotation, tube

__all__ = ["build_chair", "build_lamp", "build_laptop", "build_table"]


def _tilted_box(size, base, angle: float):
    """Box of ``size`` standing on point ``base`` (bottom centre), tilted about x by ``angle``."""
    r = rotation("x", angle)
    return box(size, center=np.asarray(base, float) + r @ (0, size[1] / 2, 0), rotation=r)


def _chair_back(m: PartMesh, part: int, rng, *, width, height, y, z):
    """A solid or slatted back rising from the seat's rear edge, leaning backwards."""
    tilt, t = -rng.uniform(0.0, 0.35), rng.uniform(0.025, 0.1)
    base = np.array([0.0, y, z + t / 2])
    if rng.random() < 0.6:
        m.add(part, _tilted_box((width * rng.uniform(0.85, 1.0), height, t), base, tilt))
        return
    up = rotation("x", tilt) @ (0, 1, 0)
    post = t * rng.uniform(0.8, 1.2)
    for x in (-width / 2 + post / 2, width / 2 - post / 2):
        m.add(part, _tilted_box((post, height, t), base + (x, 0, 0), tilt))
    rail = height * rng.uniform(0.12, 0.25)
    m.add(part, _tilted_box((width, rail, t), base + up * (height - rail), tilt))
    n = rng.integers(2, 6)
    for x in np.linspace(-width / 2, width / 2, n + 2)[1:-1]:
        m.add(part, _tilted_box((post * 0.6, height - rail, t * 0.7), base + (x, 0, 0), tilt))


def _chair_legs(m: PartMesh, part: int, rng, *, width, depth, y):
    """Four straight legs, a swivel base with five spokes, or two sled runners up to height y."""
    style = rng.choice(["four", "swivel", "sled"], p=[0.65, 0.25, 0.1])
    if style == "four":
        t, splay, inset = rng.uniform(0.025, 0.05), rng.uniform(0.0, 0.06), rng.uniform(0.0, 0.05)
        for sx in (-1, 1):
            for sz in (-1, 1):
                top = np.array([sx * (width / 2 - inset - t), y, sz * (depth / 2 - inset - t)])
                m.add(part, rod(top + (sx * splay, -y, sz * splay), top, t, sections=8))
    elif style == "swivel":
        foot, spoke = y * rng.uniform(0.1, 0.2), width * rng.uniform(0.45, 0.6)
        m.add(part, rod((0, foot, 0), (0, y, 0), rng.uniform(0.025, 0.04)))
        for k in range(5):
            d = np.array([np.cos(2 * np.pi * k / 5), 0, np.sin(2 * np.pi * k / 5)])
            m.add(part, rod((0, foot, 0), d * spoke + (0, foot * 0.6, 0), 0.02, sections=6),
                  ellipsoid(d * spoke + (0, foot * 0.3, 0), (foot * 0.3,) * 3, subdivisions=1))
    else:
        for sx in (-1, 1):
            x = sx * width * 0.45
            path = np.array([(x, y, -depth * 0.4), (x, 0.01, -depth * 0.45), (x, 0.01, depth * 0.45),
                             (x, y, depth * 0.4)])
            m.add(part, tube(path, 0.015, sections=6))


def build_chair(rng: np.random.Generator):
    """Chair. Parts: back (12) solid panel or posts, rail and slats; seat (13) slab; leg (14)
    four legs, a five-spoke swivel base or sled runners; arm (15, optional) two armrests on
    supports."""
    back, seat, leg, arm = CATEGORY_BY_NAME["Chair"].parts
    m = PartMesh()
    width, depth = rng.uniform(0.4, 0.8), rng.uniform(0.4, 0.7)
    height = rng.uniform(0.6, 0.8) if rng.random() < 0.15 else rng.uniform(0.3, 0.52)  # bar or plain
    t = rng.uniform(0.03, 0.15)
    m.add(seat, box((width, t, depth), center=(0, height - t / 2, 0)))
    _chair_back(m, back, rng, width=width, height=rng.uniform(0.2, 0.75), y=height, z=-depth / 2)
    _chair_legs(m, leg, rng, width=width, depth=depth, y=height - t)
    if rng.random() < 0.35:
        h_arm, t_arm = rng.uniform(0.12, 0.28), rng.uniform(0.03, 0.1)
        for sx in (-1, 1):
            x = sx * (width / 2 - t_arm / 2)
            m.add(arm, box((t_arm, t_arm, depth * 0.85), center=(x, height + h_arm, -depth * 0.05)),
                  box((t_arm, h_arm, t_arm), center=(x, height + h_arm / 2, depth * 0.3)))
    return m.build()


def _table_support(m: PartMesh, part: int, rng, corners, *, y_top, t_leg):
    """An apron under the top, low stretchers between the legs, or a shelf."""
    kind = rng.choice(["apron", "stretcher", "shelf"])
    xs, zs = corners[:, 0].max(), corners[:, 2].max()
    if kind == "shelf":
        y = y_top * rng.uniform(0.15, 0.35)
        m.add(part, box((2 * xs + t_leg, 0.03, 2 * zs + t_leg), center=(0, y, 0)))
        return
    h = y_top * rng.uniform(0.08, 0.15) if kind == "apron" else 0.03
    y = y_top - h / 2 if kind == "apron" else y_top * rng.uniform(0.15, 0.3)
    for s in (-1, 1):
        m.add(part, box((2 * xs, h, 0.025), center=(0, y, s * zs)),
              box((0.025, h, 2 * zs), center=(s * xs, y, 0)))


def build_table(rng: np.random.Generator):
    """Table (coffee to bar height, rectangular or round). Parts: top (47) slab or disc; leg (48)
    three or four legs, a pedestal with its foot, or two panel trestles; support (49, optional)
    apron, stretchers or a lower shelf."""
    top, leg, support = CATEGORY_BY_NAME["Table"].parts
    m = PartMesh()
    height, t = rng.uniform(0.4, 1.0), rng.uniform(0.03, 0.08)
    y_top = height - t
    round_top = rng.random() < 0.3
    if round_top:
        radius = rng.uniform(0.4, 0.7)
        m.add(top, rod((0, y_top, 0), (0, height, 0), radius, sections=24))
        half_x = half_z = radius * 0.7
    else:
        width = rng.uniform(0.9, 2.0)
        depth = width * rng.uniform(0.45, 0.9)
        m.add(top, box((width, t, depth), center=(0, height - t / 2, 0)))
        half_x, half_z = width / 2, depth / 2
    style = rng.choice(["legs", "pedestal", "trestle"], p=[0.45, 0.55, 0.0] if round_top else [0.7, 0.1, 0.2])
    if style == "pedestal":
        m.add(leg, rod((0, 0.02, 0), (0, y_top, 0), rng.uniform(0.04, 0.08)),
              rod((0, 0, 0), (0, 0.03, 0), min(half_x, half_z) * rng.uniform(0.5, 0.9), sections=16))
        return m.build()
    t_leg, inset = rng.uniform(0.025, 0.06), rng.uniform(0.02, 0.12)
    if style == "trestle":
        for s in (-1, 1):
            m.add(leg, box((t_leg, y_top, 2 * half_z * 0.8),
                           center=(s * (half_x - inset - t_leg), y_top / 2, 0)))
        if rng.random() < 0.5:
            m.add(support, box((2 * (half_x - inset), 0.04, 0.04), center=(0, y_top * 0.3, 0)))
        return m.build()
    n_legs = 3 if round_top and rng.random() < 0.4 else 4
    angles = np.pi / 4 + 2 * np.pi * np.arange(n_legs) / n_legs
    scale = np.sqrt(2) if n_legs == 4 else 1.0
    corners = np.column_stack([np.cos(angles) * scale * (half_x - inset), np.zeros(n_legs),
                               np.sin(angles) * scale * (half_z - inset)])
    for c in corners:
        m.add(leg, box((t_leg, y_top, t_leg), center=c + (0, y_top / 2, 0)))
    if n_legs == 4 and rng.random() < 0.55:
        _table_support(m, support, rng, corners, y_top=y_top, t_leg=t_leg)
    return m.build()


def _shade(rng, *, dome: bool):
    """An open lamp shade around the y axis, opening at y = 0: a frustum or a dome."""
    r = rng.uniform(0.15, 0.3)
    if dome:
        a = np.linspace(0, np.pi / 2, 7)
        return lathe(np.column_stack([r * np.cos(a), r * rng.uniform(0.5, 1.0) * np.sin(a)]), sections=20)
    h = r * rng.uniform(0.8, 1.6)
    return lathe([(r, 0), (r * rng.uniform(0.45, 0.8), h)], sections=20)


def build_lamp(rng: np.random.Generator):
    """Floor, desk or pendant lamp. Parts: base (24, optional) foot of standing lamps; shade (25)
    open frustum or dome; canopy (26, optional) ceiling disc of pendant lamps; pole (27) straight
    stem, jointed arm or hanging cord."""
    base, shade, canopy, pole = CATEGORY_BY_NAME["Lamp"].parts
    m = PartMesh()
    kind = rng.choice(["standing", "desk", "pendant"], p=[0.4, 0.3, 0.3])
    if kind == "pendant":
        top, drop = rng.uniform(1.0, 1.6), rng.uniform(0.3, 0.9)
        m.add(canopy, rod((0, top - 0.04, 0), (0, top, 0), rng.uniform(0.06, 0.12), sections=16))
        m.add(pole, rod((0, top - drop, 0), (0, top - 0.04, 0), 0.012, sections=6))
        shade_mesh = _shade(rng, dome=rng.random() < 0.5)
        height = shade_mesh[0][:, 1].max()
        m.add(shade, place(shade_mesh, offset=(0, top - drop - height, 0)))
        return m.build()
    r_base = rng.uniform(0.1, 0.22)
    if rng.random() < 0.6:
        m.add(base, rod((0, 0, 0), (0, rng.uniform(0.02, 0.06), 0), r_base, sections=20))
    else:
        m.add(base, box((r_base * 2, rng.uniform(0.03, 0.07), r_base * rng.uniform(1.2, 2)),
                        center=(0, 0.025, 0)))
    if kind == "standing":
        height = rng.uniform(0.7, 1.6)
        m.add(pole, rod((0, 0, 0), (0, height, 0), rng.uniform(0.012, 0.025), sections=8))
        shade_mesh = _shade(rng, dome=False)
        m.add(shade, place(shade_mesh, offset=(0, height - shade_mesh[0][:, 1].max() * 0.6, 0)))
        return m.build()
    knee = np.array([rng.uniform(-0.2, 0.05), rng.uniform(0.3, 0.55), 0])
    tip = knee + (rng.uniform(0.25, 0.5), rng.uniform(-0.05, 0.2), 0)
    m.add(pole, tube(np.array([(0, 0.02, 0), knee, tip]), 0.015, sections=6))
    tilt = rng.uniform(0.3, 1.2)  # the shade's opening faces down and forwards (+x)
    shade_mesh = place(_shade(rng, dome=rng.random() < 0.6), scale=rng.uniform(0.5, 0.8))
    narrow_end = shade_mesh[0][:, 1].max()
    shade_mesh = place(shade_mesh, offset=(0, -narrow_end, 0))
    m.add(shade, place(shade_mesh, rotation=rotation("z", tilt), offset=tip))
    return m.build()


def build_laptop(rng: np.random.Generator):
    """Open laptop. Parts: keyboard (28) the base with its key field and touchpad; screen (29)
    the lid, hinged at the base's rear edge and opened 45-160 degrees."""
    keyboard, screen = CATEGORY_BY_NAME["Laptop"].parts
    m = PartMesh()
    width = rng.uniform(0.8, 1.2)
    depth, t = width * rng.uniform(0.55, 0.85), width * rng.uniform(0.015, 0.05)
    m.add(keyboard, box((width, t, depth), center=(0, t / 2, 0)),
          box((width * 0.85, t * 0.15, depth * 0.45), center=(0, t, -depth * 0.15)))
    if rng.random() < 0.7:
        m.add(keyboard, box((width * 0.25, t * 0.1, depth * 0.25), center=(0, t, depth * 0.3)))
    opening = rng.uniform(np.radians(45), np.radians(160))
    lid = (width, depth * rng.uniform(0.85, 1.0), t * rng.uniform(0.4, 0.8))
    tilt = -(opening - np.pi / 2)  # past vertical, the lid's top goes backwards (-z)
    m.add(screen, _tilted_box(lid, (0, t, -depth / 2 + lid[2] / 2), tilt))
    return m.build()
