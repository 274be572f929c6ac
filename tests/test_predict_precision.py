"""Coordinates keep their precision through the predictor (docs/predict.md, "What is done to each
input"): a float64 input is centred and scaled in float64 before the model's float32, results come
back in the input's frame and precision, and a value float32 cannot hold is either brought into
range by the frame or refused naming its file, never the end of a whole ``predict``."""

from __future__ import annotations

import numpy as np
import pytest

import pointabstract
from pointabstract.cli import main
from pointabstract.data.files import read_shape
from pointabstract.predict.segment import carry_labels
from tests.fixtures import tiny_runs

# a UTM position (zone 32N, metres): float32 steps by 0.03 m in x and 0.5 m in y there
OFFSET = np.array([512345.0, 5412345.0, 0.0])


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return tiny_runs(tmp_path_factory)


def _box(n=500, seed=0) -> np.ndarray:
    """(n, 3) float64 points on the surface of a 1 m box at the origin."""
    rng = np.random.default_rng(seed)
    face = rng.integers(0, 6, n)
    points = rng.random((n, 3))
    points[np.arange(n), face % 3] = face // 3
    return points


def test_a_box_at_utm_coordinates_gets_the_prediction_of_the_box_at_the_origin(runs):
    box = _box()
    utm = box + OFFSET
    classifier = pointabstract.load(runs["classification"])
    a, b = classifier.predict(box), classifier.predict(utm)
    assert a.names == b.names and np.allclose(a.probs, b.probs, atol=1e-6)
    autoencoder = pointabstract.load(runs["reconstruction"])
    a, b = autoencoder.predict(box), autoencoder.predict(utm)
    assert b.points.dtype == b.input_points.dtype == np.float64
    np.testing.assert_allclose(b.input_points - OFFSET, a.input_points, atol=1e-9)  # the same N points
    # float32 in the model's frame: the two centrings may round one coordinate one float32 step apart
    # (6e-8), which the decoder moves to at most ~1e-5; the float32 cast before centring was 0.03-0.5 m
    np.testing.assert_allclose(b.points - OFFSET, a.points, atol=1e-5)
    assert b.chamfer == pytest.approx(a.chamfer, rel=1e-5)
    segmenter = pointabstract.load(runs["part_segmentation"])
    a, b = segmenter.predict(box, category="Airplane"), segmenter.predict(utm, category="Airplane")
    assert np.array_equal(a.labels, b.labels) and b.points.dtype == np.float64
    np.testing.assert_array_equal(b.points, utm)


def test_part_labels_are_carried_at_the_inputs_precision():
    """Points 0.1 m apart along y at y = 5,412,345 m (float32: 0.5 m steps) keep their labels."""
    seen = OFFSET + np.column_stack([np.zeros(20), np.arange(20) * 0.1, np.zeros(20)])
    labels = np.arange(20) % 4
    query = seen + [0.0, 0.02, 0.0]  # each point 2 cm from its own model point
    np.testing.assert_array_equal(carry_labels(query, seen, labels), labels)


def test_float32_inputs_stay_float32_and_files_keep_doubles(runs, tmp_path):
    cloud = _box(64, seed=1)
    autoencoder = pointabstract.load(runs["reconstruction"])
    assert autoencoder.predict(cloud.astype(np.float32)).points.dtype == np.float32
    np.save(tmp_path / "scan.npy", cloud + OFFSET)
    assert main(["predict", str(runs["reconstruction"]), str(tmp_path / "scan.npy"), "--out", str(tmp_path / "o")]) == 0
    written = read_shape(tmp_path / "o" / "scan.recon.ply").points  # property double x y z
    expected = autoencoder.predict(cloud + OFFSET).points
    assert written.dtype == np.float64 and np.array_equal(written, expected)


@pytest.mark.parametrize("task", ["classification", "reconstruction", "part_segmentation"])
def test_values_beyond_float32_are_predicted_or_skipped_one_file_at_a_time(runs, tmp_path, capsys, task):
    """A float64 file beyond float32's range is centred and scaled in float64 (then it is an
    ordinary shape); a file with an Inf is skipped naming it; the good files are all written."""
    folder = tmp_path / "in"
    folder.mkdir()
    good = [_box(64, seed=s) for s in range(3)]
    for i, cloud in enumerate(good):
        np.save(folder / f"good{i}.npy", cloud)
    np.save(folder / "huge.npy", good[0] * 1e39)  # float32's largest is 3.4e38
    broken = good[1].copy()
    broken[5, 1] = np.inf
    np.save(folder / "inf.npy", broken)
    extra = ["--category", "Airplane"] if task == "part_segmentation" else []
    code = main(["predict", str(runs[task]), str(folder), "--out", str(tmp_path / "o"), *extra])
    err = capsys.readouterr().err.splitlines()
    assert code == 1
    assert [line for line in err if line.startswith("skipped")] == [
        f"skipped {folder / 'inf.npy'}: non-finite coordinates (NaN or Inf) at point 5 (1 of 64 points)"]
    assert err[-1] == "error: 1 input(s) skipped (listed above), 4 predicted"
    if task == "reconstruction":
        assert {p.name for p in (tmp_path / "o").glob("*.recon.ply")} == {f"{n}.recon.ply" for n in
                                                                          ("good0", "good1", "good2", "huge")}
    predictor = pointabstract.load(runs[task])
    kwargs = {"category": "Airplane"} if task == "part_segmentation" else {}
    huge, small = predictor.predict(good[0] * 1e39, **kwargs), predictor.predict(good[0], **kwargs)
    same = {"classification": "probs", "reconstruction": "chamfer", "part_segmentation": "labels"}[task]
    np.testing.assert_allclose(getattr(huge, same), getattr(small, same), rtol=1e-5)


def test_a_model_input_float32_cannot_hold_is_refused_naming_the_input(runs):
    classifier = pointabstract.load(runs["classification"])
    with pytest.raises(ValueError, match=r"cloud 0: coordinates up to 1e\+39 in the model's frame, beyond "
                                         r"float32's range .* normalize='unit_sphere' brings it into the models' unit sphere"):
        classifier.predict(_box(64) * 1e39, normalize="none")
    with pytest.raises(ValueError, match=r"cloud 0: coordinates up to 1e\+20 in the model's frame, whose squares "
                                         r"overflow float32 \(.* below 5.33e\+18\)"):
        classifier.predict(_box(64) * 1e20, normalize="none")
