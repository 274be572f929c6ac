"""Synthetic hand-held objects: bag, cap, earphone, guitar, knife, mug, pistol.

Each ``build_<name>(rng)`` returns ``(vertices (V, 3), faces (F, 3), face_part (F,))`` with the
category's global ShapeNetPart part ids. y is up; knives and pistols point along +x with
their blades / slides in the (x, y) plane, guitars stand along +y with their fronts facing +z.
"""

from __future__ import annotations

import numpy as np

from ..categories import CATEGORY_BY_NAME
from .shapes_primitives import (
    PartMesh,
    arc,
    box,
    capsule,
    ellipsoid,
    lathe,
    place,
    prism,
    rod,
    rotation,
    slab,
    tube,
)

__all__ = ["build_bag", "build_cap", "build_earphone", "build_guitar", "build_knife", "build_mug",
           "build_pistol"]


def _loop(x0: float, x1: float, y: float, rise: float, *, z: float = 0.0, n: int = 12):
    """(n, 3) half-ellipse path in the (x, y) plane from (x0, y) over a top ``rise`` to (x1, y)."""
    a = np.linspace(np.pi, 0, n)
    return np.column_stack([(x0 + x1) / 2 + (x1 - x0) / 2 * np.cos(a), y + rise * np.sin(a),
                            np.full(n, z)])


def build_mug(rng: np.random.Generator):
    """Mug or cup. Parts: handle (36) a C- or D-shaped tube on the +x side; body (37) a hollow
    (possibly tapered) cylinder with a bottom, inner wall and rim."""
    handle, body = CATEGORY_BY_NAME["Mug"].parts
    m = PartMesh()
    r_top = rng.uniform(0.3, 0.45)
    r_bot, height = r_top * rng.uniform(0.7, 1.05), r_top * rng.uniform(1.1, 2.6)
    wall = r_top * rng.uniform(0.05, 0.1)
    m.add(body, lathe([(0, 0), (r_bot, 0), (r_top, height), (r_top - wall, height),
                       (r_bot - wall, wall), (0, wall)], sections=24))
    size, stretch = height * rng.uniform(0.22, 0.38), rng.uniform(0.6, 1.3)
    y_mid = height * rng.uniform(0.45, 0.6)
    r_mid = r_bot + (r_top - r_bot) * y_mid / height
    a = np.linspace(-np.pi / 2, np.pi / 2, 12)
    path = np.column_stack([r_mid - wall + size * stretch * np.cos(a), y_mid + size * np.sin(a),
                            np.zeros_like(a)])
    m.add(handle, tube(path, height * rng.uniform(0.04, 0.08), sections=8))
    return m.build()


def build_bag(rng: np.random.Generator):
    """Tote, duffel or briefcase. Parts: handle (4) one or two arched tubes on top, or a long
    shoulder strap; body (5) trapezoidal prism, capsule or flat box."""
    handle, body = CATEGORY_BY_NAME["Bag"].parts
    m = PartMesh()
    kind = rng.choice(["tote", "duffel", "briefcase"], p=[0.5, 0.25, 0.25])
    tr = rng.uniform(0.012, 0.025)
    if kind == "duffel":
        length, r = rng.uniform(0.8, 1.2), rng.uniform(0.18, 0.3)
        m.add(body, place(capsule((-length / 2 + r, r, 0), (length / 2 - r, r, 0), r),
                          scale=(1, rng.uniform(0.8, 1.1), 1)))
        top, span, depth = 2 * r * 0.95, length * rng.uniform(0.15, 0.25), r
        strap_half, strap_y = length / 2 - r * 0.5, r
    else:
        width = rng.uniform(0.6, 1.0)
        height = width * (rng.uniform(0.55, 1.1) if kind == "tote" else rng.uniform(0.6, 0.8))
        depth = width * (rng.uniform(0.2, 0.45) if kind == "tote" else rng.uniform(0.12, 0.22))
        top_w = width * (rng.uniform(0.8, 1.2) if kind == "tote" else 1.0)
        m.add(body, prism([(-width / 2, 0), (width / 2, 0), (top_w / 2, height), (-top_w / 2, height)],
                          depth))
        top, span = height, top_w * rng.uniform(0.2, 0.35) if kind == "tote" else width * 0.15
        strap_half, strap_y = width / 2 * 0.95, height * 0.9
    if kind == "tote" or (kind == "duffel" and rng.random() < 0.5):
        rise = rng.uniform(0.15, 0.45) if kind == "tote" else rng.uniform(0.08, 0.15)
        for z in (-depth * 0.3, depth * 0.3):
            m.add(handle, tube(_loop(-span, span, top - 0.02, rise, z=z), tr, sections=6))
    else:
        m.add(handle, tube(_loop(-span, span, top - 0.02, rng.uniform(0.08, 0.15)), tr * 1.5, sections=6))
    if kind != "briefcase" and rng.random() < 0.3:  # shoulder strap
        strap = _loop(-strap_half, strap_half, strap_y, rng.uniform(0.4, 0.7), z=depth * 0.1)
        m.add(handle, tube(strap, tr, sections=6))
    return m.build()


def build_cap(rng: np.random.Generator):
    """Baseball cap. Parts: panel (6) an open half-ellipsoid crown with an optional top button;
    peak (7) a crescent brim at the front (+x), tilted down."""
    panel, peak = CATEGORY_BY_NAME["Cap"].parts
    m = PartMesh()
    r, stretch = rng.uniform(0.45, 0.55), rng.uniform(1.0, 1.25)
    height = r * rng.uniform(0.45, 1.1)
    a = np.linspace(0, np.pi / 2, 8)
    crown = lathe(np.column_stack([r * np.cos(a), height * np.sin(a)]), sections=24)
    m.add(panel, place(crown, scale=(stretch, 1, 1)))
    if rng.random() < 0.5:
        m.add(panel, ellipsoid((0, height, 0), (r * 0.08, r * 0.04, r * 0.08), subdivisions=1))
    reach, half_angle = r * rng.uniform(0.4, 1.3), rng.uniform(1.0, 1.45)
    phi = np.linspace(-half_angle, half_angle, 11)
    radial = np.column_stack([np.cos(phi) * stretch, np.sin(phi)])
    inner = r * radial * 0.98
    outer = inner + reach * (0.15 + 0.85 * np.sqrt(1 - (phi / half_angle) ** 2))[:, None] * radial
    pivot, tilt = inner[5, 0], rng.uniform(0.0, 0.4)
    t = r * rng.uniform(0.02, 0.05)
    for k in range(len(phi) - 1):
        quad = np.array([inner[k], outer[k], outer[k + 1], inner[k + 1]]) - (pivot, 0)
        m.add(peak, place(slab(quad, t), rotation=rotation("z", -tilt), offset=(pivot, t / 2, 0)))
    return m.build()


def _cord(rng, start, length: float, *, n: int = 12):
    """(n, 3) wobbly path hanging down from ``start`` over a vertical drop of ``length``."""
    drop = np.linspace(0, length, n)
    wobble = np.cumsum(rng.normal(0, length * 0.04, (n, 2)), axis=0)
    wobble -= wobble[0]
    return np.asarray(start, float) + np.column_stack([wobble[:, 0], -drop, wobble[:, 1]])


def build_earphone(rng: np.random.Generator):
    """Headphones or earbuds. Parts: earcup (16) two cylinders or ellipsoids; headband (17,
    optional: earbuds have none) an arch over the top; cord (18, optional) a hanging cable, or
    the earbuds' Y-shaped cable."""
    earcup, headband, cord = CATEGORY_BY_NAME["Earphone"].parts
    m = PartMesh()
    if rng.random() < 0.25:  # earbuds
        sep, r_bud = rng.uniform(0.1, 0.25), rng.uniform(0.05, 0.08)
        joint = np.array([0, -rng.uniform(0.3, 0.5), 0])
        for s in (-1, 1):
            m.add(earcup, ellipsoid((s * sep, 0, 0), (r_bud, r_bud * 1.2, r_bud), subdivisions=1))
            m.add(cord, tube(np.linspace((s * sep, -r_bud, 0), joint, 6), 0.01, sections=6))
        m.add(cord, tube(_cord(rng, joint, rng.uniform(0.4, 0.8)), 0.012, sections=6))
        return m.build()
    r_band, lift = rng.uniform(0.35, 0.5), rng.uniform(0.9, 1.3)
    band = arc((0, 0, 0), r_band, 0, np.pi, n=16) * (1, lift, 1)
    m.add(headband, tube(band, rng.uniform(0.015, 0.035), sections=6))
    r_cup, t_cup, drop = rng.uniform(0.12, 0.2), rng.uniform(0.06, 0.12), rng.uniform(0.0, 0.12)
    for s in (-1, 1):
        c = np.array([s * r_band, -drop, 0])
        if rng.random() < 0.5:
            m.add(earcup, rod(c - (t_cup / 2, 0, 0), c + (t_cup / 2, 0, 0), r_cup, sections=16))
        else:
            m.add(earcup, ellipsoid(c, (t_cup / 2, r_cup * 1.2, r_cup), subdivisions=2))
    if rng.random() < 0.5:
        m.add(cord, tube(_cord(rng, (-r_band, -drop - r_cup, 0), rng.uniform(0.3, 0.8)), 0.012, sections=6))
    return m.build()


def _guitar_outline(r_low: float, r_up: float, gap: float, *, n: int = 40) -> np.ndarray:
    """(n, 2) outline of two overlapping circles (lower at the origin, upper ``gap`` above),
    as seen from a centre inside both, which makes it star-shaped for :func:`prism`."""
    centre = np.array([0.0, (gap + r_low - r_up) / 2])
    angle = np.linspace(0, 2 * np.pi, n, endpoint=False)
    u = np.column_stack([np.cos(angle), np.sin(angle)])
    best = np.zeros(n)
    for c, r in (((0.0, 0.0), r_low), ((0.0, gap), r_up)):
        p = np.asarray(c) - centre
        along = u @ p
        disc = along ** 2 - p @ p + r ** 2
        best = np.maximum(best, np.where(disc >= 0, along + np.sqrt(np.maximum(disc, 0)), 0))
    return centre + u * best[:, None]


def build_guitar(rng: np.random.Generator):
    """Acoustic, electric or bass guitar, or ukulele. Parts: head (19) tilted headstock with
    optional tuning pegs; neck (20) long bar; body (21) figure-eight slab."""
    head, neck, body = CATEGORY_BY_NAME["Guitar"].parts
    m = PartMesh()
    kind = rng.choice(["acoustic", "electric", "bass", "ukulele"], p=[0.4, 0.3, 0.15, 0.15])
    deep = kind in ("acoustic", "ukulele")
    r_low = rng.uniform(0.3, 0.42) if kind == "acoustic" else rng.uniform(0.22, 0.34)
    r_up, gap = r_low * rng.uniform(0.6, 0.9), r_low * rng.uniform(0.6, 1.3)
    depth = r_low * (rng.uniform(0.3, 0.55) if deep else rng.uniform(0.12, 0.22))
    outline = _guitar_outline(r_low, r_up, gap) * (rng.uniform(0.8, 1.15), 1)
    m.add(body, place(prism(outline, depth), offset=(0, r_low, 0)))
    y_body = r_low + gap + r_up
    l_neck = {"bass": (1.0, 1.4), "ukulele": (0.35, 0.6)}.get(kind, (0.65, 1.0))
    w_neck, l_neck = rng.uniform(0.07, 0.11), rng.uniform(*l_neck)
    y0 = y_body - r_up * 0.5
    m.add(neck, box((w_neck, l_neck + r_up * 0.5, w_neck * 0.5),
                    center=(0, y0 + (l_neck + r_up * 0.5) / 2, depth / 2 - w_neck * 0.25)))
    y_head, l_head, tilt = y0 + l_neck + r_up * 0.5, rng.uniform(0.15, 0.25), -rng.uniform(0.0, 0.3)
    w_head = w_neck * rng.uniform(1.2, 2.0)
    top = rotation("x", tilt)
    base = np.array([0, y_head, depth / 2 - w_neck * 0.25])
    m.add(head, box((w_head, l_head, w_neck * 0.4), center=base + top @ (0, l_head / 2, 0), rotation=top))
    if rng.random() < 0.6:
        for k in range(3):
            for s in (-1, 1):
                p = base + top @ (s * w_head / 2, l_head * (0.3 + 0.25 * k), 0)
                m.add(head, rod(p, p + (s * 0.05, 0, 0), 0.012, sections=6))
    return m.build()


def build_knife(rng: np.random.Generator):
    """Chef's knife, dagger, cleaver or utility knife along +x. Parts: blade (22) flat tapered
    slab; handle (23) grip (box or capsule) with an optional guard."""
    blade, handle = CATEGORY_BY_NAME["Knife"].parts
    m = PartMesh()
    kind = rng.choice(["chef", "dagger", "cleaver", "utility"], p=[0.4, 0.25, 0.15, 0.2])
    l_handle = rng.uniform(0.3, 0.45)
    l_blade = l_handle * (rng.uniform(0.8, 1.6) if kind in ("cleaver", "utility") else rng.uniform(1.2, 3.0))
    if kind == "dagger":
        w = l_blade * rng.uniform(0.12, 0.2)
        outline = [(0, -w / 2), (0.75 * l_blade, -0.4 * w), (l_blade, 0), (0.75 * l_blade, 0.4 * w),
                   (0, w / 2)]
    elif kind == "cleaver":
        w = l_blade * rng.uniform(0.35, 0.55)
        outline = [(0, -w / 2), (l_blade, -w * 0.6), (l_blade, w / 2), (0, w / 2)]
    else:
        w = l_blade * (rng.uniform(0.12, 0.25) if kind == "chef" else rng.uniform(0.2, 0.3))
        tip = rng.uniform(0.1, 0.45)
        outline = [(0, -w / 2), (0.6 * l_blade, -w / 2), (0.85 * l_blade, -w * 0.25), (l_blade, w * tip),
                   (0.5 * l_blade, w / 2), (0, w / 2)]
    m.add(blade, prism(outline, rng.uniform(0.01, 0.025)))
    h_handle, t_handle = rng.uniform(0.05, 0.12), rng.uniform(0.03, 0.08)
    if rng.random() < 0.5:
        m.add(handle, box((l_handle, h_handle, t_handle), center=(-l_handle / 2, 0, 0)))
    else:
        r = h_handle / 2
        m.add(handle, place(capsule((-l_handle + r, 0, 0), (-r, 0, 0), r), scale=(1, 1, t_handle / h_handle)))
    if kind in ("dagger", "chef") and rng.random() < 0.5:
        m.add(handle, box((0.02, max(w, h_handle) * rng.uniform(1.1, 1.6), t_handle * 1.4), center=(0, 0, 0)))
    return m.build()


def build_pistol(rng: np.random.Generator):
    """Semi-automatic pistol or revolver along +x. Parts: barrel (38) slide or frame, barrel,
    optional suppressor, a revolver's drum; grip (39) raked handle; trigger (40) trigger and
    its guard."""
    barrel, grip, trigger = CATEGORY_BY_NAME["Pistol"].parts
    m = PartMesh()
    length = rng.uniform(0.6, 1.1)
    h = length * rng.uniform(0.12, 0.24)
    w = h * rng.uniform(0.5, 0.7)
    x_back, x_front = -0.3 * length, 0.7 * length
    if rng.random() < 0.3:  # revolver
        x_drum = 0.05 * length
        m.add(barrel, box((x_drum - x_back, h, w), center=((x_back + x_drum) / 2, h / 2, 0)),
              rod((x_drum, h * 0.6, 0), (x_front, h * 0.6, 0), h * 0.25, sections=12),
              rod((x_drum, h * 0.45, 0), (x_drum + 0.2 * length, h * 0.45, 0), h * 0.6, sections=14))
    else:
        m.add(barrel, box((x_front - x_back, h, w), center=((x_back + x_front) / 2, h / 2, 0)))
        if rng.random() < 0.3:
            m.add(barrel, rod((x_front, h * 0.6, 0), (x_front + rng.uniform(0.1, 0.7), h * 0.6, 0),
                              h * rng.uniform(0.2, 0.4), sections=12))
    l_grip, rake = length * rng.uniform(0.4, 0.8), rng.uniform(0.1, 0.45)
    w_grip = length * rng.uniform(0.18, 0.25)
    shift = l_grip * np.tan(rake)
    m.add(grip, prism([(x_back, 0.01), (x_back + w_grip, 0.01), (x_back + w_grip - shift, -l_grip),
                       (x_back - shift, -l_grip)], w * 1.1))
    g0 = x_back + w_grip
    g_len = length * rng.uniform(0.18, 0.28)
    guard = arc((g0 + g_len / 2, 0, 0), g_len / 2, np.pi, 2 * np.pi, n=10) * (1, 1.2, 1)
    m.add(trigger, tube(guard, 0.012, sections=6))
    m.add(trigger, tube(np.array([(g0 + g_len * 0.45, 0.005, 0), (g0 + g_len * 0.4, -g_len * 0.2, 0),
                                  (g0 + g_len * 0.3, -g_len * 0.35, 0)]), 0.014, sections=6))
    return m.build()
