"""Small triangle-mesh builders the synthetic shapes are assembled from.

Every builder returns a ``Mesh``: ``(vertices (V, 3) float64, faces (F, 3) int64)`` with each
triangle wound counter-clockwise seen from outside, so face normals point outwards (signed
volume > 0 for the closed ones). Boxes, cylinders, cones, spheres, capsules and tori come from
``trimesh.creation``; surfaces of revolution (:func:`lathe`), swept tubes (:func:`tube`) and
extruded outlines (:func:`prism`) are built here because trimesh has no dependency-free
version of them. Coordinates follow the synthetic set's convention: **y is up**.

:class:`PartMesh` collects meshes with one part id per face into one labelled mesh.
"""

from __future__ import annotations

import numpy as np

from ... import _validate as V

__all__ = [
    "Mesh",
    "PartMesh",
    "arc",
    "box",
    "capsule",
    "cone",
    "ellipsoid",
    "lathe",
    "place",
    "prism",
    "rod",
    "rotation",
    "slab",
    "torus",
    "tube",
]


def _creation():
    """``trimesh.creation``, imported on first use: every training command imports this package
    (the OFF loader samples with it) and trimesh with scipy costs about 2 s to import."""
    import trimesh.creation

    return trimesh.creation

Mesh = tuple[np.ndarray, np.ndarray]
_AXES = {"x": 0, "y": 1, "z": 2}


def rotation(axis: str, angle: float) -> np.ndarray:
    """(3, 3) right-handed rotation by ``angle`` radians about the named axis ``"x"|"y"|"z"``."""
    V.check_choice("axis", axis, _AXES)
    i, j = [k for k in range(3) if k != _AXES[axis]]
    c, s = np.cos(angle), np.sin(angle)
    r = np.eye(3)
    r[i, i], r[i, j], r[j, i], r[j, j] = c, -s, s, c
    if axis == "y":  # keep it right-handed: z -> x is the positive sense about y
        r = r.T
    return r


def _frame_from_z(direction: np.ndarray) -> np.ndarray:
    """(3, 3) rotation taking +z onto the unit vector ``direction`` (Rodrigues)."""
    d = direction / np.linalg.norm(direction)
    c = d[2]
    if c < -1 + 1e-9:
        return np.diag([1.0, -1.0, -1.0])
    v = np.array([-d[1], d[0], 0.0])  # z x d
    vx = np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])
    return np.eye(3) + vx + vx @ vx / (1 + c)


def place(mesh: Mesh, *, rotation: np.ndarray | None = None, scale=None, offset=None) -> Mesh:
    """Scale (per axis, positive), then rotate (3, 3), then translate (3,) a mesh; returns a copy."""
    v, f = mesh
    v = np.asarray(v, dtype=np.float64)
    if scale is not None:
        v = v * np.asarray(scale, dtype=np.float64)
    if rotation is not None:
        v = v @ np.asarray(rotation).T
    if offset is not None:
        v = v + np.asarray(offset, dtype=np.float64)
    return v, f


def _tm(mesh) -> Mesh:
    return np.asarray(mesh.vertices, dtype=np.float64), np.asarray(mesh.faces, dtype=np.int64)


def box(size, *, center=(0.0, 0.0, 0.0), rotation: np.ndarray | None = None) -> Mesh:
    """Box of extents ``size`` (3,), rotated about its centre, centred at ``center``."""
    return place(_tm(_creation().box(extents=size)), rotation=rotation, offset=center)


def rod(p0, p1, radius: float, *, sections: int = 12) -> Mesh:
    """Closed cylinder of ``radius`` whose axis runs from point ``p0`` to point ``p1``."""
    segment = np.array([p0, p1], dtype=float)
    return _tm(_creation().cylinder(radius=radius, segment=segment, sections=sections))


def cone(p0, p1, radius: float, *, sections: int = 16) -> Mesh:
    """Closed cone: base disc of ``radius`` centred at ``p0``, apex at ``p1``."""
    p0, p1 = np.asarray(p0, float), np.asarray(p1, float)
    mesh = _tm(_creation().cone(radius=radius, height=np.linalg.norm(p1 - p0), sections=sections))
    return place(mesh, rotation=_frame_from_z(p1 - p0), offset=p0)


def capsule(p0, p1, radius: float, *, count: int = 10) -> Mesh:
    """Cylinder with hemispherical ends of ``radius`` whose end centres are ``p0`` and ``p1``."""
    p0, p1 = np.asarray(p0, float), np.asarray(p1, float)
    mesh = _tm(_creation().capsule(height=np.linalg.norm(p1 - p0), radius=radius, count=[count, count]))
    return place(mesh, rotation=_frame_from_z(p1 - p0), offset=(p0 + p1) / 2)


def ellipsoid(center, radii, *, subdivisions: int = 2) -> Mesh:
    """Ellipsoid with semi-axes ``radii`` (3,) along x, y, z centred at ``center``."""
    return place(_tm(_creation().icosphere(subdivisions=subdivisions)), scale=radii, offset=center)


def torus(center, major: float, minor: float, *, axis="y", sections: int = 24) -> Mesh:
    """Closed torus around ``axis`` (a name or a (3,) vector) through ``center``."""
    direction = np.eye(3)[_AXES[axis]] if isinstance(axis, str) else np.asarray(axis, float)
    mesh = _tm(_creation().torus(major, minor, major_sections=sections, minor_sections=max(6, sections // 3)))
    return place(mesh, rotation=_frame_from_z(direction), offset=center)


def _grid_faces(idx: np.ndarray, *, wrap: bool = True) -> np.ndarray:
    """Two triangles per cell of an index grid ``idx`` (K rings, S around); drops collapsed ones.

    Rings run along the first axis, the around-direction along the second; with the surface
    parametrised so that (around x along) points outwards, the triangles face outwards.
    """
    nxt = np.roll(idx, -1, axis=1) if wrap else idx[:, 1:]
    cur = idx if wrap else idx[:, :-1]
    a, b = cur[:-1], nxt[:-1]
    c, d = nxt[1:], cur[1:]
    faces = np.concatenate([np.stack([a, b, c], -1).reshape(-1, 3),
                            np.stack([a, c, d], -1).reshape(-1, 3)])
    keep = (faces[:, 0] != faces[:, 1]) & (faces[:, 1] != faces[:, 2]) & (faces[:, 0] != faces[:, 2])
    return faces[keep]


def lathe(profile, *, sections: int = 24) -> Mesh:
    """Surface of revolution about the y axis.

    Args:
        profile: (K, 2) points ``(r, y)``, r >= 0, traversed counter-clockwise in the (r, y)
            half-plane (outer walls going up, inner walls going down) so normals face outwards;
            points with r == 0 become single pole vertices. An open profile gives an open
            surface (e.g. a lamp shade), one that starts and ends on the axis a closed solid.
        sections: vertices around each ring.
    """
    profile = np.asarray(profile, dtype=np.float64)
    if profile.ndim != 2 or profile.shape[1] != 2 or len(profile) < 2:
        raise ValueError(f"profile must have shape (K, 2) with K >= 2, got {profile.shape}")
    theta = 2 * np.pi * np.arange(sections) / sections
    verts, idx = [], np.zeros((len(profile), sections), dtype=np.int64)
    n = 0
    for k, (r, y) in enumerate(profile):
        if r <= 1e-12:
            verts.append([[0.0, y, 0.0]])
            idx[k] = n
            n += 1
        else:  # (r cos t, y, -r sin t): counter-clockwise seen from +y
            verts.append(np.stack([r * np.cos(theta), np.full(sections, y), -r * np.sin(theta)], 1))
            idx[k] = n + np.arange(sections)
            n += sections
    return np.concatenate(verts), _grid_faces(idx)


def _transport_frames(path: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Tangents, normals and binormals (K, 3) along a polyline, by parallel transport."""
    tangent = np.gradient(path, axis=0)
    tangent /= np.linalg.norm(tangent, axis=1, keepdims=True)
    seed = np.eye(3)[np.argmin(np.abs(tangent[0]))]
    normals = np.empty_like(path)
    n = seed - seed @ tangent[0] * tangent[0]
    for k in range(len(path)):
        n = n - n @ tangent[k] * tangent[k]
        n /= np.linalg.norm(n)
        normals[k] = n
    return tangent, normals, np.cross(tangent, normals)


def tube(path, radius, *, sections: int = 8, caps: bool = True) -> Mesh:
    """A tube of ``radius`` (scalar or (K,)) swept along the polyline ``path`` (K, 3), K >= 2.

    ``caps`` closes both ends with flat discs. Consecutive path points must differ.
    """
    path = np.asarray(path, dtype=np.float64)
    if path.ndim != 2 or path.shape[1] != 3 or len(path) < 2:
        raise ValueError(f"path must have shape (K, 3) with K >= 2, got {path.shape}")
    t, nrm, bi = _transport_frames(path)
    theta = 2 * np.pi * np.arange(sections) / sections
    r = np.broadcast_to(np.asarray(radius, dtype=np.float64), (len(path),))[:, None, None]
    around = np.cos(theta)[None, :, None] * nrm[:, None] + np.sin(theta)[None, :, None] * bi[:, None]
    verts = (path[:, None] + r * around).reshape(-1, 3)  # (K * S, 3)
    idx = np.arange(len(verts)).reshape(len(path), sections)
    # around x along = b x t = n: outwards with the rings ordered along the path
    faces = [_grid_faces(idx)]
    if caps:
        start, end = len(verts), len(verts) + 1
        verts = np.concatenate([verts, path[[0, -1]]])
        ring0, ring1 = idx[0], idx[-1]
        faces.append(np.stack([np.full(sections, start), np.roll(ring0, -1), ring0], 1))
        faces.append(np.stack([np.full(sections, end), ring1, np.roll(ring1, -1)], 1))
    return verts, np.concatenate(faces)


def arc(center, radius: float, start: float, stop: float, *, n: int = 12, plane: str = "xy"):
    """(n, 3) points on a circular arc from angle ``start`` to ``stop`` (radians) in ``plane``.

    Angles are measured from the plane's first axis towards its second (``"xy"``: from +x to +y).
    """
    a = np.linspace(start, stop, n)
    pts = np.zeros((n, 3))
    pts[:, _AXES[plane[0]]] = radius * np.cos(a)
    pts[:, _AXES[plane[1]]] = radius * np.sin(a)
    return pts + np.asarray(center, dtype=np.float64)


def prism(outline, thickness: float) -> Mesh:
    """Extrude a 2D outline (K, 2) in the xy plane to a slab from z = -t/2 to z = +t/2.

    The outline must be star-shaped around its vertex mean (convex outlines always are); it is
    triangulated as a fan from that centre. Either winding is accepted.
    """
    outline = np.asarray(outline, dtype=np.float64)
    if outline.ndim != 2 or outline.shape[1] != 2 or len(outline) < 3:
        raise ValueError(f"outline must have shape (K, 2) with K >= 3, got {outline.shape}")
    x, y = outline[:, 0], outline[:, 1]
    if np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1)) < 0:  # make it counter-clockwise
        outline = outline[::-1]
    k, h = len(outline), thickness / 2
    center = outline.mean(0)
    bottom = np.column_stack([outline, np.full(k, -h)])
    top = np.column_stack([outline, np.full(k, h)])
    verts = np.concatenate([bottom, top, [[*center, -h], [*center, h]]])
    i = np.arange(k)
    j = np.roll(i, -1)
    faces = np.concatenate([
        np.stack([np.full(k, 2 * k + 1), k + i, k + j], 1),  # top, facing +z
        np.stack([np.full(k, 2 * k), j, i], 1),  # bottom, facing -z
        np.stack([i, j, k + j], 1), np.stack([i, k + j, k + i], 1),  # sides
    ])
    return verts, faces


def slab(outline_xz, thickness: float, *, y: float = 0.0) -> Mesh:
    """A horizontal :func:`prism`: ``outline_xz`` (K, 2) in the (x, z) plane, ``thickness`` along y,
    centred on height ``y``."""
    return place(prism(outline_xz, thickness), rotation=rotation("x", np.pi / 2), offset=(0, y, 0))


class PartMesh:
    """Accumulates meshes, each with one part id, into one labelled triangle mesh."""

    def __init__(self):
        self._verts, self._faces, self._parts, self._count = [], [], [], 0

    def add(self, part: int, *meshes: Mesh) -> PartMesh:
        """Append ``meshes``, labelling every one of their faces with global part id ``part``."""
        for v, f in meshes:
            self._verts.append(v)
            self._faces.append(f + self._count)
            self._parts.append(np.full(len(f), part, dtype=np.int64))
            self._count += len(v)
        return self

    def build(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(vertices (V, 3) float64, faces (F, 3) int64, face_part (F,) int64)``."""
        if not self._faces:
            raise ValueError("PartMesh is empty: add at least one mesh before build()")
        return np.concatenate(self._verts), np.concatenate(self._faces), np.concatenate(self._parts)
