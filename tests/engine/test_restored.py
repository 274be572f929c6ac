"""restore(): a checkpoint finds the data it was trained on from any working folder."""

import shutil

from pointabstract.engine import load_config, restore, train
from tests.fixtures import tiny_model, write_tiny_modelnet


def _train_in(project, monkeypatch):
    monkeypatch.chdir(project)
    write_tiny_modelnet(project / "data")
    cfg = load_config(None, ["data.root=data", "data.num_points=48", "data.batch_size=8", "data.workers=0",
                             "optim.epochs=1", "log.out_dir=runs/exp", "log.progress=false",
                             "log.tensorboard=false", *tiny_model("centroid_transformer")])
    train(cfg)
    return project / "runs" / "exp" / "last.pt"


def test_a_checkpoint_finds_its_data_from_another_folder(tmp_path, monkeypatch, notes):
    (tmp_path / "project").mkdir()
    (tmp_path / "elsewhere").mkdir()
    ckpt = _train_in(tmp_path / "project", monkeypatch)
    monkeypatch.chdir(tmp_path / "elsewhere")
    run = restore(ckpt)
    assert run.config.data.root == str(tmp_path / "project" / "data") and len(run.dataset) == 12
    assert notes() == ""  # the stored absolute path: nothing to say


def test_a_moved_project_still_finds_its_data_and_says_so(tmp_path, monkeypatch, notes):
    (tmp_path / "project").mkdir()
    _train_in(tmp_path / "project", monkeypatch)
    monkeypatch.chdir(tmp_path)
    shutil.move(tmp_path / "project", tmp_path / "moved")
    run = restore(tmp_path / "moved" / "runs" / "exp" / "last.pt")
    assert run.config.data.root == str(tmp_path / "moved" / "data")
    assert "note: data.root 'data' of " in notes()
    monkeypatch.chdir(tmp_path / "moved")
    assert restore("runs/exp/last.pt").config.data.root == str(tmp_path / "moved" / "data")
