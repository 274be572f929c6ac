import numpy as np
import pytest

from pointabstract.data import sample_surface


def _unit_square_and_big_triangle():
    # a unit square (2 triangles, area 1) at z = 0 and a triangle of area 3 at z = 5
    v = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [0, 0, 5], [3, 0, 5], [0, 2, 5]], float)
    f = np.array([[0, 1, 2], [0, 2, 3], [4, 5, 6]])
    return v, f


def test_points_lie_on_faces_with_area_weights_and_normals():
    v, f = _unit_square_and_big_triangle()
    pts, normals, labels = sample_surface(v, f, 20000, np.random.default_rng(0),
                                          face_labels=np.array([7, 7, 9]))
    assert pts.shape == normals.shape == (20000, 3) and pts.dtype == np.float32
    on_square = labels == 7
    assert abs(on_square.mean() - 0.25) < 0.02  # area 1 of 4
    assert np.allclose(pts[on_square, 2], 0) and np.allclose(pts[~on_square, 2], 5)
    assert (pts[on_square, :2] >= 0).all() and (pts[on_square, :2] <= 1).all()
    top = pts[~on_square]
    assert (top[:, 0] / 3 + top[:, 1] / 2 <= 1 + 1e-5).all()  # inside the big triangle
    assert np.allclose(np.abs(normals[:, 2]), 1)
    assert abs(pts[on_square, 0].mean() - 0.5) < 0.02  # uniform inside the square


def test_reproducible_and_refuses_empty_meshes():
    v, f = _unit_square_and_big_triangle()
    a = sample_surface(v, f, 50, np.random.default_rng(1))
    b = sample_surface(v, f, 50, np.random.default_rng(1))
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    with pytest.raises(ValueError, match="no triangle of positive finite area"):
        sample_surface(np.zeros((3, 3)), np.array([[0, 1, 2]]), 5, np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"faces must have shape \(F, 3\) with F > 0"):
        sample_surface(v, np.zeros((0, 3), int), 5, np.random.default_rng(0))
