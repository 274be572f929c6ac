import numpy as np
import pytest

trimesh = pytest.importorskip("trimesh")

from pointabstract.interop.trimesh import sample_trimesh  # noqa: E402


def test_points_lie_on_the_box_with_its_face_normals():
    box = trimesh.creation.box(extents=(2.0, 4.0, 6.0))
    sample = sample_trimesh(box, 500, rng=0)
    pos, normal = sample["pos"], sample["normal"]
    assert pos.shape == (500, 3) and pos.dtype == np.float32 and normal.dtype == np.float32
    half = np.array([1.0, 2.0, 3.0])
    on_face = np.isclose(np.abs(pos), half, atol=1e-5)  # every point is on one face of the box
    assert on_face.any(1).all()
    axis = np.abs(normal).argmax(1)  # its normal points out through that face
    assert on_face[np.arange(500), axis].all()
    np.testing.assert_allclose(np.sign(normal[np.arange(500), axis]), np.sign(pos[np.arange(500), axis]))
    # area-weighted: the two 4 x 6 faces (normal along x) hold 48 of the 88 area units
    share = (axis == 0).mean()
    assert abs(share - 48 / 88) < 0.06


def test_seeded_scene_and_face_labels():
    sphere = trimesh.creation.icosphere(subdivisions=2)
    a = sample_trimesh(sphere, 100, rng=3)
    b = sample_trimesh(sphere, 100, rng=np.random.default_rng(3))
    np.testing.assert_array_equal(a["pos"], b["pos"])
    labels = (sphere.triangles_center[:, 2] > 0).astype(np.int64)  # upper half = part 1
    s = sample_trimesh(sphere, 300, rng=1, face_labels=labels)
    z = s["pos"][:, 2]  # faces are ~0.3 across: away from the equator the label follows z
    assert (s["part"][z > 0.4] == 1).all() and (s["part"][z < -0.4] == 0).all()
    assert 0.3 < s["part"].mean() < 0.7
    scene = trimesh.Scene([sphere, sphere.copy().apply_translation([5.0, 0, 0])])
    both = sample_trimesh(scene, 400, rng=2)
    assert (both["pos"][:, 0] > 2.5).any() and (both["pos"][:, 0] < 2.5).any()


@pytest.mark.parametrize("call,error,match", [
    (lambda: sample_trimesh(np.zeros((3, 3)), 10), TypeError, "mesh must be a trimesh.Trimesh"),
    (lambda: sample_trimesh(trimesh.creation.box(), 0), ValueError, "n must be a positive int"),
    (lambda: sample_trimesh(trimesh.creation.box(), 5, face_labels=[1, 2]), ValueError, r"face_labels must have shape \(F,\)"),
])
def test_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()
