"""Weights-only export (``pointabstract export``, ``save_pretrained`` / ``from_pretrained``):
config.json + model.safetensors, read back with no pickle to bit-identical outputs, and taken by
predict, eval and view as they take a checkpoint."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest
import torch

import pointabstract
from pointabstract.cli import main
from pointabstract.engine import evaluate_checkpoint, restore
from pointabstract.engine.pretrained import CONFIG, WEIGHTS, read_pretrained
from pointabstract.predict import load_trained
from tests.fixtures import tiny_runs

TASKS = ("classification", "reconstruction", "part_segmentation")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return tiny_runs(tmp_path_factory)


@pytest.fixture(scope="module")
def exported(runs, tmp_path_factory):
    """{task: folder} written by ``pointabstract export``."""
    root = tmp_path_factory.mktemp("exported")
    for task in TASKS:
        assert main(["export", str(runs[task]), str(root / task)]) == 0
    return {task: root / task for task in TASKS}


def _no_pickle(monkeypatch):
    """Every unpickling path (pickle, torch.load) raises from here on."""
    def refuse(*args, **kwargs):
        raise AssertionError("unpickling while reading an exported folder")

    for name in ("load", "loads", "Unpickler"):
        monkeypatch.setattr(pickle, name, refuse)
    monkeypatch.setattr(torch, "load", refuse)


def _cloud(seed: int, n: int = 80) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, 3)).astype(np.float32)


@pytest.mark.parametrize("task", TASKS)
def test_export_and_reload_give_bit_identical_outputs(runs, exported, task, monkeypatch):
    original = pointabstract.load(runs[task])
    folder = exported[task]
    assert sorted(p.name for p in folder.iterdir()) == [CONFIG, WEIGHTS]
    _no_pickle(monkeypatch)
    again = pointabstract.from_pretrained(folder)
    state, reread = original.trained.model.state_dict(), again.trained.model.state_dict()
    assert list(state) == list(reread)
    assert all(state[k].dtype == reread[k].dtype and torch.equal(state[k], reread[k]) for k in state)
    clouds = [_cloud(1), _cloud(2, 120)]
    extra = {"category": "Cap"} if task == "part_segmentation" else {}
    before, after = original.predict(clouds, **extra), again.predict(clouds, **extra)
    fields = {"classification": ("probs",), "reconstruction": ("points", "chamfer"),
              "part_segmentation": ("labels", "model_labels")}[task]
    for b, a in zip(before, after):
        assert all(np.array_equal(getattr(b, name), getattr(a, name)) for name in fields)
    assert (again.class_names, again.categories, again.frame) == \
        (original.class_names, original.categories, original.frame)


def test_config_json_says_what_the_model_is(runs, exported):
    meta = json.loads((exported["classification"] / CONFIG).read_text())
    trained = load_trained(runs["classification"])
    assert (meta["format"], meta["format_version"], meta["pointabstract_version"]) == \
        ("pointabstract-pretrained", 1, pointabstract.__version__)
    assert (meta["model"], meta["task"], meta["names"]) == ("centroid_transformer", "classification", trained.names)
    assert meta["normalization"] == {"frame": "unit_sphere", "num_points": 48, "use_normals": False}
    assert meta["config"]["model"] == "centroid_transformer" and meta["config"]["data.num_points"] == 48
    assert meta["source"] == {"checkpoint": "last.pt", "epoch": 1, "step": trained.checkpoint["step"],
                              "best_metric": trained.checkpoint["best_metric"]}
    assert not (exported["classification"] / WEIGHTS).read_bytes().startswith(b"\x80")  # not a pickle


def test_save_pretrained_from_python_matches_the_cli(runs, exported, tmp_path):
    folder = pointabstract.load(runs["reconstruction"]).save_pretrained(tmp_path / "ae")
    assert (folder / WEIGHTS).read_bytes() == (exported["reconstruction"] / WEIGHTS).read_bytes()
    assert json.loads((folder / CONFIG).read_text()) == json.loads((exported["reconstruction"] / CONFIG).read_text())


@pytest.mark.parametrize("task", ["classification", "part_segmentation"])
def test_eval_and_view_take_the_folder(runs, exported, task, tmp_path, monkeypatch):
    data = runs["data"]
    ref = evaluate_checkpoint(runs[task], data_root=data, out_dir=tmp_path / "ckpt", workers=0)
    _no_pickle(monkeypatch)
    got = evaluate_checkpoint(exported[task], data_root=data, out_dir=tmp_path / "dir", workers=0)
    drop = ("checkpoint",)
    assert {k: v for k, v in got.items() if k not in drop} == {k: v for k, v in ref.items() if k not in drop}
    from pointabstract.viz.tasks import load_session

    session = load_session(exported[task], data_root=data)
    assert len(session) == len(restore(exported[task], data_root=data).dataset)


def test_predict_and_eval_cli_take_the_folder(runs, exported, tmp_path, capsys):
    np.save(tmp_path / "c.npy", _cloud(3))
    assert main(["predict", str(exported["classification"]), str(tmp_path / "c.npy"), "--out",
                 str(tmp_path / "p")]) == 0
    records = json.loads((tmp_path / "p" / "predictions.json").read_text())
    expected = pointabstract.load(runs["classification"]).predict(tmp_path / "c.npy")
    assert records[0]["top_k"][0]["class"] == expected.label
    assert main(["eval", str(exported["classification"]), "--data", str(runs["data"]), "--out",
                 str(tmp_path / "e")]) == 0
    assert "test overall accuracy" in capsys.readouterr().out


def test_export_never_replaces_what_it_did_not_write(runs, exported, tmp_path, capsys):
    ckpt = str(runs["classification"])
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep")
    (tmp_path / "theirs").mkdir()
    (tmp_path / "theirs" / CONFIG).write_text('{"model_type": "bert"}')
    cases = [([str(tmp_path / "mine")], r"holds files an export does not write \(e.g. 'notes.txt'\): refused"),
             ([str(tmp_path / "mine"), "--overwrite"], r"holds files an export does not write"),
             ([str(tmp_path / "theirs"), "--overwrite"], r"holds files an export does not write \(e.g. 'config.json'\)"),
             ([str(exported["classification"])], r"already holds an exported model; pass --overwrite"),
             ([str(tmp_path / "mine" / "notes.txt")], r"notes.txt is a file; the export goes into a folder")]
    for args, message in cases:
        assert main(["export", ckpt, *args]) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and err.startswith("error: ")
        assert __import__("re").search(message, err), err
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep"
    assert (tmp_path / "theirs" / CONFIG).read_text() == '{"model_type": "bert"}'
    other = tmp_path / "other"
    assert main(["export", str(runs["reconstruction"]), str(other)]) == 0
    assert main(["export", ckpt, str(other), "--overwrite"]) == 0
    assert json.loads((other / CONFIG).read_text())["task"] == "classification"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no staging folder left


def _copy(folder, to):
    to.mkdir()
    for name in (CONFIG, WEIGHTS):
        (to / name).write_bytes((folder / name).read_bytes())
    return to


@pytest.mark.parametrize("damage, error, message", [
    (lambda f: (f / WEIGHTS).unlink(), FileNotFoundError,
     r"is a folder without model.safetensors: give a trainer checkpoint \(last.pt / best.pt\) or a folder"),
    (lambda f: (f / CONFIG).write_text("{"), ValueError, r"config.json is not a JSON text \("),
    (lambda f: (f / CONFIG).write_text('{"a": 1}'), ValueError,
     r"config.json is not a pointabstract model config \(no \"format\": \"pointabstract-pretrained\"\)"),
    (lambda f: _edit(f, format_version=2), ValueError,
     r"config.json has format_version 2; this pointabstract reads up to 1 \(upgrade pointabstract\)"),
    (lambda f: _edit(f, task_state=[1]), ValueError, r"config.json: 'task_state' must be a JSON object, got list"),
    (lambda f: _edit(f, drop="config"), ValueError, r"config.json misses \['config'\]"),
    (lambda f: (f / WEIGHTS).write_bytes((f / WEIGHTS).read_bytes()[:100]), ValueError,
     r"model.safetensors is not a readable safetensors file \("),
    (lambda f: _edit(f, config={"model": "centroid_transformer", "model.nope": 1}), ValueError,
     r"was written with a config this version cannot read: "),
])
def test_damaged_folders_are_one_line_errors(exported, tmp_path, damage, error, message):
    folder = _copy(exported["classification"], tmp_path / "copy")
    damage(folder)
    with pytest.raises(error, match=message) as info:
        pointabstract.load(folder)
    assert "\n" not in str(info.value) and str(folder) in str(info.value)
    with pytest.raises(error, match=message):
        read_pretrained(folder) if error is not ValueError or "config this version" not in message \
            else pointabstract.load(folder)


def _edit(folder, drop=None, **values):
    meta = json.loads((folder / CONFIG).read_text())
    meta.update(values)
    meta.pop(drop, None)
    (folder / CONFIG).write_text(json.dumps(meta))
