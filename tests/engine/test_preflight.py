"""The checks before the first training step: unreadable data and BatchNorm batches of one."""

import time

import pytest
import torch

from pointabstract.engine import load_config, train
from pointabstract.engine.tasks import build_task
from pointabstract.engine.tasks.preflight import check_batch_statistics
from tests.fixtures import resampled_layout, tiny_model


def _overrides(root, tmp_path, *extra):
    return [f"data.root={root}", "data.num_points=32", "data.batch_size=4", "data.eval_batch_size=4",
            "data.workers=2", "optim.epochs=1", f"log.out_dir={tmp_path / 'run'}", "log.progress=false",
            "log.tensorboard=false", "device=cpu", *tiny_model("centroid_transformer"), *extra]


@pytest.mark.parametrize("split, name", [("train", "training"), ("test", "test")])
def test_an_unreadable_file_fails_before_the_first_epoch(tmp_path, split, name):
    root = resampled_layout(tmp_path / "data", bad_split=split)
    started = time.perf_counter()
    # used to fail mid-epoch (training set) or after a whole epoch (test set), in a DataLoader worker
    with pytest.raises(ValueError, match=rf"^the {name} set cannot be read, found before training: .*"
                                         rf"bathtub_0(00|10)1.txt.* line 3.*; 'pointabstract data info .* --check' "
                                         r"lists every problem$"):
        train(load_config(None, _overrides(root, tmp_path)))
    assert time.perf_counter() - started < 10
    assert not (tmp_path / "run" / "last.pt").exists() and not (tmp_path / "run" / "metrics.jsonl").exists()


def test_a_readable_set_trains(tmp_path):
    root = resampled_layout(tmp_path / "data", bad_line="0.1,0.2,0.3,0,0,1")
    metrics = train(load_config(None, _overrides(root, tmp_path, "data.workers=0")))
    assert metrics["samples"] == 8


def _check(model, batch, size, world=1, *extra):
    cfg = load_config(None, [f"model={model}", f"data.batch_size={batch}", *extra])
    task = build_task(cfg)
    task.class_names = ["a", "b"]  # classification: what the training set would give
    check_batch_statistics(cfg, task, size, world_size=world)


@pytest.mark.parametrize("model, batch, size, world, extra, message", [
    # a capsule autoencoder trained on single shapes reached a test Chamfer 20x its train loss, silently
    ("capsule_ae_demo_dr", 1, 100, 1, [], r"data.batch_size=1 gives the BatchNorm layers of 'capsule_ae_demo_dr' "
     r"one shape per step: statistics of one shape do not hold at evaluation .*; use data.batch_size >= 2"),
    ("centroid_transformer", 1, 100, 1, [], r"data.batch_size=1 gives the BatchNorm layers"),
    ("capsule_ae_demo_dr", 2, 100, 2, ["sync_bn=false"],
     r"data.batch_size=2 over 2 processes \(sync_bn off\) gives the BatchNorm layers .*data.batch_size >= 4"),
    # 17 shapes in batches of 8: the third batch holds one (classification: a BatchNorm error mid-epoch)
    ("centroid_transformer", 8, 17, 1, [], r"the last training batch of every epoch would hold 1 shape \(17 "
     r"training shapes, data.batch_size=8\): the BatchNorm layers of 'centroid_transformer' cannot take "
     r"statistics from one shape; choose e.g. data.batch_size=9, or add or remove a training shape"),
    # 10 shapes over 2 processes in global batches of 4: each process ends with one shape
    ("capsule_ae_demo_dr", 4, 10, 2, ["sync_bn=false"],
     r"hold 1 shape \(10 training shapes, data.batch_size=4 over 2 processes\).*e.g. data.batch_size=6"),
])
def test_batchnorm_batches_of_one_shape_are_refused(model, batch, size, world, extra, message):
    with pytest.raises(ValueError, match=message):
        _check(model, batch, size, world, *extra)


@pytest.mark.parametrize("model, batch, size, world, extra", [
    ("sequoia_seg_demo", 1, 100, 1, []),  # LayerNorm only: a batch of one is fine
    ("sequoia_seg_demo", 8, 17, 1, []),
    ("capsule_ae_demo_dr", 2, 100, 2, []),  # sync_bn: statistics over both processes' shapes
    ("capsule_ae_demo_dr", 4, 10, 2, []),
    ("capsule_ae_demo_dr", 8, 16, 1, []),
    ("capsule_ae_demo_dr", 8, 18, 1, []),
    ("capsule_ae_demo_dr", 4, 9, 2, ["sync_bn=false"]),  # the sampler drops the 1 left over
])
def test_batches_that_can_train_pass_and_leave_the_rng_alone(model, batch, size, world, extra):
    state = torch.random.get_rng_state()
    _check(model, batch, size, world, *extra)
    assert torch.equal(state, torch.random.get_rng_state())


def test_a_reconstruction_run_with_batches_of_one_is_refused_before_training(tiny_data, tmp_path):
    cfg = load_config(None, ["model=capsule_ae_demo_dr", "data.dataset=modelnet40", f"data.root={tiny_data}",
                             "data.num_points=64", "data.batch_size=1", "data.workers=0", "optim.epochs=1",
                             f"log.out_dir={tmp_path / 'run'}", "log.progress=false", "log.tensorboard=false",
                             "device=cpu"])
    with pytest.raises(ValueError, match=r"data.batch_size=1 gives the BatchNorm layers of 'capsule_ae_demo_dr'"):
        train(cfg)  # used to train (and score a test Chamfer many times its train loss) without a word
    assert not (tmp_path / "run" / "last.pt").exists()


def test_large_file_per_shape_sets_get_the_cheap_check(tmp_path, monkeypatch):
    from pointabstract.engine.tasks import preflight

    root = resampled_layout(tmp_path / "data")  # a NaN at line 3 of bathtub_0001.txt
    (root / "airplane" / "airplane_0002.txt").write_text("")
    cfg = load_config(None, [f"data.root={root}", "data.num_points=32"])
    task = build_task(cfg)
    train_set = task.dataset("train", train=True)
    monkeypatch.setattr(preflight, "MAX_FILES", 4)  # 8 files: only checked to exist and hold bytes
    with pytest.raises(ValueError, match=r"the training set cannot be read, found before training: "
                                         r".*airplane_0002.txt: empty file; "):
        preflight.check_datasets(cfg, training=train_set)
    (root / "airplane" / "airplane_0002.txt").unlink()
    with pytest.raises(ValueError, match=r"airplane_0002.txt: cannot be read \(No such file or directory\)"):
        preflight.check_datasets(cfg, training=train_set)
