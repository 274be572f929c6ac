"""Training on a folder of the user's own shapes (data.dataset=folder): the tiny classifier gets one
output per class folder and its checkpoint names them; the tiny autoencoder trains on the same folder."""

import numpy as np
import pytest
import torch

from pointabstract.engine import evaluate_checkpoint, load_checkpoint, load_config, train
from pointabstract.models.capsule_autoencoder import SPECS
from tests.data.datasets.test_folder import snapshot, write_shapes
from tests.fixtures import TINY_MODEL

RUN = ["data.dataset=folder", "data.num_points=48", "data.batch_size=3", "data.eval_batch_size=8",
       "data.workers=0", "optim.epochs=1", "log.progress=false", "log.tensorboard=false", "device=cpu"]


@pytest.fixture
def shapes(tmp_path, monkeypatch):
    monkeypatch.setenv("POINTABSTRACT_CACHE", str(tmp_path / "cache"))
    return write_shapes(tmp_path / "my shapes", per_class=4)


def test_a_classifier_trains_with_one_output_per_class_folder(shapes, tmp_path):
    before = snapshot(shapes)
    cfg = load_config(None, [f"data.root={shapes}", f"log.out_dir={tmp_path / 'run'}", *RUN, *TINY_MODEL])
    metrics = train(cfg)
    assert metrics["samples"] == 3  # one test shape per class (4 files, test_fraction 0.2)
    ckpt = load_checkpoint(tmp_path / "run" / "last.pt")
    assert ckpt["task_state"]["class_names"] == ["pyramid", "slab", "tetra"]
    from pointabstract.engine import restore

    run = restore(tmp_path / "run" / "last.pt")
    with torch.no_grad():
        logits = run.model(torch.rand(2, 48, 3))["logits"]
    assert logits.shape == (2, 3)  # 3 classes, not ModelNet's 40
    assert len(run.dataset) == 3 and run.dataset.classes == ("pyramid", "slab", "tetra")
    assert snapshot(shapes) == before
    again = evaluate_checkpoint(tmp_path / "run" / "last.pt", out_dir=tmp_path / "eval")
    assert again["overall_accuracy"] == pytest.approx(metrics["overall_accuracy"])


def test_an_autoencoder_trains_on_the_same_folder(shapes, tmp_path):
    model = [f"model.{k}={list(v) if isinstance(v, tuple) else v}" for k, v in SPECS["capsule_ae_demo_ca"].tiny.items()]
    cfg = load_config(None, ["model=capsule_ae_demo_ca", f"data.root={shapes}", f"log.out_dir={tmp_path / 'ae'}",
                             *RUN, "data.num_points=64", "task.examples=0", "task.bn_batches=1", *model])
    metrics = train(cfg)
    assert metrics["samples"] == 3 and np.isfinite(metrics["chamfer"])
    assert load_checkpoint(tmp_path / "ae" / "last.pt")["task_state"]["category_names"] == ["pyramid", "slab", "tetra"]


def test_test_fraction_is_checked(shapes):
    with pytest.raises(ValueError, match=r"data.test_fraction must be in \(0, 1\), got 1.0"):
        load_config(None, [f"data.root={shapes}", "data.dataset=folder", "data.test_fraction=1.0"])


def test_the_task_refuses_a_folder_without_class_folders(tmp_path, monkeypatch):
    from pointabstract.engine.tasks import build_task
    from pointabstract.engine.tasks.base import MissingDatasetError

    monkeypatch.setenv("POINTABSTRACT_CACHE", str(tmp_path / "cache"))
    (tmp_path / "flat").mkdir()
    cfg = load_config(None, [f"data.root={tmp_path / 'flat'}", "data.dataset=folder"])
    with pytest.raises(MissingDatasetError, match=r"flat: no class folders"):
        build_task(cfg).dataset("train", train=True)
