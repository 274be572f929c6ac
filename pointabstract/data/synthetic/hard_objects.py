"""Small-object families of the ``hard`` level: mug, bag, cap, earphone, guitar, knife, pistol.

As in :mod:`.hard_furniture`: one proportion range per family, the class-defining structure as
keyword arguments, global ShapeNetPart part ids of the family's category, y up.
"""

from __future__ import annotations

import numpy as np

from ..categories import CATEGORY_BY_NAME
from .shapes_primitives import PartMesh, box, capsule, ellipsoid, lathe, place, prism, rod, rotation, tube

__all__ = ["bag", "cap", "earphone", "guitar", "knife", "mug", "pistol"]


def _arch(x0: float, x1: float, y: float, rise: float, *, z: float = 0.0, n: int = 10) -> np.ndarray:
    """(n, 3) points of a half-ellipse from (x0, y, z) up by ``rise`` and down to (x1, y, z)."""
    a = np.linspace(np.pi, 0, n)
    return np.column_stack([(x0 + x1) / 2 + (x1 - x0) / 2 * np.cos(a), y + rise * np.sin(a), np.full(n, z)])


def mug(rng: np.random.Generator, *, handles: int):
    """Mug. Parts: body (37) a hollow, slightly tapered cylinder; handle (36) ``handles`` (1 or 2)
    C-shaped tubes on opposite sides."""
    handle, body = CATEGORY_BY_NAME["Mug"].parts
    m = PartMesh()
    r_top = rng.uniform(0.3, 0.45)
    r_bot, height, wall = r_top * rng.uniform(0.75, 1.0), r_top * rng.uniform(1.1, 2.4), r_top * 0.07
    m.add(body, lathe([(0, 0), (r_bot, 0), (r_top, height), (r_top - wall, height), (r_bot - wall, wall),
                       (0, wall)], sections=24))
    size, y_mid = height * rng.uniform(0.22, 0.35), height * rng.uniform(0.45, 0.6)
    r_mid = (r_bot + r_top) / 2
    a = np.linspace(-np.pi / 2, np.pi / 2, 12)
    for side in (1, -1)[:handles]:
        path = np.column_stack([side * (r_mid - wall + size * np.cos(a)), y_mid + size * np.sin(a),
                                np.zeros(12)])
        m.add(handle, tube(path, height * rng.uniform(0.04, 0.07), sections=8))
    return m.build()


def bag(rng: np.random.Generator, *, handles: str):
    """Bag. Parts: body (5) a trapezoidal prism; handle (4) one ``"top"`` arch across the
    length, or ``"two"`` arches, one on each side face (a tote)."""
    handle, body = CATEGORY_BY_NAME["Bag"].parts
    m = PartMesh()
    w, h, d = rng.uniform(0.6, 1.0), rng.uniform(0.4, 0.8), rng.uniform(0.15, 0.35)
    top = w * rng.uniform(0.75, 1.0)
    m.add(body, prism([(-w / 2, 0), (w / 2, 0), (top / 2, h), (-top / 2, h)], d))
    tr, rise = rng.uniform(0.012, 0.025), h * rng.uniform(0.25, 0.5)
    if handles == "top":
        m.add(handle, tube(_arch(-top * 0.35, top * 0.35, h, rise), tr, sections=6))
    else:
        for z in (-d / 2 + tr, d / 2 - tr):
            m.add(handle, tube(_arch(-top * 0.3, top * 0.3, h * 0.95, rise, z=z), tr, sections=6))
    return m.build()


def cap(rng: np.random.Generator, *, brim: str):
    """Cap or hat. Parts: panel (6) a dome (half ellipsoid); peak (7) a ``"front"`` visor or a
    ``"round"`` brim all around."""
    panel, peak = CATEGORY_BY_NAME["Cap"].parts
    m = PartMesh()
    r, hh = rng.uniform(0.4, 0.55), rng.uniform(0.3, 0.5)
    a = np.linspace(0, np.pi / 2, 10)[:-1]
    dome = [(r * np.cos(x), hh * np.sin(x)) for x in a] + [(0.0, hh), (0.0, 0.0)]
    m.add(panel, lathe(dome, sections=24))
    t, reach = rng.uniform(0.015, 0.03), r * rng.uniform(0.5, 0.9)
    if brim == "front":
        a = np.linspace(-np.pi / 2, np.pi / 2, 12)
        outline = np.column_stack([r * 0.9 * np.cos(a) + 0.1 * r, r * np.sin(a)])
        outline[:, 0] += reach * np.cos(a) ** 0.5
        m.add(peak, place(prism(outline, t), rotation=rotation("x", np.pi / 2), offset=(0, t / 2, 0)))
    else:
        outer = r + reach * 0.6
        ring = [(r * 0.95, t / 2), (r * 0.95, -t / 2), (outer, -t / 2), (outer, t / 2)]
        m.add(peak, lathe(ring, sections=24))
    return m.build()


def earphone(rng: np.random.Generator, *, cord: bool):
    """Headphones. Parts: earcup (16) two flattened ellipsoids; headband (17) an arch over
    them; cord (18) a cable hanging from one cup (only when ``cord``)."""
    cup, band, p_cord = CATEGORY_BY_NAME["Earphone"].parts
    m = PartMesh()
    span, rise, rc = rng.uniform(0.35, 0.5), rng.uniform(0.35, 0.55), rng.uniform(0.08, 0.14)
    for sx in (-1, 1):
        m.add(cup, ellipsoid((sx * span, 0, 0), (rc * 0.45, rc, rc * 0.9)))
    m.add(band, tube(_arch(-span, span, rc * 0.8, rise), rng.uniform(0.015, 0.03), sections=6))
    if cord:
        length = rng.uniform(0.4, 0.7)
        path = np.array([(-span, -rc, 0), (-span * 0.9, -rc - length * 0.4, rc * 0.5),
                         (-span * 0.6, -rc - length, rc)])
        m.add(p_cord, tube(path, 0.012, sections=5))
    return m.build()


def _lobes(cx: float, widths, length: float, n: int = 40) -> np.ndarray:
    """Outline of a guitar body: two lobes (lower, upper) along x, centred at ``cx``."""
    a = np.linspace(0, 2 * np.pi, n, endpoint=False)
    x = cx + length / 2 * np.cos(a)
    t = (np.cos(a) + 1) / 2  # 0 at the tail, 1 at the neck end
    lobe = widths[0] * (1 - t) + widths[1] * t - 0.25 * min(widths) * np.sin(np.pi * t) ** 8
    return np.column_stack([x, lobe / 2 * np.sin(a)])


def guitar(rng: np.random.Generator, *, body: str):
    """Guitar or banjo, flat in the xy plane, neck along +x. Parts:
    body (21) a ``"figure8"`` two-lobed slab or a ``"round"`` drum; neck (20) a long bar; head
    (19) a small block at its end."""
    head, neck, p_body = CATEGORY_BY_NAME["Guitar"].parts
    m = PartMesh()
    length, t = rng.uniform(0.4, 0.55), rng.uniform(0.06, 0.12)
    if body == "figure8":
        widths = (length * rng.uniform(0.7, 0.85), length * rng.uniform(0.5, 0.65))
        m.add(p_body, prism(_lobes(0, widths, length), t))
    else:
        a = np.linspace(0, 2 * np.pi, 32, endpoint=False)
        r = length * rng.uniform(0.4, 0.5)
        m.add(p_body, prism(np.column_stack([r * np.cos(a), r * np.sin(a)]), t))
    nl, nw = rng.uniform(0.55, 0.8), rng.uniform(0.04, 0.07)
    m.add(neck, box((nl, nw, t * 0.5), center=(length / 2 + nl / 2 - 0.05, 0, 0)))
    hl = rng.uniform(0.1, 0.18)
    m.add(head, box((hl, nw * 1.6, t * 0.4), center=(length / 2 + nl - 0.05 + hl / 2, 0, 0)))
    return m.build()


def knife(rng: np.random.Generator, *, blade: str):
    """Knife along +x. Parts: handle (23) a rounded bar; blade (22) a ``"pointed"`` tapering
    blade or a ``"square"`` cleaver blade, flat in the xy plane."""
    p_blade, p_handle = CATEGORY_BY_NAME["Knife"].parts
    m = PartMesh()
    hl, hr = rng.uniform(0.3, 0.45), rng.uniform(0.03, 0.05)
    m.add(p_handle, capsule((-hl, 0, 0), (0, 0, 0), hr))
    bl, bw, bt = rng.uniform(0.5, 0.9), rng.uniform(0.1, 0.22), rng.uniform(0.01, 0.02)
    if blade == "pointed":
        outline = [(0, -hr), (bl * 0.7, -hr), (bl, bw * 0.6), (bl * 0.6, bw), (0, bw)]
    else:
        outline = [(0, -hr), (bl, -hr), (bl, bw * 1.2), (0, bw * 1.2)]
    m.add(p_blade, prism(np.asarray(outline) - (0, bw * 0.3), bt))
    return m.build()


def pistol(rng: np.random.Generator, *, grips: int):
    """Pistol along +x. Parts: barrel (38) a box with a muzzle rod; grip (39) ``grips`` (1 or 2)
    slanted handles below it (the second in front of the trigger); trigger (40) a small arc."""
    barrel, grip, trigger = CATEGORY_BY_NAME["Pistol"].parts
    m = PartMesh()
    bl, bh, bw = rng.uniform(0.5, 0.8), rng.uniform(0.1, 0.16), rng.uniform(0.05, 0.08)
    m.add(barrel, box((bl, bh, bw), center=(bl / 2, 0, 0)), rod((bl, 0, 0), (bl + 0.08, 0, 0), bh * 0.25))
    gl, slant = rng.uniform(0.25, 0.4), rotation("z", rng.uniform(0.15, 0.35))
    grip_centre = np.array([bh * 0.6, -bh / 2, 0]) + slant @ (0, -gl / 2, 0)
    m.add(grip, box((bh, gl, bw * 0.9), center=grip_centre, rotation=slant))
    if grips == 2:
        m.add(grip, rod((bl * 0.7, -bh / 2, 0), (bl * 0.7, -bh / 2 - gl * 0.7, 0), bh * 0.3, sections=10))
    tx = bh * 0.6 + rng.uniform(0.08, 0.14)
    a = np.linspace(np.pi, 1.8 * np.pi, 6)
    loop = np.column_stack([tx + 0.04 * np.cos(a), -bh / 2 + 0.05 * np.sin(a) - 0.01, np.zeros(6)])
    m.add(trigger, tube(loop, 0.01, sections=5))
    return m.build()
