"""The loop is generic: a 20-line regression task (predict a cloud's mean height) trains,
keeps the *lowest*-error checkpoint as best.pt, resumes and evaluates through the same code."""

import dataclasses
import json

import numpy as np
import pytest
import torch
from torch import nn

from pointabstract import models
from pointabstract.engine import evaluate_checkpoint, load_checkpoint, load_config, tasks, train
from pointabstract.models import ModelSpec


class Heights(torch.utils.data.Dataset):
    def __init__(self, n, seed):
        rng = np.random.default_rng(seed)
        self.pos = rng.normal(size=(n, 16, 3)).astype(np.float32) + rng.normal(size=(n, 1, 3)).astype(np.float32)
        self.transform = None

    def set_epoch(self, epoch):
        pass

    def __len__(self):
        return len(self.pos)

    def __getitem__(self, i):
        return {"pos": self.pos[i], "height": np.float32(self.pos[i, :, 1].mean())}


@dataclasses.dataclass
class HeightSettings:
    scale: float = 1.0  # a task.* key, validated like model.*


class HeightTask:
    name, settings, metric, mode = "height", HeightSettings, "mse", "min"

    def __init__(self, cfg):
        self.cfg, self.s = cfg, cfg.task_config()

    def dataset(self, split, *, train):
        return Heights(32 if split == "train" else 16, seed=0 if split == "train" else 1)

    def model_args(self):
        return {}

    def step(self, model, batch, device):
        err = model(batch["pos"].to(device)) - self.s.scale * batch["height"].to(device)
        return (err ** 2).mean(), {"abs_error": err.abs().mean().item()}

    @torch.no_grad()
    def evaluate(self, model, loader, device, *, autocast):
        errs = torch.cat([model(b["pos"]) - self.s.scale * b["height"] for b in loader])
        return {"mse": float((errs ** 2).mean()), "samples": len(errs)}

    def state(self):
        return {}

    def check_restore(self, state, where):
        pass

    def summary(self, metrics):
        return f"test mse {metrics['mse']:.4f}"

    def report(self, metrics, out):
        return [f"- mse {metrics['mse']:.4f}"]

    def curves(self):
        return {"error": ["train_abs_error"]}


@dataclasses.dataclass
class MeanHeightConfig:
    hidden: int = 8


class MeanHeight(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(3, cfg.hidden), nn.ReLU(), nn.Linear(cfg.hidden, 1))

    def forward(self, pos):
        return self.net(pos).mean(dim=(1, 2))


@pytest.fixture
def height_task(monkeypatch):
    monkeypatch.setitem(tasks.TASKS, "height", HeightTask)
    monkeypatch.setitem(models.MODELS, "mean_height", ModelSpec(MeanHeight, MeanHeightConfig, "height"))


def _cfg(tmp_path, name, *extra):
    return load_config(None, ["model=mean_height", "data.batch_size=8", "data.eval_batch_size=8",
                              "data.workers=0", "optim.epochs=4", "optim.lr=0.01", "device=cpu",
                              f"log.out_dir={tmp_path / name}", "log.progress=false",
                              "log.tensorboard=false", *extra])


def test_a_foreign_task_trains_resumes_and_evaluates(height_task, tmp_path):
    cfg = _cfg(tmp_path, "full", "task.scale=2.0")
    assert cfg.task == "height" and cfg.task_config().scale == 2.0
    metrics = train(cfg)
    rows = [json.loads(line) for line in (tmp_path / "full" / "metrics.jsonl").read_text().splitlines()]
    assert {"train_loss", "train_abs_error", "test_mse", "test_samples"} <= set(rows[0])
    best = min(range(4), key=lambda i: rows[i]["test_mse"])
    assert load_checkpoint(tmp_path / "full" / "best.pt")["epoch"] == best + 1  # mode "min"
    assert (tmp_path / "full" / "curves.png").is_file() and "test mse" in (tmp_path / "full" / "report.md").read_text()

    parted = _cfg(tmp_path, "part", "task.scale=2.0")
    train(parted, max_epochs=2)
    resumed = train(parted, resume=True)
    assert resumed == metrics

    again = evaluate_checkpoint(tmp_path / "part" / "last.pt")
    assert again["mse"] == pytest.approx(metrics["mse"])
    assert (tmp_path / "part" / "eval_last" / "report.md").is_file()
    assert json.loads((tmp_path / "part" / "metrics.json").read_text())["mse"] == metrics["mse"]


def test_task_keys_are_validated_against_the_task(height_task, tmp_path):
    with pytest.raises(ValueError, match=r"unknown config key\(s\) \['task.scael'\] for the 'height' task; "
                                         r"valid keys: \['task.scale'\]"):
        _cfg(tmp_path, "x", "task.scael=2")
    with pytest.raises(ValueError, match="task.scale must be a float"):
        _cfg(tmp_path, "x", "task.scale=abc")


@pytest.mark.parametrize("root, hint", [
    ("datasets/synthetic", "run: pointabstract data synth --out datasets/synthetic"),
    ("datasets/synthetic-hard", "run: pointabstract data synth --level hard --out datasets/synthetic-hard"),
    ("/data/modelnet40", "instead: pointabstract data synth (writes datasets/synthetic), then train with "
                         "data.root=datasets/synthetic"),
    ("some/mesh.obj", "instead: pointabstract data synth (writes datasets/synthetic)"),
])
def test_the_missing_dataset_hint_never_writes_into_a_users_folder(root, hint):
    from pointabstract.engine.tasks.base import MissingDatasetError, missing_dataset

    err = missing_dataset(ValueError("no layout"), root)
    assert isinstance(err, MissingDatasetError) and hint in str(err)
    if not root.startswith("datasets/synthetic"):
        assert f"--out {root}" not in str(err)
