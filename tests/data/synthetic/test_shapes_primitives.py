import numpy as np
import pytest

from pointabstract.data.synthetic.shapes_primitives import (
    PartMesh,
    arc,
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
from pointabstract.data.synthetic.surface import triangle_areas_normals


def _volume(mesh):
    """Signed volume: positive when every face is wound counter-clockwise seen from outside."""
    v, f = mesh
    a, b, c = (v[f[:, i]] for i in range(3))
    return np.einsum("ij,ij->i", a, np.cross(b, c)).sum() / 6


CLOSED = {
    "box": (box((1, 2, 3), center=(1, 0, 0)), 6.0),
    "rod": (rod((0, 0, 0), (0, 2, 0), 0.5, sections=64), np.pi * 0.25 * 2),
    "cone": (cone((0, 0, 0), (1, 1, 0), 0.5, sections=64), np.pi * 0.25 * np.sqrt(2) / 3),
    "capsule": (capsule((0, 0, 0), (0, 0, 1), 0.5, count=32), np.pi * 0.25 + 4 / 3 * np.pi * 0.125),
    "ellipsoid": (ellipsoid((0, 1, 0), (1, 2, 3), subdivisions=4), 4 / 3 * np.pi * 6),
    "torus": (torus((0, 0, 0), 1.0, 0.2, axis=(1, 1, 0), sections=64), 2 * np.pi ** 2 * 0.04),
    "lathe": (lathe([(0, 0), (1, 0), (1, 2), (0, 2)], sections=128), 2 * np.pi),
    "cup": (lathe([(0, 0), (1, 0), (1, 1), (0.5, 1), (0.5, 0.5), (0, 0.5)], sections=128),
            np.pi * (1 - 0.25 * 0.5)),
    "tube": (tube([(0, 0, 0), (0, 0, 1), (0, 0, 2)], 0.5, sections=128), np.pi * 0.25 * 2),
    "prism": (prism([(0, 0), (2, 0), (2, 1), (0, 1)], 0.5), 1.0),
    "prism_cw": (prism([(0, 1), (2, 1), (2, 0), (0, 0)], 0.5), 1.0),
    "slab": (slab([(0, 0), (1, 0), (1, 1), (0, 1)], 0.1, y=3), 0.1),
}


@pytest.mark.parametrize("name", list(CLOSED))
def test_closed_meshes_face_outwards_with_the_right_volume(name):
    mesh, volume = CLOSED[name]
    v, f = mesh
    assert v.dtype == np.float64 and v.shape[1] == 3 and f.shape[1] == 3
    assert f.min() >= 0 and f.max() < len(v)
    assert _volume(mesh) == pytest.approx(volume, rel=0.02)


def test_rotation_is_right_handed_about_each_axis():
    assert np.allclose(rotation("x", np.pi / 2) @ (0, 1, 0), (0, 0, 1))
    assert np.allclose(rotation("y", np.pi / 2) @ (0, 0, 1), (1, 0, 0))
    assert np.allclose(rotation("z", np.pi / 2) @ (1, 0, 0), (0, 1, 0))
    r = rotation("y", 0.7)
    assert np.allclose(r @ r.T, np.eye(3)) and np.linalg.det(r) == pytest.approx(1)


def test_slab_lies_flat_and_open_lathe_faces_away_from_the_axis():
    v, _ = slab([(0, 0), (1, 0), (1, 2), (0, 2)], 0.2, y=1.0)
    assert np.allclose(np.sort(np.unique(v[:, 1].round(6))), [0.9, 1.1])
    assert v[:, 2].max() == pytest.approx(2)  # the outline's second axis becomes z
    v, f = lathe([(1.0, 0.0), (0.5, 1.0)], sections=16)  # an open frustum (lamp shade)
    _, normals = triangle_areas_normals(v, f)
    centres = v[f].mean(1)
    assert ((normals[:, [0, 2]] * centres[:, [0, 2]]).sum(1) > 0).all()


def test_rod_cone_capsule_span_their_end_points():
    v, _ = rod((0, 0, 0), (0, 0, 3), 0.5)
    assert v[:, 2].min() == pytest.approx(0) and v[:, 2].max() == pytest.approx(3)
    v, _ = cone((1, 0, 0), (1, 2, 0), 0.3)
    assert v[:, 1].min() == pytest.approx(0) and v[:, 1].max() == pytest.approx(2)
    v, _ = capsule((0, 0, 0), (2, 0, 0), 0.5)
    assert v[:, 0].min() == pytest.approx(-0.5) and v[:, 0].max() == pytest.approx(2.5)


def test_arc_and_place():
    pts = arc((1, 0, 0), 2.0, 0, np.pi, n=3, plane="xy")
    assert np.allclose(pts, [(3, 0, 0), (1, 2, 0), (-1, 0, 0)])
    v, _ = place(box((1, 1, 1)), scale=(2, 1, 1), rotation=rotation("z", np.pi / 2), offset=(0, 0, 5))
    assert np.allclose(v.min(0), (-0.5, -1, 4.5)) and np.allclose(v.max(0), (0.5, 1, 5.5))


def test_part_mesh_labels_every_face_and_offsets_indices():
    a, b = box((1, 1, 1)), rod((0, 0, 0), (0, 1, 0), 0.1)
    v, f, part = PartMesh().add(3, a).add(7, b, b).build()
    assert len(v) == len(a[0]) + 2 * len(b[0]) and len(f) == len(part)
    assert (part[:12] == 3).all() and (part[12:] == 7).all()
    assert f.max() == len(v) - 1
    assert np.allclose(v[f[-1]], b[0][b[1][-1]])


@pytest.mark.parametrize("call, match", [
    (lambda: rotation("w", 1.0), "axis must be"),
    (lambda: lathe([(1, 0)]), "profile must have shape"),
    (lambda: tube([(0, 0, 0)], 0.1), "path must have shape"),
    (lambda: prism([(0, 0), (1, 1)], 0.1), "outline must have shape"),
    (lambda: PartMesh().build(), "PartMesh is empty"),
])
def test_bad_input_is_refused(call, match):
    with pytest.raises(ValueError, match=match):
        call()
