"""Training on a folder of the user's own shapes (data.dataset=folder): the tiny classifier gets one
output per class folder and its checkpoint names them; the tiny autoencoder trains on the same folder."""

from pathlib import Path

import numpy as np
import pytest
import torch

from pointabstract.engine import evaluate_checkpoint, load_checkpoint, load_config, restore, train
from tests.fixtures import snapshot, tiny_model, write_shapes

RUN = ["data.dataset=folder", "data.num_points=48", "data.batch_size=3", "data.eval_batch_size=8",
       "data.workers=0", "optim.epochs=1", "log.progress=false", "log.tensorboard=false", "device=cpu"]


@pytest.fixture
def shapes(tmp_path, monkeypatch):
    monkeypatch.setenv("POINTABSTRACT_CACHE", str(tmp_path / "cache"))
    return write_shapes(tmp_path / "my shapes", per_class=4)


@pytest.fixture(scope="module")
def classifier(tmp_path_factory):
    """(shapes folder, its snapshot before training, run folder, training metrics) of a tiny
    classifier trained one epoch on 3 class folders."""
    tmp = tmp_path_factory.mktemp("folder")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("POINTABSTRACT_CACHE", str(tmp / "cache"))
        shapes = write_shapes(tmp / "my shapes", per_class=4)
        before = snapshot(shapes)
        cfg = load_config(None, [f"data.root={shapes}", f"log.out_dir={tmp / 'run'}", *RUN,
                                 *tiny_model("centroid_transformer")])
        return shapes, before, tmp / "run", train(cfg)


def test_the_classifier_is_tested_on_one_shape_per_class(classifier):
    assert classifier[3]["samples"] == 3  # 4 files per class, test_fraction 0.2


def test_the_checkpoint_names_the_class_folders(classifier):
    ckpt = load_checkpoint(classifier[2] / "last.pt")
    assert ckpt["task_state"]["class_names"] == ["pyramid", "slab", "tetra"]


def test_the_restored_classifier_has_one_output_per_class_folder(classifier):
    run = restore(classifier[2] / "last.pt")
    with torch.no_grad():
        logits = run.model(torch.rand(2, 48, 3))["logits"]
    assert logits.shape == (2, 3)  # 3 classes, not ModelNet's 40
    assert len(run.dataset) == 3 and run.dataset.classes == ("pyramid", "slab", "tetra")


def test_training_writes_nothing_into_the_shapes_folder(classifier):
    shapes, before, _, _ = classifier
    assert snapshot(shapes) == before


def test_eval_reproduces_the_training_metrics(classifier, tmp_path):
    again = evaluate_checkpoint(classifier[2] / "last.pt", out_dir=tmp_path / "eval")
    assert again["overall_accuracy"] == pytest.approx(classifier[3]["overall_accuracy"])


def test_an_autoencoder_trains_on_the_same_folder(shapes, tmp_path):
    cfg = load_config(None, ["model=capsule_ae_demo_ca", f"data.root={shapes}", f"log.out_dir={tmp_path / 'ae'}",
                             *RUN, "data.num_points=64", "task.examples=0", "task.bn_batches=1", *tiny_model("capsule_ae_demo_ca")])
    metrics = train(cfg)
    assert metrics["samples"] == 3 and np.isfinite(metrics["chamfer"])
    assert load_checkpoint(tmp_path / "ae" / "last.pt")["task_state"]["category_names"] == ["pyramid", "slab", "tetra"]


def test_test_fraction_is_checked(shapes):
    with pytest.raises(ValueError, match=r"data.test_fraction must be a finite number in \(0.0, 1.0\), got 1.0"):
        load_config(None, [f"data.root={shapes}", "data.dataset=folder", "data.test_fraction=1.0"])


def test_the_task_refuses_a_folder_without_class_folders(tmp_path, monkeypatch):
    from pointabstract.engine.tasks import build_task
    from pointabstract.engine.tasks.base import MissingDatasetError

    monkeypatch.setenv("POINTABSTRACT_CACHE", str(tmp_path / "cache"))
    (tmp_path / "flat").mkdir()
    cfg = load_config(None, [f"data.root={tmp_path / 'flat'}", "data.dataset=folder"])
    with pytest.raises(MissingDatasetError, match=r"flat: no class folders"):
        build_task(cfg).dataset("train", train=True)


def test_eval_and_resume_keep_the_split_the_run_trained_on(shapes, tmp_path, notes):
    # issue 38: adding files reshuffled the split; eval then scored training files as test and --resume
    # trained on the new split, both without a word
    import json

    from tests.fixtures import TETRA, write_mesh

    out = tmp_path / "run"
    args = [f"data.root={shapes}", f"log.out_dir={out}", *RUN, "optim.epochs=2", *tiny_model("centroid_transformer")]
    train(load_config(None, args), max_epochs=1)
    recorded = json.loads((out / "split.json").read_text())
    assert len(recorded["test"]) == 3 and len(recorded["train"]) == 9
    for i in range(6):  # tetra grows from 4 to 10 files: a split made again puts 2 of them in test
        write_mesh(shapes / "tetra" / f"added{i}.obj", TETRA, 3.0 + i)
    notes()
    run = restore(out / "last.pt")
    assert [str(p.relative_to(shapes)) for p in map(Path, run.dataset.sources)] == recorded["test"]
    metrics = evaluate_checkpoint(out / "last.pt", out_dir=tmp_path / "eval")
    assert metrics["samples"] == 3
    note = (f"note: 6 shape file(s) under {shapes} are not in the split {out / 'last.pt'} was trained on "
            f"({out / 'split.json'}): left out of its test set")
    assert notes().count(note) == 2  # restore, then eval
    seen = []
    train(load_config(None, args), resume=True, on_epoch_end=[lambda r: seen.append(list(r.train_ds.sources))])
    assert [str(Path(p).relative_to(shapes)) for p in seen[0]] == recorded["train"]
    assert json.loads((out / "split.json").read_text()) == recorded
    err = notes()
    assert err.count("note: 6 shape file(s)") == 1 and "left out of train and test" in err
