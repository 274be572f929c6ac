"""pointabstract bench predict: its two timings on a small run, and its records."""

from __future__ import annotations

import json

from pointabstract.cli import main


def test_bench_predict_writes_both_timings(tmp_path, capsys):
    code = main(["bench", "predict", "--checkpoint", str(tmp_path / "none.pt"), "--meshes", "3", "--points", "5000",
                 "--repeats", "1", "--results", str(tmp_path / "bench")])
    assert code == 0
    out = capsys.readouterr().out
    record = json.loads((tmp_path / "bench" / "predict.json").read_text())
    assert record["meshes"] == 3 and record["scan_points"] == 5000 and record["untrained"] is True
    assert record["files_per_second"] == 3 / record["mesh_seconds"] > 0
    assert record["scan_seconds"] == record["scan_prepare_seconds"] + record["scan_model_seconds"]
    assert record["num_points"] == 256 and record["model"] == "centroid_transformer"  # the demo preset
    text = (tmp_path / "bench" / "predict.md").read_text()
    assert "untrained weights: speed only" in text and "one 5,000-point cloud" in text and text in out


def test_bench_predict_refuses_zero_meshes(tmp_path, capsys):
    assert main(["bench", "predict", "--meshes", "0", "--results", str(tmp_path)]) == 2
    assert "--meshes must be a positive int, got 0" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())
