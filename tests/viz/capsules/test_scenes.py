import numpy as np
import pytest
import torch

from pointabstract.viz.capsules.scenes import FramedCamera, capsule_colors, capsule_scene, shared_camera
from pointabstract.viz.capsules.session import CapsuleSample
from pointabstract.viz.core.colors import GREY, HIGHLIGHT, class_palette, part_palette
from pointabstract.viz.core.render import Camera


def _sample(part=True) -> CapsuleSample:
    """4 input points, 6 decoded points of 3 capsules (2 each); parts of the Airplane (0-3)."""
    pos = torch.tensor([[0.0, 0, 0], [1, 0, 0], [2, 0, 0], [3, 0, 0]])
    points = torch.tensor([[0.0, 0.1, 0], [0.9, 0, 0], [1.1, 0, 0], [2.0, 0.1, 0], [2.9, 0, 0], [3.1, 0, 0]])
    index = np.array([0, 0, 1, 1, 2, 2])
    explained = np.array([0, 0, 1, 2])  # the capsule of each input point's nearest decoded point
    extra = dict(part=np.array([0, 0, 1, 1]), capsule_parts=np.array([0, 1, 1]),
                 capsule_purity=np.array([1.0, 1.0, 1.0]), purity=1.0) if part else {}
    return CapsuleSample(0, pos, points, index, 3, 0.01, explained, **extra)


def test_capsule_colouring_highlights_one_capsules_points_on_both_panels():
    inp, out = capsule_colors(_sample(), "capsule", 1)
    red, grey = np.array(HIGHLIGHT), np.array(GREY)
    assert np.allclose(out[[2, 3]], red) and np.allclose(out[[0, 1, 4, 5]], grey)
    assert np.allclose(inp[2], red) and np.allclose(inp[[0, 1, 3]], grey)  # input point 2 is explained by 1


def test_capsules_and_parts_colourings():
    sample = _sample()
    inp, out = capsule_colors(sample, "capsules")
    palette = class_palette(3)
    assert np.allclose(out, palette[[0, 0, 1, 1, 2, 2]]) and np.allclose(inp, palette[[0, 0, 1, 2]])
    inp, out = capsule_colors(sample, "parts")
    parts = part_palette()
    assert np.allclose(inp, parts[[0, 0, 1, 1]])  # the true parts
    assert np.allclose(out, parts[[0, 0, 1, 1, 1, 1]])  # capsules 1 and 2 share majority part 1: one colour
    with pytest.raises(ValueError, match="coloring 'parts' needs per-point part labels"):
        capsule_colors(_sample(part=False), "parts")
    with pytest.raises(ValueError, match=r"coloring must be one of \['capsule', 'capsules', 'parts'\]"):
        capsule_colors(sample, "neighbours")
    with pytest.raises(ValueError, match=r"capsule must be an int in \[0, 2\]"):
        capsule_colors(sample, "capsule", 3)


def test_scene_layouts_and_the_highlight_drawn_last(o3d):
    sample = _sample()
    both = capsule_scene(sample, coloring="capsule", capsule=2)
    names = [d["name"] for d in both.geometries]
    assert names == ["input", "input/capsule", "reconstruction", "reconstruction/capsule"]
    pts = {d["name"]: np.asarray(d["geometry"].points) for d in both.geometries}
    cols = {d["name"]: np.asarray(d["geometry"].colors) for d in both.geometries}
    assert np.allclose(pts["input/capsule"], sample.pos.numpy()[[3]])  # input point 3 is explained by capsule 2
    assert np.allclose(pts["input"], sample.pos.numpy()[[0, 1, 2]]) and np.allclose(cols["input"], GREY)
    assert np.allclose(cols["reconstruction/capsule"], HIGHLIGHT) and len(pts["reconstruction/capsule"]) == 2
    shift = pts["reconstruction/capsule"] - sample.points.numpy()[[4, 5]]  # moved right, at the same depth
    assert np.allclose(shift, shift[0]) and np.allclose(shift[0] / np.linalg.norm(shift[0]), Camera().right)
    assert (pts["reconstruction"] @ Camera().right).min() > (pts["input"] @ Camera().right).max()
    assert np.allclose(both.colors["reconstruction"][[4, 5]], HIGHLIGHT)  # per-point colours, in point order
    one = capsule_scene(sample, coloring="capsules", layout="reconstruction")
    assert [d["name"] for d in one.geometries] == ["reconstruction"]
    assert np.allclose(np.asarray(one.geometries[0]["geometry"].points), sample.points.numpy())
    with pytest.raises(ValueError, match=r"layout must be one of \['side_by_side', 'input', 'reconstruction'\]"):
        capsule_scene(sample, layout="xyz")


def test_framed_camera_gives_every_panel_the_same_view():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(50, 3)), 0.3 * rng.normal(size=(40, 3)) + 0.2
    cam = shared_camera(a, b)
    assert isinstance(cam, FramedCamera)
    ma, mb = cam.matrices(a, 120, 90), cam.matrices(b, 120, 90)
    assert all(np.array_equal(x, y) for x, y in zip(ma, mb))  # the panel's own points do not matter
    assert not np.allclose(Camera().matrices(a, 120, 90)[1], Camera().matrices(b, 120, 90)[1])
    intrinsic, extrinsic = ma
    for cloud in (a, b):  # both clouds inside the image
        cam_pts = cloud @ extrinsic[:3, :3].T + extrinsic[:3, 3]
        uv = cam_pts @ intrinsic.T
        uv = uv[:, :2] / uv[:, 2:]
        assert (cam_pts[:, 2] > 0).all() and (uv >= -0.5).all() and (uv[:, 0] <= 119.5).all() \
            and (uv[:, 1] <= 89.5).all()
    # it looks along the first cloud's direction of least spread, as Camera.facing does
    assert np.allclose(cam.direction, Camera.facing(a).direction)
    with pytest.raises(ValueError, match="at least one cloud"):
        shared_camera()
