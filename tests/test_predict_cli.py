"""pointabstract predict: agrees with the Python predictor, writes the documented files, reports
and skips files it cannot use (exit code 1), refuses options of another task (exit code 2)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

import pointabstract
from pointabstract.cli import main
from pointabstract.data import read_ply_points, write_off
from tests.fixtures import tiny_runs


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return tiny_runs(tmp_path_factory)


def _clouds(folder, sizes=(48, 200, 30)):
    """``.npy`` clouds of the given sizes, and a tetrahedron-pair OFF mesh, under ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    paths = []
    for i, n in enumerate(sizes):
        paths.append(folder / f"c{i}.npy")
        np.save(paths[-1], rng.normal(size=(n, 3)).astype(np.float32) * (i + 1))
    mesh = folder / "m.off"
    write_off(mesh, [[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], [[0, 1, 2], [0, 1, 3], [0, 2, 3], [1, 2, 3]])
    return [*paths, mesh]


def test_classification_cli_agrees_with_python(runs, tmp_path, capsys):
    files = _clouds(tmp_path / "in")
    assert main(["predict", str(runs["classification"]), str(tmp_path / "in"), "--top-k", "3",
                 "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    records = json.loads((tmp_path / "out" / "predictions.json").read_text())
    expected = pointabstract.load(runs["classification"]).predict(files, top_k=3)
    assert [r["file"] for r in records] == [str(f) for f in sorted(files)] == [e.source for e in expected]
    for record, e in zip(records, expected):
        assert [c["class"] for c in record["top_k"]] == list(e.names)
        assert np.allclose([c["probability"] for c in record["top_k"]], e.probabilities, atol=1e-6)
        assert f"{e.source}: {e.names[0]} {e.probabilities[0]:.3f}" in out  # its table row
    rows = (tmp_path / "out" / "predictions.csv").read_text().splitlines()
    assert rows[0] == "file,rank,class,probability" and len(rows) == 1 + 3 * len(files)
    assert "reduced to the model's 48 by farthest point sampling" in out


def test_reconstruction_cli_writes_the_input_frame(runs, tmp_path, capsys):
    files = _clouds(tmp_path / "in", sizes=(64, 100))
    argv = ["predict", str(runs["reconstruction"]), *map(str, files[:2]), "--out", str(tmp_path / "out"),
            "--per-capsule"]
    assert main(argv) == 0
    expected = pointabstract.load(runs["reconstruction"]).predict(files[:2])
    for name, e in zip(("c0", "c1"), expected):
        assert np.allclose(read_ply_points(tmp_path / "out" / f"{name}.recon.ply"), e.points)
        parts = [read_ply_points(tmp_path / "out" / f"{name}.capsule{j}.ply") for j in range(e.num_capsules)]
        assert sum(len(p) for p in parts) == len(e.points)
        assert np.allclose(parts[1], e.points[e.capsule == 1])
    assert "Chamfer" in capsys.readouterr().out


def test_part_cli_labels_every_point_in_input_order(runs, tmp_path):
    files = _clouds(tmp_path / "in", sizes=(300,))
    assert main(["predict", str(runs["part_segmentation"]), str(files[0]), str(files[1]), "--category", "Mug",
                 "--out", str(tmp_path / "out")]) == 0
    expected = pointabstract.load(runs["part_segmentation"]).predict(files[:2], category="Mug")
    labels = np.loadtxt(tmp_path / "out" / "c0.parts.txt", dtype=np.int64)
    assert np.array_equal(labels, expected[0].labels) and labels.shape == (300,)
    assert np.allclose(read_ply_points(tmp_path / "out" / "c0.parts.ply"), np.load(files[0]))
    assert len(np.loadtxt(tmp_path / "out" / "m.parts.txt")) == 4  # the mesh's 4 vertices


def test_many_files_with_failures_skip_and_exit_1(runs, tmp_path, capsys):
    files = _clouds(tmp_path / "in", sizes=(48, 5))  # c1: 5 points, fewer than N / 4 = 12
    (tmp_path / "in" / "broken.off").write_text("OFF\n3 1 0\n0 0 0\n")
    code = main(["predict", str(runs["classification"]), str(tmp_path / "in"), str(tmp_path / "none.npy"),
                 "--out", str(tmp_path / "out")])
    captured = capsys.readouterr()
    assert code == 1
    skipped = [line for line in captured.err.splitlines() if line.startswith("skipped ")]
    assert len(skipped) == 3 and any("broken.off" in s for s in skipped) and any("none.npy" in s for s in skipped)
    assert any("c1.npy: has 5 points, fewer than the 12 this model needs" in s for s in skipped)
    assert captured.err.splitlines()[-1] == "error: 3 input(s) skipped (listed above), 2 predicted"
    records = json.loads((tmp_path / "out" / "predictions.json").read_text())
    assert [r["file"] for r in records] == [str(files[0]), str(files[2])]
    assert len([line for line in captured.out.splitlines() if line.startswith(str(tmp_path))]) == 2


@pytest.mark.parametrize("task, option, message", [
    ("classification", ["--per-capsule"], "--per-capsule applies to reconstruction checkpoints"),
    ("reconstruction", ["--category", "Mug"], "--category applies to part_segmentation checkpoints"),
    ("part_segmentation", ["--top-k", "2"], "--top-k applies to classification checkpoints"),
    ("part_segmentation", ["--category", "Sofa"], r"unknown category 'Sofa'; this model knows \['Airplane'"),
])
def test_options_of_another_task_are_one_line_errors(runs, tmp_path, capsys, task, option, message):
    files = _clouds(tmp_path / "in", sizes=(48,))
    assert main(["predict", str(runs[task]), str(files[0]), *option]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and len(err.splitlines()) == 1 and "Traceback" not in err
    assert __import__("re").search(message, err)


def test_output_names_and_ply_bytes(tmp_path):
    from pointabstract.data.files import read_shape
    from pointabstract.predict.writers import output_names, ply_bytes

    assert output_names(["a/chair.off", "b/chair.ply", "c.npy", "chair"]) == ["chair", "chair-2", "c", "chair-3"]
    # a file's own name is kept for it, whatever the order; names differing in case are one file on some disks
    assert output_names(["a/chair.obj", "b/chair.obj", "chair-2.npy"]) == ["chair", "chair-3", "chair-2"]
    assert output_names(["chair-2.npy", "a/chair.obj", "b/chair.obj"]) == ["chair-2", "chair", "chair-3"]
    assert output_names(["Chair.ply", "chair.npy", "chair-2.off", "CHAIR-3.ply"]) == ["Chair", "chair-4", "chair-2",
                                                                                      "CHAIR-3"]
    points = np.array([[0, 0, 0], [1, 0, 0], [0, 2, 0]], dtype=np.float32)
    data = ply_bytes(points, np.array([[1, 0, 0], [0, 1, 0], [0, 0, 0.5]]), np.array([[0, 1, 2]]))
    header = data[:data.index(b"end_header")].decode().splitlines()
    assert header[:3] == ["ply", "format binary_little_endian 1.0", "element vertex 3"]
    body = data[data.index(b"end_header\n") + len(b"end_header\n"):]
    assert "element face 1" in header and len(body) == 3 * 15 + 13  # 3 x (3 float32 + 3 uchar), 1 + 3 int32
    (tmp_path / "t.ply").write_bytes(data)
    shape = read_shape(tmp_path / "t.ply")
    assert np.array_equal(shape.points, points) and np.array_equal(shape.faces, [[0, 1, 2]])


def test_a_classifier_trained_on_a_folder_of_own_shapes(tmp_path, monkeypatch, capsys):
    """data.dataset=folder: the class names come from the checkpoint, files are fed in their own
    coordinates as the folder dataset fed them (so eval's samples get eval's probabilities), and
    predict runs over the same folder."""
    from pointabstract.engine import load_config, train
    from tests.fixtures import eval_outputs, tiny_model, write_shapes

    monkeypatch.setenv("POINTABSTRACT_CACHE", str(tmp_path / "cache"))
    shapes = write_shapes(tmp_path / "my shapes", per_class=4)
    train(load_config(None, [f"data.root={shapes}", f"log.out_dir={tmp_path / 'run'}", "data.dataset=folder",
                             "data.num_points=48", "data.batch_size=3", "data.workers=0", "optim.epochs=1",
                             "log.progress=false", "log.tensorboard=false", *tiny_model("centroid_transformer")]))
    checkpoint = tmp_path / "run" / "last.pt"
    predictor = pointabstract.load(checkpoint)
    assert predictor.class_names == ["pyramid", "slab", "tetra"] and predictor.frame == "none"
    run, passes, _ = eval_outputs(checkpoint, "logits")
    found = predictor.predict(np.stack([run.dataset[i]["pos"] for i in range(len(run.dataset))]))
    assert np.allclose(np.stack([r.probs for r in found]), torch.cat(passes).softmax(-1).numpy(), atol=1e-5)
    assert main(["predict", str(checkpoint), str(shapes), "--out", str(tmp_path / "out")]) == 0
    records = json.loads((tmp_path / "out" / "predictions.json").read_text())
    assert len(records) == 12 and {r["top_k"][0]["class"] for r in records} <= {"pyramid", "slab", "tetra"}


def test_a_progress_bar_on_a_terminal_and_none_in_a_log(runs, tmp_path, capsys, monkeypatch):
    import sys

    files = _clouds(tmp_path / "in")
    argv = ["predict", str(runs["classification"]), *map(str, files)]
    assert main(argv) == 0
    logged = capsys.readouterr()
    assert "file/s" not in logged.err and len(logged.out.splitlines()) == len(files)  # one line per file
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert main(argv) == 0
    shown = capsys.readouterr()
    assert "predict: " in shown.err and "/4 [" in shown.err and "file/s" in shown.err  # a bar over the 4 files
    assert len(shown.out.splitlines()) == len(files)  # the table rows still print above the bar


def test_two_inputs_never_share_an_output_name(runs, tmp_path, capsys):
    """a/chair, b/chair and chair-2: three files, each named as output_names says, none lost."""
    rng = np.random.default_rng(7)
    paths = [tmp_path / "a" / "chair.npy", tmp_path / "b" / "chair.npy", tmp_path / "chair-2.npy"]
    for path, n in zip(paths, (50, 60, 70)):
        path.parent.mkdir(exist_ok=True)
        np.save(path, rng.normal(size=(n, 3)))
    argv = ["predict", str(runs["part_segmentation"]), *map(str, paths), "--category", "Mug", "--out", str(tmp_path / "o")]
    assert main(argv) == 0
    wrote = [line.split("wrote ")[1].split(" and ")[0] for line in capsys.readouterr().out.splitlines()]
    assert [Path(w).name for w in wrote] == ["chair.parts.ply", "chair-3.parts.ply", "chair-2.parts.ply"]
    for name, n in (("chair", 50), ("chair-3", 60), ("chair-2", 70)):
        assert len(np.loadtxt(tmp_path / "o" / f"{name}.parts.txt")) == n


def test_a_second_predict_never_replaces_what_is_there(runs, tmp_path, capsys):
    """Refused before any work (one line naming the files), unless --overwrite, which says what it
    replaced; outputs of other inputs are left alone and a run writing other names goes ahead."""
    files = _clouds(tmp_path / "in", sizes=(48, 64))
    out = tmp_path / "o"
    assert main(["predict", str(runs["classification"]), str(tmp_path / "in"), "--out", str(out)]) == 0
    table = (out / "predictions.csv").read_bytes()
    capsys.readouterr()
    assert main(["predict", str(runs["classification"]), str(files[0]), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [f"error: --out {out} already holds 2 file(s) this predict would write "
                                "(predictions.json, predictions.csv): choose another --out, or give --overwrite "
                                "to replace them"]
    assert (out / "predictions.csv").read_bytes() == table
    assert main(["predict", str(runs["classification"]), str(files[0]), "--out", str(out), "--overwrite"]) == 0
    assert (f"replaced 2 file(s) that were in {out} before (--overwrite): predictions.json, predictions.csv"
            in capsys.readouterr().out)
    assert len((out / "predictions.csv").read_text().splitlines()) == 1 + 5  # one file, its top 5 classes
    recon = ["predict", str(runs["reconstruction"]), "--out", str(out)]
    assert main([*recon, str(files[0])]) == 0
    (out / "c1.recon.ply").write_text("my own notes")  # a file of the user's, named like an output
    assert main([*recon, str(files[0]), str(files[1])]) == 2
    assert "already holds 2 file(s) this predict would write (c0.recon.ply, c1.recon.ply)" in capsys.readouterr().err
    assert (out / "c1.recon.ply").read_text() == "my own notes"
    assert main([*recon, str(files[2])]) == 0  # m.off: a name of its own


def test_a_run_folder_means_its_last_pt(runs, tmp_path, capsys):
    files = _clouds(tmp_path / "in", sizes=(48,))
    folder = runs["classification"].parent
    assert main(["predict", str(folder), str(files[0])]) == 0
    assert capsys.readouterr().err.splitlines()[0] == f"{folder} is a run folder: using its last.pt"
    assert main(["predict", str(tmp_path / "in"), str(files[0])]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"error: {tmp_path / 'in'} is a folder without last.pt (a run folder holds the last.pt and best.pt that "
        "`pointabstract train` writes) and not an exported model (config.json + model.safetensors); its "
        "checkpoints: none"]
