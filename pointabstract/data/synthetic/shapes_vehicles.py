"""Synthetic vehicles: airplane, car, motorbike, rocket, skateboard.

Each ``build_<name>(rng)`` returns ``(vertices (V, 3), faces (F, 3), face_part (F,))`` with the
category's global ShapeNetPart part ids (see :mod:`pointabstract.data.categories`). y is up;
vehicles point along +x (nose, front wheel, bonnet), the rocket stands along +y. Proportions are
drawn from ``rng``; the whole-shape rotation and scaling happen in :mod:`.shapes`.
"""

from __future__ import annotations

import numpy as np

from ..categories import CATEGORY_BY_NAME
from .shapes_primitives import (
    PartMesh,
    box,
    capsule,
    cone,
    ellipsoid,
    lathe,
    place,
    prism,
    rod,
    rotation,
    slab,
    torus,
    tube,
)

__all__ = ["build_airplane", "build_car", "build_motorbike", "build_rocket", "build_skateboard"]


def _half_wing(x_root, chord, tip, span, sweep, thick, side, *, y, dihedral=0.0):
    """One trapezoidal wing half in the (x, z) plane, root at z = 0, tip at z = side * span."""
    outline = [(x_root + chord / 2, 0), (x_root - chord / 2, 0),
               (x_root - sweep - tip / 2, side * span), (x_root - sweep + tip / 2, side * span)]
    mesh = place(slab(outline, thick), rotation=rotation("x", -side * dihedral))
    return place(mesh, offset=(0, y, 0))


def build_airplane(rng: np.random.Generator):
    """Airplane. Parts: body (0) capsule fuselage; wing (1) two swept trapezoids, low, mid or
    high, with dihedral; tail (2) stabilisers and a fin, conventional or T-tail; engine (3,
    optional) 0, 2 or 4 nacelles under the wings, or 2 beside the rear fuselage."""
    body, wing, tail, engine = CATEGORY_BY_NAME["Airplane"].parts
    m = PartMesh()
    length = rng.uniform(1.4, 2.6)
    r = length * rng.uniform(0.04, 0.1)
    m.add(body, place(capsule((-length / 2 + r, 0, 0), (length / 2 - r, 0, 0), r),
                      scale=(1, rng.uniform(0.9, 1.2), 1)))
    span = length * rng.uniform(0.35, 0.75)
    chord, x_wing = length * rng.uniform(0.12, 0.3), length * rng.uniform(-0.1, 0.12)
    tip, sweep = chord * rng.uniform(0.3, 0.8), chord * rng.uniform(0.0, 1.2)
    y_wing, dihedral = r * rng.uniform(-0.7, 0.7), rng.uniform(0, 0.12)
    for side in (-1, 1):
        m.add(wing, _half_wing(x_wing, chord, tip, span, sweep, r * 0.25, side, y=y_wing,
                               dihedral=dihedral))
    # tail: vertical fin plus horizontal stabilisers at its root or on its top
    tail_chord, fin_h = length * rng.uniform(0.1, 0.16), r * rng.uniform(2.5, 4.5)
    x_tail = -length / 2 + tail_chord * 0.7
    fin_sweep = tail_chord * rng.uniform(0.2, 0.8)
    fin = [(x_tail + tail_chord / 2, 0), (x_tail - tail_chord / 2, 0),
           (x_tail - tail_chord / 2 - fin_sweep * 0.3, fin_h),
           (x_tail - fin_sweep + tail_chord * 0.1, fin_h)]
    m.add(tail, prism(fin, r * 0.2))
    y_stab = fin_h * 0.95 if rng.random() < 0.25 else r * 0.2
    stab_span, stab_tip = span * rng.uniform(0.25, 0.4), tail_chord * rng.uniform(0.4, 0.8)
    for side in (-1, 1):
        m.add(tail, _half_wing(x_tail, tail_chord, stab_tip, stab_span, tail_chord * 0.4,
                               r * 0.18, side, y=y_stab))
    n_engines = rng.choice([0, 2, 4], p=[0.25, 0.5, 0.25])
    r_eng, l_eng = r * rng.uniform(0.35, 0.6), chord * rng.uniform(0.6, 1.0)
    if n_engines == 2 and rng.random() < 0.3:  # rear-mounted pair
        for side in (-1, 1):
            x = x_tail + tail_chord * 1.2
            m.add(engine, rod((x - l_eng / 2, r * 0.6, side * (r + r_eng)),
                              (x + l_eng / 2, r * 0.6, side * (r + r_eng)), r_eng))
    else:
        for frac in {0: (), 2: (0.35,), 4: (0.3, 0.65)}[n_engines]:
            for side in (-1, 1):
                x = x_wing - sweep * frac + chord * 0.35
                y = y_wing + frac * span * np.sin(dihedral) - r_eng * 1.3
                m.add(engine, rod((x - l_eng / 2, y, side * frac * span),
                                  (x + l_eng / 2, y, side * frac * span), r_eng))
    return m.build()


def build_car(rng: np.random.Generator):
    """Car (sedan, hatchback, SUV, pick-up, van or sports car). Parts: roof (8) the cabin; hood (9) the bonnet
    wedge in front of the windscreen; wheel (10) four cylinders; body (11) the lower hull (and a
    pick-up's bed walls)."""
    roof, hood, wheel, body = CATEGORY_BY_NAME["Car"].parts
    m = PartMesh()
    kind = rng.choice(["sedan", "hatch", "suv", "pickup", "van", "sports"])
    length = rng.uniform(1.8, 2.4)
    width = length * rng.uniform(0.36, 0.52)
    r_wheel = length * rng.uniform(0.07, 0.12)
    h_body = {"suv": (0.16, 0.22), "van": (0.18, 0.26), "sports": (0.08, 0.12)}.get(kind, (0.11, 0.16))
    h_body = length * rng.uniform(*h_body)
    y0 = r_wheel * rng.uniform(0.5, 0.9)
    y1, ch, half = y0 + h_body, h_body * rng.uniform(0.2, 0.45), length / 2
    hull = [(-half, y0 + ch), (-half + ch, y0), (half - ch, y0), (half, y0 + ch),
            (half, y1 - ch / 2), (half - ch, y1), (-half + ch / 2, y1), (-half, y1 - ch / 2)]
    m.add(body, prism(hull, width))
    hood_len = {"hatch": (0.18, 0.26), "suv": (0.18, 0.26), "van": (0.06, 0.14),
                "sports": (0.3, 0.4)}.get(kind, (0.24, 0.34))
    hood_len = length * rng.uniform(*hood_len)
    x_shield, t_hood = half - hood_len, h_body * 0.12
    bonnet = [(x_shield, y1), (half - ch, y1), (half - ch, y1 + t_hood),
              (x_shield, y1 + t_hood + h_body * rng.uniform(0.05, 0.25))]
    m.add(hood, prism(bonnet, width * 0.96))
    h_cab = h_body * (rng.uniform(0.7, 1.1) if kind in ("suv", "van") else rng.uniform(0.5, 0.85))
    if kind == "pickup":
        x_back = x_shield - length * rng.uniform(0.2, 0.28)
        bed_h, wall = h_body * rng.uniform(0.3, 0.5), width * 0.05
        x_end = -half + ch / 2
        for z in (-1, 1):
            m.add(body, box((x_back - x_end, bed_h, wall),
                            center=((x_back + x_end) / 2, y1 + bed_h / 2, z * (width / 2 - wall / 2))))
        m.add(body, box((wall, bed_h, width), center=(-half + ch / 2 + wall / 2, y1 + bed_h / 2, 0)))
    elif kind in ("sedan", "sports"):
        x_back = x_shield - length * rng.uniform(0.3, 0.45)
    else:
        x_back = -half + ch / 2
    slant_front, slant_back = h_cab * rng.uniform(0.6, 1.4), h_cab * rng.uniform(0.1, 0.9)
    cabin = [(x_shield, y1), (x_back, y1), (x_back + slant_back, y1 + h_cab),
             (x_shield - slant_front, y1 + h_cab)]
    m.add(roof, prism(cabin, width * rng.uniform(0.84, 0.94)))
    w_wheel, x_axle = width * rng.uniform(0.15, 0.24), half - length * rng.uniform(0.15, 0.22)
    for x in (-x_axle, x_axle):
        for z in (-1, 1):
            outer = z * (width / 2 + 0.01)
            m.add(wheel, rod((x, r_wheel, outer - z * w_wheel), (x, r_wheel, outer), r_wheel, sections=16))
    return m.build()


def build_motorbike(rng: np.random.Generator):
    """Motorbike. Parts: tank (30) ellipsoid; seat (31) slab; wheel (32) tyre torus plus hub
    disc, two; handle (33) handlebar tube; light (34) headlamp; frame (35) tubes, fork and
    engine block."""
    tank, seat, wheel, handle, light, frame = CATEGORY_BY_NAME["Motorbike"].parts
    m = PartMesh()
    r_wheel, base = rng.uniform(0.2, 0.38), rng.uniform(1.1, 1.8)
    tyre = r_wheel * rng.uniform(0.18, 0.3)
    hub = (r_wheel - tyre) * rng.uniform(0.3, 0.6)
    for x in (-base / 2, base / 2):
        m.add(wheel, torus((x, r_wheel, 0), r_wheel - tyre, tyre, axis="z", sections=20),
              rod((x, r_wheel, -tyre * 0.4), (x, r_wheel, tyre * 0.4), hub, sections=12))
    height, rake = rng.uniform(0.45, 0.85), rng.uniform(0.25, 0.75)
    head = np.array([base / 2 - height * np.tan(rake), r_wheel + height, 0])
    seat_pt = np.array([-base * rng.uniform(0.1, 0.2), r_wheel + height * rng.uniform(0.75, 0.9), 0])
    rear, low = np.array([-base / 2, r_wheel, 0]), np.array([0.0, r_wheel * 0.8, 0])
    tr = rng.uniform(0.025, 0.04)
    for z in (-0.08, 0.08):  # fork legs
        m.add(frame, rod((base / 2, r_wheel, z), head + (0, 0, z), tr))
    m.add(frame, tube(np.array([rear, seat_pt, head, low, rear]), tr, sections=8))
    engine = rng.uniform(0.28, 0.4)
    m.add(frame, box((engine, engine * rng.uniform(0.7, 1.0), engine * 0.7),
                     center=(low[0] + engine * 0.1, low[1] + engine * 0.45, 0)))
    tank_c = (seat_pt + head) / 2 + (0.05, height * 0.12, 0)
    t_len = np.linalg.norm(head - seat_pt) * rng.uniform(0.25, 0.4)
    m.add(tank, ellipsoid(tank_c, (t_len, rng.uniform(0.08, 0.13), rng.uniform(0.1, 0.15))))
    s_len = rng.uniform(0.3, 0.5)
    m.add(seat, box((s_len, 0.06, rng.uniform(0.16, 0.24)),
                    center=(tank_c[0] - t_len - s_len / 2 + 0.03, seat_pt[1] + 0.04, 0),
                    rotation=rotation("z", rng.uniform(-0.15, 0.1))))
    hw, rise = rng.uniform(0.22, 0.36), rng.uniform(0.05, 0.2)
    top = head + (-0.03, rise, 0)
    bar = np.array([top + (-0.08, 0.04, -hw), top + (0, 0, -hw * 0.5), top, top + (0, 0, hw * 0.5),
                    top + (-0.08, 0.04, hw)])
    m.add(handle, tube(bar, 0.02, sections=6), rod(head, top, 0.02, sections=6))
    lamp_r = rng.uniform(0.05, 0.09)
    m.add(light, rod(head + (0.04, -0.08, 0), head + (0.04 + lamp_r, -0.08, 0), lamp_r))
    return m.build()


def build_rocket(rng: np.random.Generator):
    """Rocket standing along +y. Parts: body (41) one- or two-stage hull and optional side
    boosters; fin (42) 3, 4 or 6 trapezoids at the base; nose (43) cone to ogive (and the
    boosters' tips)."""
    body, fin, nose = CATEGORY_BY_NAME["Rocket"].parts
    m = PartMesh()
    h, r = rng.uniform(1.0, 2.6), rng.uniform(0.08, 0.25)
    if rng.random() < 0.4:  # two stages: narrower upper stage
        r2, h1 = r * rng.uniform(0.6, 0.85), h * rng.uniform(0.4, 0.65)
        profile = [(0, 0), (r, 0), (r, h1), (r2, h1 + r * 0.3), (r2, h)]
    else:
        r2, profile = r, [(0, 0), (r, 0), (r, h)]
    m.add(body, lathe(profile, sections=20))
    h_nose, p = r2 * rng.uniform(1.5, 4.0), rng.uniform(1.0, 2.5)
    t = np.linspace(0, 1, 8)
    m.add(nose, lathe(np.column_stack([r2 * (1 - t ** p), h + h_nose * t]), sections=20))
    n_fins = rng.choice([3, 4, 6])
    f_h, f_s = h * rng.uniform(0.12, 0.3), r * rng.uniform(0.8, 2.2)
    f_sweep = f_h * rng.uniform(0.0, 0.7)
    fin_outline = [(r * 0.9, 0), (r + f_s, -f_h * 0.15), (r + f_s, f_h * 0.4 - f_sweep * 0.2),
                   (r * 0.9, f_h)]
    for k in range(n_fins):
        m.add(fin, place(prism(fin_outline, r * 0.12), rotation=rotation("y", 2 * np.pi * k / n_fins)))
    if rng.random() < 0.3:
        rb, hb = r * rng.uniform(0.3, 0.5), h * rng.uniform(0.3, 0.55)
        for k in range(rng.choice([2, 4])):
            a = np.pi * k / 2 + np.pi / 4 * (n_fins != 4)
            c = np.array([np.cos(a), 0, -np.sin(a)]) * (r + rb)
            m.add(body, rod(c, c + (0, hb, 0), rb, sections=12))
            m.add(nose, cone(c + (0, hb, 0), c + (0, hb + rb * 2.5, 0), rb, sections=12))
    return m.build()


def _stadium(length: float, width: float, *, n: int = 8) -> np.ndarray:
    """(K, 2) outline of a rectangle with semicircular ends, centred, along the first axis."""
    a = np.linspace(-np.pi / 2, np.pi / 2, n)
    right = np.column_stack([length / 2 - width / 2 + width / 2 * np.cos(a), width / 2 * np.sin(a)])
    return np.concatenate([right, -right])


def _rounded_end(length: float, width: float, *, n: int = 8) -> np.ndarray:
    """(K, 2) convex outline from x = 0 to x = ``length``: straight sides, an elliptic round end."""
    start = max(length - width / 2, 0.0)
    a = np.linspace(-np.pi / 2, np.pi / 2, n)
    arc = np.column_stack([start + (length - start) * np.cos(a), width / 2 * np.sin(a)])
    return np.concatenate([[(0.0, -width / 2)], arc, [(0.0, width / 2)]]) if start > 0 else arc


def build_skateboard(rng: np.random.Generator):
    """Skateboard or longboard along x. Parts: wheel (44) four short cylinders; deck (45) the
    board with optional kicked-up tails; truck (46) base plates and axles."""
    wheel, deck, truck = CATEGORY_BY_NAME["Skateboard"].parts
    m = PartMesh()
    longboard = rng.random() < 0.3
    length = rng.uniform(1.9, 2.5) if longboard else rng.uniform(1.5, 2.0)
    width, t = length * rng.uniform(0.18, 0.34), length * rng.uniform(0.012, 0.025)
    r_wheel = length * (rng.uniform(0.03, 0.06) if longboard else rng.uniform(0.02, 0.045))
    h_truck = r_wheel * rng.uniform(0.8, 2.0)
    y_deck = r_wheel + h_truck + t / 2
    if longboard or rng.random() < 0.2:
        m.add(deck, slab(_stadium(length, width), t, y=y_deck))
    else:  # flat middle plus two tails bent upwards
        mid = length * rng.uniform(0.62, 0.72)
        m.add(deck, slab([(mid / 2, width / 2), (-mid / 2, width / 2), (-mid / 2, -width / 2),
                           (mid / 2, -width / 2)], t, y=y_deck))
        tail = _rounded_end((length - mid) / 2, width)
        for side, kick in ((1, rng.uniform(0.1, 0.6)), (-1, rng.uniform(0.1, 0.6))):
            piece = place(slab(tail * (side, 1), t), rotation=rotation("z", side * kick))
            m.add(deck, place(piece, offset=(side * mid / 2, y_deck, 0)))
    x_truck = length * rng.uniform(0.26, 0.34)
    axle = width * rng.uniform(0.75, 0.95)
    for x in (-x_truck, x_truck):
        m.add(truck, box((width * 0.3, h_truck * 0.5, width * 0.35),
                         center=(x, y_deck - t / 2 - h_truck * 0.25, 0)),
              rod((x, r_wheel, -axle / 2), (x, r_wheel, axle / 2), r_wheel * 0.25, sections=8))
        for z in (-1, 1):
            m.add(wheel, rod((x, r_wheel, z * axle / 2), (x, r_wheel, z * (axle / 2 + r_wheel * 1.2)),
                             r_wheel, sections=14))
    return m.build()
