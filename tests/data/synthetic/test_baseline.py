import h5py
import numpy as np
import pytest

from pointabstract.data.synthetic.baseline import (
    baseline_features,
    evaluate_baseline,
    nearest_neighbour_predict,
    statistics_features,
)
from pointabstract.data.synthetic.generator import CLASS_NAMES, generate


def test_features_of_a_box_are_its_sorted_extents_and_one_full_bin():
    corners = np.array([[x, y, z] for x in (0, 4) for y in (0, 1) for z in (0, 2)], float)
    feats = baseline_features(corners[None], bins=4)
    assert feats.shape == (1, 7)
    assert np.allclose(feats[0, :3], [4, 2, 1])
    assert np.allclose(feats[0, 3:], [0, 0, 0, 1])  # every corner is as far as the farthest


def test_radial_histogram_is_rotation_and_scale_invariant():
    rng = np.random.default_rng(0)
    pos = rng.normal(size=(2, 300, 3))
    q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    a, b = baseline_features(pos), baseline_features(3 * pos @ q.T)
    assert np.allclose(a[:, 3:], b[:, 3:]) and np.allclose(a[:, 3:].sum(1), 1)


def test_statistics_of_a_box_hand_computed():
    # the 8 corners of a 4 x 1 x 2 box: every corner at the same distance from the centroid
    corners = np.array([[x, y, z] for x in (0, 4) for y in (0, 1) for z in (0, 2)], float)
    feats = statistics_features(corners[None])
    assert feats.shape == (1, 12)
    np.testing.assert_allclose(feats[0, :3], [4, 2, 1])  # sorted extents
    np.testing.assert_allclose(feats[0, 3:5], [1, 1e-12], atol=1e-9)  # mean 1, no spread
    np.testing.assert_allclose(feats[0, 7:9], [1 / 4, 1 / 16])  # variances 4, 1, 0.25 along x, z, y
    np.testing.assert_allclose(feats[0, 9:], [4, 2, 1])  # principal axes = the box axes


def test_statistics_are_rotation_invariant_except_the_axis_aligned_extents():
    rng = np.random.default_rng(0)
    pos = rng.normal(size=(3, 400, 3)) * (3, 1, 0.5)
    q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    a, b = statistics_features(pos), statistics_features(pos @ q.T)
    np.testing.assert_allclose(a[:, 3:], b[:, 3:], rtol=1e-6, atol=1e-9)
    with pytest.raises(ValueError, match=r"pos must have shape \(S, N, 3\) with N >= 2"):
        statistics_features(np.zeros((2, 1, 3)))


def test_nearest_neighbour_standardises_features():
    # feature 0 spans thousands, feature 1 units; raw distances would answer [7, 9]
    train = np.array([[0.0, 0.0], [1000.0, 1.0]])
    assert list(nearest_neighbour_predict(train, [7, 9], [[300.0, 1.0], [700.0, 0.0]])) == [9, 7]
    # ties go to the lowest training index
    assert list(nearest_neighbour_predict(np.ones((2, 2)), [4, 5], np.ones((1, 2)))) == [4]
    with pytest.raises(ValueError, match="train_x and test_x must be"):
        nearest_neighbour_predict(train, [7, 9], np.zeros((1, 3)))
    with pytest.raises(ValueError, match="train_y must have one label per train_x row"):
        nearest_neighbour_predict(train, [7], train)


@pytest.fixture(scope="module")
def tiny_root(tmp_path_factory):
    out = tmp_path_factory.mktemp("synthetic_baseline")
    generate(out, train_per_class=6, test_per_class=2, num_points=256, progress=False, workers=1)
    return out


def test_evaluate_baseline_on_a_tiny_synthetic_set(tiny_root):
    result = evaluate_baseline(tiny_root)
    assert result["num_train"] == 96 and result["num_test"] == 32
    assert list(result["per_class"]) == list(CLASS_NAMES)
    assert 2 / 16 < result["accuracy"] <= 1
    mean = np.mean(list(result["per_class"].values()))  # balanced test set
    assert mean == pytest.approx(result["accuracy"])
    # the modelnet folder itself works too
    assert evaluate_baseline(tiny_root / "modelnet40_ply_hdf5_2048") == result
    stronger = evaluate_baseline(tiny_root, features="statistics")
    assert stronger["num_test"] == 32 and 2 / 16 < stronger["accuracy"] <= 1
    with pytest.raises(ValueError, match=r"features must be one of \['histogram', 'statistics'\], got 'x'"):
        evaluate_baseline(tiny_root, features="x")


def test_bad_input_names_the_problem(tmp_path):
    with pytest.raises(FileNotFoundError, match="shape_names.txt"):
        evaluate_baseline(tmp_path)
    (tmp_path / "shape_names.txt").write_text("a\nb\n")
    with pytest.raises(FileNotFoundError, match="no ply_data_train"):
        evaluate_baseline(tmp_path)
    with h5py.File(tmp_path / "ply_data_train0.h5", "w") as f:
        f["label"] = np.zeros((1, 1), np.int32)
    with pytest.raises(ValueError, match=r"ply_data_train0.h5: no dataset 'data'"):
        evaluate_baseline(tmp_path)
    with pytest.raises(ValueError, match=r"pos must have shape \(S, N, 3\)"):
        baseline_features(np.zeros((4, 3)))
    with pytest.raises(ValueError, match="bins must be a positive int"):
        baseline_features(np.zeros((1, 4, 3)), bins=0)
