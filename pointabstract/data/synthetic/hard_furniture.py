"""Furniture families of the ``hard`` level: chair, table, lamp, laptop.

Each family builder draws the overall proportions from one range shared by all its classes and
takes the class-defining structure as keyword arguments (arms or not, four legs or a pedestal,
round or square top, ...), so two classes of a family differ in one part or arrangement only.
They return ``(vertices (V, 3), faces (F, 3), face_part (F,))`` with the global ShapeNetPart
part ids of the family's category; y is up, the floor is y = 0.
"""

from __future__ import annotations

import numpy as np

from ..categories import CATEGORY_BY_NAME
from .shapes_primitives import PartMesh, box, ellipsoid, lathe, rod, rotation, slab, tube

__all__ = ["chair", "lamp", "laptop", "table"]


def _disc(radius: float, thickness: float, y: float, *, sections: int = 24):
    a = np.linspace(0, 2 * np.pi, sections, endpoint=False)
    return slab(np.column_stack([radius * np.cos(a), radius * np.sin(a)]), thickness, y=y)


def chair(rng: np.random.Generator, *, arms: bool, base: str):
    """Chair. Parts: back (12), seat (13), leg (14): ``base`` ``"four"`` legs, a ``"swivel"``
    pole with five spokes or two ``"sled"`` runners; arm (15): two armrests when ``arms``."""
    back, seat, leg, arm = CATEGORY_BY_NAME["Chair"].parts
    m = PartMesh()
    w, d, h = rng.uniform(0.4, 0.7), rng.uniform(0.4, 0.65), rng.uniform(0.35, 0.55)
    t = rng.uniform(0.04, 0.1)
    m.add(seat, box((w, t, d), center=(0, h - t / 2, 0)))
    tilt, bt, bh = -rng.uniform(0.0, 0.3), rng.uniform(0.03, 0.07), rng.uniform(0.3, 0.7)
    r = rotation("x", tilt)
    m.add(back, box((w * rng.uniform(0.8, 1.0), bh, bt), center=np.array([0, h, -d / 2]) + r @ (0, bh / 2, 0),
                    rotation=r))
    y = h - t
    if base == "four":
        lt, inset = rng.uniform(0.02, 0.045), rng.uniform(0.0, 0.05)
        for sx in (-1, 1):
            for sz in (-1, 1):
                top = np.array([sx * (w / 2 - inset - lt), y, sz * (d / 2 - inset - lt)])
                m.add(leg, rod(top - (0, y, 0), top, lt, sections=8))
    elif base == "swivel":
        foot, spoke = y * rng.uniform(0.1, 0.2), w * rng.uniform(0.45, 0.6)
        m.add(leg, rod((0, foot, 0), (0, y, 0), rng.uniform(0.025, 0.04)))
        for k in range(5):
            a = 2 * np.pi * k / 5 + rng.uniform(-0.1, 0.1)
            direction = np.array([np.cos(a), 0, np.sin(a)])
            m.add(leg, rod((0, foot, 0), direction * spoke + (0, foot * 0.5, 0), 0.02, sections=6))
    else:  # sled
        for sx in (-1, 1):
            x = sx * w * 0.45
            m.add(leg, tube([(x, y, -d * 0.4), (x, 0.015, -d * 0.45), (x, 0.015, d * 0.45), (x, y, d * 0.4)],
                            0.018, sections=6))
    if arms:
        ah, at = rng.uniform(0.12, 0.25), rng.uniform(0.03, 0.07)
        for sx in (-1, 1):
            x = sx * (w / 2 + at / 2)
            m.add(arm, box((at, at, d * rng.uniform(0.7, 1.0)), center=(x, h + ah, 0)),
                  rod((x, h, d * 0.35), (x, h + ah, d * 0.35), at * 0.4, sections=6))
    return m.build()


def table(rng: np.random.Generator, *, top: str, legs: str):
    """Table. Parts: top (47) a ``"square"`` slab or a ``"round"`` disc; leg (48) ``"four"``
    legs, a ``"pedestal"`` column or two ``"trestle"`` end panels; support (49) the pedestal's
    foot or the trestle's stretcher (the four-legged tables have none)."""
    p_top, p_leg, p_support = CATEGORY_BY_NAME["Table"].parts
    m = PartMesh()
    w, h, t = rng.uniform(0.8, 1.4), rng.uniform(0.45, 0.8), rng.uniform(0.03, 0.07)
    d = w * rng.uniform(0.75, 1.0)
    if top == "square":
        m.add(p_top, box((w, t, d), center=(0, h - t / 2, 0)))
    else:
        m.add(p_top, _disc(w / 2, t, h - t / 2))
    y, lt = h - t, rng.uniform(0.025, 0.05)
    if legs == "four":
        diagonal = np.pi / 4 + np.pi / 2 * np.arange(4)
        corners = ([(sx * (w / 2 - 2 * lt), sz * (d / 2 - 2 * lt)) for sx in (-1, 1) for sz in (-1, 1)]
                   if top == "square" else [(w * 0.35 * np.cos(a), w * 0.35 * np.sin(a)) for a in diagonal])
        for x, z in corners:
            m.add(p_leg, rod((x, 0, z), (x, y, z), lt, sections=8))
    elif legs == "pedestal":
        m.add(p_leg, rod((0, 0.03, 0), (0, y, 0), rng.uniform(0.04, 0.08), sections=12))
        m.add(p_support, _disc(w * rng.uniform(0.2, 0.3), 0.03, 0.015))
    else:  # trestle: two end panels and a stretcher
        pw = rng.uniform(0.04, 0.08)
        for sx in (-1, 1):
            m.add(p_leg, box((pw, y, d * rng.uniform(0.6, 0.85)), center=(sx * (w / 2 - 0.1), y / 2, 0)))
        m.add(p_support, box((w - 0.2, pw, pw), center=(0, y * rng.uniform(0.2, 0.5), 0)))
    return m.build()


def _shade(center, rng, *, axis=(0, 1, 0)):
    """An open cone shade (lathe) with its narrow end up along ``axis``, centred at ``center``."""
    r0, r1, hh = rng.uniform(0.08, 0.14), rng.uniform(0.16, 0.26), rng.uniform(0.15, 0.28)
    v, f = lathe([(r1, -hh / 2), (r0, hh / 2), (r0 * 0.97, hh / 2), (r1 * 0.97, -hh / 2)], sections=20)
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    if not np.allclose(axis, (0, 1, 0)):
        k = np.cross((0, 1, 0), axis)
        angle = np.arccos(np.clip(axis[1], -1, 1))
        k = k / np.linalg.norm(k)
        kx = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
        v = v @ (np.eye(3) + np.sin(angle) * kx + (1 - np.cos(angle)) * kx @ kx).T
    return v + np.asarray(center, float), f


def lamp(rng: np.random.Generator, *, kind: str):
    """Lamp. Parts: base (24), shade (25), canopy (26), pole (27). ``kind``: ``"floor"`` (base,
    straight pole, one shade), ``"desk"`` (base, pole bent at an elbow, tilted shade),
    ``"hanging"`` (ceiling canopy, cord, shade; no base), ``"twin"`` (base, pole, two arms with
    a shade each)."""
    base, shade, canopy, pole = CATEGORY_BY_NAME["Lamp"].parts
    m = PartMesh()
    height, pr = rng.uniform(0.9, 1.6), rng.uniform(0.012, 0.025)
    if kind != "hanging":
        m.add(base, _disc(rng.uniform(0.12, 0.22), rng.uniform(0.02, 0.05), 0.02))
    if kind == "floor":
        m.add(pole, rod((0, 0.03, 0), (0, height, 0), pr))
        m.add(shade, _shade((0, height, 0), rng))
    elif kind == "desk":
        elbow = np.array([rng.uniform(-0.15, 0.15), height * rng.uniform(0.45, 0.65), 0])
        tip = elbow + (rng.uniform(0.3, 0.5), rng.uniform(0.05, 0.3), 0)
        m.add(pole, tube([(0, 0.03, 0), elbow, tip], pr, sections=8))
        m.add(shade, _shade(tip + (0.05, -0.08, 0), rng, axis=(-0.6, 1, 0)))
    elif kind == "hanging":
        m.add(canopy, _disc(rng.uniform(0.06, 0.12), 0.03, height))
        low = height * rng.uniform(0.3, 0.6)
        m.add(pole, rod((0, low, 0), (0, height, 0), pr * 0.6, sections=6))
        bulb = ellipsoid((0, low - 0.05, 0), (0.05,) * 3, subdivisions=1)
        m.add(shade, _shade((0, low - 0.05, 0), rng), bulb)
    else:  # twin
        m.add(pole, rod((0, 0.03, 0), (0, height * 0.8, 0), pr))
        span = rng.uniform(0.2, 0.4)
        for sx in (-1, 1):
            end = (sx * span, height * 0.8 + rng.uniform(0.05, 0.2), 0)
            m.add(pole, tube([(0, height * 0.8, 0), end], pr * 0.8, sections=6))
            m.add(shade, _shade(end, rng))
    return m.build()


def laptop(rng: np.random.Generator, *, opening: tuple[float, float]):
    """Laptop. Parts: keyboard (28) a slab on the floor with key rows; screen (29) a thin panel
    hinged at the back edge, opened by an angle (degrees) drawn from ``opening``."""
    keyboard, screen = CATEGORY_BY_NAME["Laptop"].parts
    m = PartMesh()
    w, d, t = rng.uniform(0.6, 0.9), rng.uniform(0.4, 0.6), rng.uniform(0.02, 0.04)
    m.add(keyboard, box((w, t, d), center=(0, t / 2, 0)))
    for row in range(4):
        m.add(keyboard, box((w * 0.8, 0.008, d * 0.08), center=(0, t + 0.004, -d * 0.3 + row * d * 0.12)))
    angle = np.radians(rng.uniform(*opening))
    r = rotation("x", -(angle - np.pi / 2))
    sh, st = d * rng.uniform(0.9, 1.05), t * rng.uniform(0.4, 0.7)
    m.add(screen, box((w, sh, st), center=np.array([0, t, -d / 2]) + r @ (0, sh / 2, -st / 2), rotation=r))
    return m.build()
