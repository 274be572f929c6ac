import numpy as np
import pytest
import torch

from pointabstract.models import build_model
from pointabstract.ops import knn_naive
from pointabstract.viz.classification.scenes import (
    block_output,
    default_block,
    default_k,
    feature_knn,
    highlight_colors,
    neighbourhood_scene,
    xyz_knn,
)
from pointabstract.viz.core.colors import GREY, HIGHLIGHT, QUERY
from pointabstract.viz.core.render import Camera
from tests.fixtures import cloud


def test_feature_knn_hand_computed():
    # 1-D features 0, 10, 1, 11, 2: the 3 nearest of point 0 are points 0, 2, 4 although in xyz
    # (a line along x) its 3 nearest are points 0, 1, 2
    feats = torch.tensor([[0.0], [10.0], [1.0], [11.0], [2.0]])
    pos = torch.tensor([[0.0, 0, 0], [1, 0, 0], [2, 0, 0], [3, 0, 0], [4, 0, 0]])
    assert feature_knn(feats, 0, 3).tolist() == [0, 2, 4]
    assert xyz_knn(pos, 0, 3).tolist() == [0, 1, 2]


@pytest.mark.parametrize("m,c,k", [(20, 8, 5), (64, 32, 40), (7, 3, 7)])
def test_feature_knn_equals_the_naive_reference(m, c, k):
    feats = cloud(1, m, c, seed=m)[0]
    for q in (0, m // 2, m - 1):
        expect = knn_naive(feats[None, q:q + 1], feats[None], k)[1][0, 0]
        assert feature_knn(feats, q, k).tolist() == expect.tolist()


def test_scene_highlights_exactly_the_knn_of_each_space(o3d):
    pos, feats = cloud(1, 50, 3, seed=1)[0], cloud(1, 50, 16, seed=2)[0]
    scene = neighbourhood_scene(pos, feats, 7, k=6)
    f_idx = knn_naive(feats[None, 7:8], feats[None], 6)[1][0, 0].numpy()
    x_idx = knn_naive(pos[None, 7:8], pos[None], 6)[1][0, 0].numpy()
    assert sorted(scene.feature_idx) == sorted(f_idx) and sorted(scene.xyz_idx) == sorted(x_idx)
    names = [d["name"] for d in scene.geometries]
    assert names == ["feature/points", "feature/query", "xyz/points", "xyz/query"]
    for panel, idx in (("feature", f_idx), ("xyz", x_idx)):
        cloud_ = next(d["geometry"] for d in scene.geometries if d["name"] == f"{panel}/points")
        colors = np.asarray(cloud_.colors)
        assert colors.shape == (50, 3) and len(cloud_.points) == 50
        assert (colors >= 0).all() and (colors <= 1).all()
        red = np.flatnonzero(np.all(np.isclose(colors, HIGHLIGHT), axis=1))
        assert sorted(red) == sorted(idx)
        assert np.all(np.isclose(np.delete(colors, red, 0), GREY))
    # the 3D panel is the same cloud shifted along +x beside the first; markers sit on the query
    xyz_points = np.asarray(next(d["geometry"] for d in scene.geometries if d["name"] == "xyz/points").points)
    assert np.allclose(xyz_points, pos.numpy() + scene.offset)
    side = Camera().right  # beside the first copy on screen, at the same depth
    assert np.isclose(np.dot(scene.offset, Camera().direction), 0, atol=1e-9)
    assert np.dot(scene.offset, side) > np.ptp(pos.numpy() @ side)
    shifted = neighbourhood_scene(pos, feats, 7, k=6, side_direction=(0, 0, 2))
    assert np.allclose(shifted.offset / np.linalg.norm(shifted.offset), (0, 0, 1))
    marker = next(d["geometry"] for d in scene.geometries if d["name"] == "feature/query")
    assert np.allclose(np.asarray(marker.vertices).mean(0), pos[7].numpy(), atol=1e-3)
    assert np.allclose(np.asarray(marker.vertex_colors), QUERY)


def test_single_panel_layouts_context_and_custom_colours(o3d):
    pos, feats = cloud(1, 30, 3, seed=3)[0], cloud(1, 30, 4, seed=4)[0]
    context = cloud(1, 100, 3, seed=5)[0]
    base = np.linspace(0, 1, 90).reshape(30, 3)
    scene = neighbourhood_scene(pos, feats, 0, k=4, layout="xyz", base_colors=base, highlight=False,
                                context=context)
    assert [d["name"] for d in scene.geometries] == ["xyz/context", "xyz/points", "xyz/query"]
    assert scene.geometries[0]["point_size"] < scene.geometries[1]["point_size"]
    assert len(scene.geometries[0]["geometry"].points) == 100
    assert np.allclose(scene.colors["xyz"], base)  # no highlight: the scalar colours stay
    scene = neighbourhood_scene(pos, feats, 0, k=4, xyz_base_colors=(0.0, 0.0, 1.0))
    assert np.allclose(np.delete(scene.colors["xyz"], scene.xyz_idx, 0), (0, 0, 1))
    assert np.allclose(np.delete(scene.colors["feature"], scene.feature_idx, 0), GREY)


def test_scene_input_errors_name_the_argument():
    pos, feats = cloud(1, 10, 3)[0], cloud(1, 10, 5)[0]
    with pytest.raises(ValueError, match=r"k must be an int in \[1, 10\] \(the block has 10 points\), got 11"):
        neighbourhood_scene(pos, feats, 0, k=11)
    with pytest.raises(ValueError, match=r"query must be an int in \[0, 9\], got 10"):
        neighbourhood_scene(pos, feats, 10, k=3)
    with pytest.raises(ValueError, match=r"features must have one row per point of pos \(10\)"):
        neighbourhood_scene(pos, feats[:9], 0, k=3)
    with pytest.raises(ValueError, match=r"pos must have shape \(M, 3\)"):
        neighbourhood_scene(feats, feats, 0, k=3)
    with pytest.raises(ValueError, match="side_direction must be a non-zero 3-vector"):
        neighbourhood_scene(pos, feats, 0, k=3, side_direction=(0, 0, 0))
    with pytest.raises(ValueError, match="layout must be one of"):
        neighbourhood_scene(pos, feats, 0, k=3, layout="top")
    with pytest.raises(TypeError, match="features must hold floats"):
        feature_knn(torch.ones(4, 2, dtype=torch.int64), 0, 1)
    with pytest.raises(ValueError, match="features holds NaN or Inf"):
        feature_knn(torch.tensor([[0.0], [float("nan")]]), 0, 1)
    with pytest.raises(ValueError, match=r"base must be one RGB colour or shape \(10, 3\)"):
        highlight_colors(10, [1], base=np.zeros((9, 3)))
    with pytest.raises(ValueError, match=r"color must lie in \[0, 1\]"):
        highlight_colors(10, [1], color=(255, 0, 0))
    with pytest.raises(ValueError, match=r"neighbours must index \[0, 10\)"):
        highlight_colors(10, [10])


def test_block_output_and_default_block_on_a_real_model():
    model = build_model("centroid_transformer", num_classes=3, widths=(8, 16, 16, 24), heads=2, k=6,
                        fuse_dim=16, head_dims=(16,)).eval()
    with torch.no_grad():
        out = model(cloud(2, 64, 3), return_features=True)
    assert default_block(out["blocks"]) == 3  # the second centroid-attention block, as in the paper
    pos, feats = block_output(out, 3, batch=1)
    assert pos.shape == (8, 3) and feats.shape == (8, 24)
    assert torch.equal(pos, out["blocks"][3]["pos"][1])
    assert block_output(out, -1)[1].shape == (8, 24)
    with pytest.raises(ValueError, match=r"block must be an int in \[-4, 3\] for this model, got 4"):
        block_output(out, 4)
    with pytest.raises(ValueError, match="output holds no per-block features: call the model with return_features=True"):
        block_output({"logits": out["logits"]}, 0)
    with pytest.raises(ValueError, match=r"batch must be an int in \[0, 1\], got"):
        block_output(out, 0, batch=2)
    sa_only = [{"features": None}, {"features": None}]
    assert default_block(sa_only) == 1


def test_default_k_keeps_the_papers_proportion():
    assert default_k(128) == 40 and default_k(1024) == 40 and default_k(32) == 10 and default_k(1) == 1
    with pytest.raises(ValueError, match="num_points must be a positive int"):
        default_k(0)


def test_context_can_be_coloured_per_point(o3d):
    from pointabstract.viz.classification.scenes import neighbourhood_scene
    from tests.fixtures import cloud

    pos, feats, ctx = cloud(1, 20, 3, seed=1)[0], cloud(1, 20, 4, seed=2)[0], cloud(1, 50, 3, seed=3)[0]
    colors = np.tile([0.9, 0.7, 0.7], (50, 1))
    scene = neighbourhood_scene(pos, feats, 0, k=3, layout="feature", context=ctx, context_colors=colors)
    context = [g for g in scene.geometries if g["name"] == "feature/context"][0]["geometry"]
    np.testing.assert_allclose(np.asarray(context.colors), colors)
    with pytest.raises(ValueError, match=r"colors must be one RGB colour or shape \(50, 3\)"):
        neighbourhood_scene(pos, feats, 0, k=3, layout="feature", context=ctx, context_colors=colors[:4])
