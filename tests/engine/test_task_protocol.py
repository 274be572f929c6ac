"""The loop is generic: a 30-line regression task (predict a cloud's mean height) trains,
keeps the *lowest*-error checkpoint as best.pt, resumes and evaluates through the same code."""

import dataclasses
import json

import numpy as np
import pytest
import torch
from torch import nn

from pointabstract import models
from pointabstract.engine import build_task, evaluate_checkpoint, load_checkpoint, load_config, tasks, train
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
    datasets, eval_options, figures = ("heights",), (), ("table",)

    def __init__(self, data, *, seed=0, settings=None):
        self.s = settings or HeightSettings()

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

    @staticmethod
    def summary(metrics):
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


def _table(run, out):
    return f"## Table\n\n{run.config.task} at {out.name}", {"table_rows": 2}


def test_eval_options_and_figures_are_the_tasks(height_task, tmp_path):
    train(_cfg(tmp_path, "run", "optim.epochs=1"))
    ckpt = tmp_path / "run" / "last.pt"
    # a figure the task names is drawn, one it does not name is not
    metrics = evaluate_checkpoint(ckpt, sections={"table": _table, "cloud": lambda run, out: ("## Cloud", {})},
                                  out_dir=tmp_path / "eval")
    report = (tmp_path / "eval" / "report.md").read_text()
    assert metrics["table_rows"] == 2 and "## Table\n\nheight at eval" in report and "## Cloud" not in report
    with pytest.raises(ValueError, match=r"votes does not apply to .*last.pt, a 'height' checkpoint \(eval options "
                                         r"of the 'height' task: none\)"):
        evaluate_checkpoint(ckpt, votes=2, out_dir=tmp_path / "eval2")
    with pytest.raises(ValueError, match=r"the cloud figure does not apply to .*last.pt, a 'height' checkpoint "
                                         r"\(figures of the 'height' task's report: table\)"):
        evaluate_checkpoint(ckpt, sections={"cloud": _table}, asked=["cloud"], out_dir=tmp_path / "eval2")
    with pytest.raises(ValueError, match=r"asked names sections not given: \['cloud'\] \(sections: \['table'\]\)"):
        evaluate_checkpoint(ckpt, sections={"table": _table}, asked=["cloud"], out_dir=tmp_path / "eval2")
    with pytest.raises(TypeError, match=r"sections must map figure names to builders \(\{name: builder\}\), got list"):
        evaluate_checkpoint(ckpt, sections=[_table], out_dir=tmp_path / "eval2")
    assert not (tmp_path / "eval2").exists()


def test_every_task_declares_what_it_reads_and_takes():
    from pointabstract.engine.tasks import TASKS, default_dataset

    assert {name: default_dataset(name) for name in TASKS} == {
        "classification": "modelnet40", "reconstruction": "shapenet_part", "part_segmentation": "shapenet_part"}
    for name, cls in TASKS.items():
        fields = {f.name for f in dataclasses.fields(cls.settings)}
        assert cls.name == name and set(cls.eval_options) <= fields, name
        assert "viewer" in cls.figures and len(set(cls.figures)) == len(cls.figures)
    assert TASKS["classification"].eval_options == TASKS["part_segmentation"].eval_options == ("votes",)
    assert TASKS["reconstruction"].eval_options == ()


@pytest.mark.parametrize("model", ["centroid_transformer", "capsule_ae_demo_ca", "sequoia_seg_demo"])
def test_a_task_is_built_from_data_seed_and_settings(model):
    cfg = load_config(None, [f"model={model}", "seed=5", "data.num_points=77"])
    task = build_task(cfg)
    assert task.data is cfg.data and task.seed == 5
    cls = type(task)
    assert task.s == cfg.task_config() and cls(cfg.data).s == cls.settings()  # None: the defaults
    with pytest.raises(TypeError, match=rf"{cls.__name__} takes data: DataConfig \(the run's data.\* keys\), got "
                                        r"RunConfig; build a task from a whole run config with build_task\(cfg\)"):
        cls(cfg)
    with pytest.raises(TypeError, match=rf"{cls.__name__} takes settings: {cls.settings.__name__}, got dict"):
        cls(cfg.data, settings={})


def test_a_checkpoint_with_other_label_names_is_refused_in_one_line():
    tasks.base.check_same_labels("ckpt", "classes", ["a", "b"], ["a", "b"], "the data has")
    with pytest.raises(ValueError, match=r"^ckpt was trained on classes \['a', 'b'\], "
                                         r"the data has \['b', 'a'\]$"):
        tasks.base.check_same_labels("ckpt", "classes", ["a", "b"], ["b", "a"], "the data has")
