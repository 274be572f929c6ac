import numpy as np
import pytest

from pointabstract.viz.core.software import splat, splat_naive


def _camera(width, height, *, f=40.0, eye_z=5.0):
    """A camera at (0, 0, eye_z) looking down -z, y up on screen."""
    intrinsic = np.array([[f, 0, width / 2 - 0.5], [0, f, height / 2 - 0.5], [0, 0, 1]])
    extrinsic = np.diag([1.0, -1.0, -1.0, 1.0])
    extrinsic[2, 3] = eye_z
    return intrinsic, extrinsic


def _points(xyz, colors, size):
    xyz = np.asarray(xyz, float)
    return {"kind": "points", "name": "p", "point_size": size, "points": xyz,
            "colors": np.broadcast_to(np.asarray(colors, float), xyz.shape).copy()}


def test_a_point_at_the_optical_axis_lands_on_the_centre_pixel_with_its_exact_colour():
    intrinsic, extrinsic = _camera(9, 7)
    img = splat([_points([[0.0, 0.0, 0.0]], [0.86, 0.08, 0.08], 1.0)], intrinsic, extrinsic, (1, 1, 1), 9, 7)
    assert img.shape == (7, 9, 3) and img.dtype == np.uint8
    red = np.argwhere((img == [219, 20, 20]).all(-1))
    assert red.tolist() == [[3, 4]]  # row 3, column 4: the centre of a 9 x 7 image
    assert (img.reshape(-1, 3) == 255).all(1).sum() == 9 * 7 - 1


def test_hand_computed_projection_disc_size_and_depth_order():
    intrinsic, extrinsic = _camera(20, 20, f=10.0, eye_z=5.0)
    # x = 1 at depth 5 projects to column 9.5 + 10 * 1 / 5 = 11.5 -> 12 (rint of .5 is even: 12)
    img = splat([_points([[1.0, 0.0, 0.0]], [0, 0, 1], 1.0)], intrinsic, extrinsic, (1, 1, 1), 20, 20)
    assert np.argwhere((img == [0, 0, 255]).all(-1)).tolist() == [[10, 12]]  # row 9.5 -> 10
    # a splat of size 3 covers the 3 x 3 block around the centre pixel
    img = splat([_points([[0.0, 0.0, 0.0]], [0, 0, 1], 3.0)], intrinsic, extrinsic, (1, 1, 1), 20, 20)
    assert (img == [0, 0, 255]).all(-1).sum() == 9
    # two points on the same ray: the nearer one (z = 1, closer to the eye at z = 5) wins, in either order
    near, far = _points([[0.0, 0.0, 1.0]], [1, 0, 0], 3.0), _points([[0.0, 0.0, -1.0]], [0, 1, 0], 3.0)
    for items in ([near, far], [far, near]):
        img = splat(items, intrinsic, extrinsic, (1, 1, 1), 20, 20)
        assert (img == [255, 0, 0]).all(-1).sum() == 9 and not (img == [0, 255, 0]).all(-1).any()


def test_equal_depth_goes_to_the_item_drawn_last():
    intrinsic, extrinsic = _camera(10, 10)
    first, last = _points([[0.0, 0.0, 0.0]], [1, 0, 0], 5.0), _points([[0.0, 0.0, 0.0]], [0, 0, 1], 3.0)
    img = splat([first, last], intrinsic, extrinsic, (1, 1, 1), 10, 10)
    assert (img == [0, 0, 255]).all(-1).sum() == 9  # the later, smaller splat shows whole
    assert (img == [255, 0, 0]).all(-1).sum() == 25 - 9  # a size-5 splat has 25 pixels


def test_a_triangle_covers_the_pixels_inside_it_and_hides_points_behind_it():
    intrinsic, extrinsic = _camera(40, 40, f=20.0)
    tri = {"kind": "mesh", "name": "t", "point_size": 1.0, "triangles": np.array([[0, 1, 2]]),
           "vertices": np.array([[-2.0, -2.0, 0.0], [2.0, -2.0, 0.0], [0.0, 2.0, 0.0]]),
           "colors": np.tile([0.0, 1.0, 0.0], (3, 1))}
    behind = _points([[0.0, 0.0, -1.0]], [1, 0, 0], 3.0)
    img = splat([tri, behind], intrinsic, extrinsic, (1, 1, 1), 40, 40)
    green = (img == [0, 255, 0]).all(-1)
    # projected: base from column 11.5 to 27.5 at row 27.5, apex at row 11.5: area 16 * 16 / 2 = 128
    assert 110 <= green.sum() <= 150 and not (img == [255, 0, 0]).all(-1).any()
    assert green[20, 19] and not green[12, 12]  # centre inside, a corner of the box outside


def test_splat_matches_the_naive_loops_on_random_scenes():
    rng = np.random.default_rng(0)
    intrinsic, extrinsic = _camera(48, 32, f=30.0)
    for _ in range(3):
        items = [_points(rng.uniform(-1.5, 1.5, (60, 3)), rng.uniform(0, 1, (60, 3)), float(rng.uniform(1, 6))),
                 _points(rng.uniform(-1.5, 1.5, (40, 3)), rng.uniform(0, 1, (40, 3)), 3.5),
                 {"kind": "mesh", "name": "m", "point_size": 1.0, "vertices": rng.uniform(-1, 1, (6, 3)),
                  "triangles": np.array([[0, 1, 2], [3, 4, 5]]), "colors": rng.uniform(0, 1, (6, 3))}]
        fast = splat(items, intrinsic, extrinsic, (1, 1, 1), 48, 32)
        np.testing.assert_array_equal(fast, splat_naive(items, intrinsic, extrinsic, (1, 1, 1), 48, 32))


def test_points_behind_the_camera_or_off_screen_are_skipped():
    intrinsic, extrinsic = _camera(16, 16)
    items = [_points([[0.0, 0.0, 6.0], [100.0, 0.0, 0.0]], [1, 0, 0], 3.0)]  # behind the eye; far right
    img = splat(items, intrinsic, extrinsic, (0.0, 0.0, 0.0), 16, 16)
    assert (img == 0).all()


def test_input_errors():
    intrinsic, extrinsic = _camera(8, 8)
    with pytest.raises(ValueError, match=r"intrinsic must be \(3, 3\) and extrinsic \(4, 4\), got \(2, 2\)"):
        splat([], np.eye(2), extrinsic, (1, 1, 1), 8, 8)
    with pytest.raises(ValueError, match="width must be a positive int, got 0"):
        splat([], intrinsic, extrinsic, (1, 1, 1), 0, 8)
    with pytest.raises(TypeError, match="height must be an int, got float 2.5"):
        splat_naive([], intrinsic, extrinsic, (1, 1, 1), 8, 2.5)
