import numpy as np
import pytest
import torch

o3d = pytest.importorskip("open3d")

from pointabstract.interop.open3d import from_open3d, to_open3d  # noqa: E402


def test_round_trip_points_normals_colors():
    rng = np.random.default_rng(0)
    pos = rng.random((50, 3), dtype=np.float32)
    normal = rng.normal(size=(50, 3)).astype(np.float32)
    color = rng.random((50, 3), dtype=np.float32)
    cloud = to_open3d(torch.from_numpy(pos), normal=normal, color=color)
    assert isinstance(cloud, o3d.geometry.PointCloud) and len(cloud.points) == 50
    back = from_open3d(cloud)
    assert sorted(back) == ["color", "normal", "pos"]
    np.testing.assert_array_equal(back["pos"], pos)  # float32 -> float64 -> float32 is exact
    np.testing.assert_array_equal(back["normal"], normal)
    np.testing.assert_array_equal(back["color"], color)


def test_open3d_cloud_from_its_own_api():
    cloud = o3d.geometry.PointCloud(o3d.utility.Vector3dVector(np.eye(3)))
    sample = from_open3d(cloud)
    assert sorted(sample) == ["pos"] and sample["pos"].dtype == np.float32
    np.testing.assert_array_equal(sample["pos"], np.eye(3, dtype=np.float32))


@pytest.mark.parametrize("call,error,match", [
    (lambda: to_open3d([[0, 0, 0]]), TypeError, "pos must be a numpy array or torch.Tensor"),
    (lambda: to_open3d(np.zeros((4, 2))), ValueError, r"pos must have shape \(N, 3\)"),
    (lambda: to_open3d(np.full((2, 3), np.nan)), ValueError, "pos holds NaN"),
    (lambda: to_open3d(np.zeros((4, 3)), normal=np.zeros((3, 3))), ValueError, r"normal must have shape \(N, 3\) with N = 4"),
    (lambda: to_open3d(np.zeros((1, 3)), color=np.full((1, 3), 2.0)), ValueError, r"color must lie in \[0, 1\]"),
    (lambda: from_open3d(np.zeros((2, 3))), TypeError, "cloud must be an open3d.geometry.PointCloud"),
])
def test_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()
