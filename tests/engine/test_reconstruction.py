"""The reconstruction task, built from its data config and settings and driven directly."""

import contextlib
import json
import os

import numpy as np
import pytest
import torch

from pointabstract.data import collate
from pointabstract.data.synthetic import generate
from pointabstract.engine.config import DataConfig
from pointabstract.engine.precise_bn import recalibrate_batchnorm
from pointabstract.engine.tasks.base import MissingDatasetError
from pointabstract.engine.tasks.reconstruction import ReconstructionSettings, ReconstructionTask
from pointabstract.models.capsule_autoencoder import SPECS, CapsuleAutoencoder
from pointabstract.ops import chamfer_distance
from tests.fixtures import tiny_sizes


def _task(root, dataset="modelnet40", num_points=128, **settings):
    data = DataConfig(dataset=dataset, root=str(root), num_points=num_points, batch_size=4,
                      eval_batch_size=8, workers=0)
    return ReconstructionTask(data, seed=0, settings=ReconstructionSettings(**settings))


@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    root = tmp_path_factory.mktemp("synth")
    generate(root, train_per_class=1, test_per_class=1, num_points=256, workers=1, progress=False)
    return root


def _model(name="capsule_ae_demo_ca"):
    torch.manual_seed(0)
    spec = SPECS[name]
    return CapsuleAutoencoder(spec.config(**{**spec.defaults, **spec.tiny}))


def _loader(ds, batch=8):
    return torch.utils.data.DataLoader(ds, batch_size=batch, collate_fn=collate)


@pytest.mark.parametrize("dataset", ["modelnet40", "shapenet_part", "shapenet_core"])
def test_datasets_are_normalised_to_the_unit_sphere(synth, dataset):
    task = _task(synth, dataset)
    for split, train in [("train", True), ("test", False)]:
        ds = task.dataset(split, train=train)
        sample = ds[0]
        assert sample["pos"].shape == (128, 3)
        # the N drawn points are centred and scaled (the farthest on the unit sphere)
        np.testing.assert_allclose(np.linalg.norm(sample["pos"], axis=1).max(), 1.0, rtol=1e-5)
        np.testing.assert_allclose(sample["pos"].mean(0), 0.0, atol=1e-5)
    # ShapeNetCore labels index its 24-entry table (ShapeNetCore13 first, then the other
    # ShapeNetPart categories) in every layout
    assert len(task.category_names) == (24 if dataset == "shapenet_core" else 16) and task.has_parts == (dataset == "shapenet_part")
    assert task.model_args() == {}


def test_step_is_the_chamfer_loss(synth):
    task = _task(synth)
    batch = next(iter(_loader(task.dataset("train", train=True), batch=4)))
    model = _model()
    torch.manual_seed(1)
    loss, stats = task.step(model, batch, torch.device("cpu"))
    torch.manual_seed(1)
    want = chamfer_distance(model(batch["pos"], noise_seed=batch["noise_seed"])["points"], batch["pos"])
    torch.testing.assert_close(loss, want)
    loss.backward()
    assert stats == {} and all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)


def test_evaluate_metrics_and_report(synth, tmp_path):
    task = _task(synth, "shapenet_part", examples=2)
    ds = task.dataset("test", train=False)
    model = _model()
    metrics = task.evaluate(model, _loader(ds), torch.device("cpu"), autocast=contextlib.nullcontext)
    assert metrics["samples"] == len(ds) == 16 and model.training
    model.eval()
    with torch.no_grad():
        batch = collate([ds[i] for i in range(len(ds))])
        points = model(batch["pos"])["points"]
        want = chamfer_distance(points, batch["pos"], batch_reduction=None)
    assert metrics["chamfer"] == pytest.approx(want.mean().item(), rel=1e-5)
    per_cat = metrics["per_category_chamfer"]
    assert per_cat["Airplane"] == pytest.approx(want[batch["category"] == 0].mean().item(), rel=1e-5)
    assert 0 <= metrics["fscore"] <= 1 and 0 < metrics["purity"] <= 1
    counts = np.array(metrics["capsule_parts"]["counts"])
    assert counts.shape == (4, len(metrics["capsule_parts"]["parts"])) and counts.sum() == 16 * 64
    ranked = want.sort().values.tolist()
    kept = [(e["kind"], e["cd"]) for e in task._examples]
    assert [k for k, _ in kept] == ["best", "best", "worst", "worst"]
    assert [c for _, c in kept] == pytest.approx(ranked[:2] + ranked[::-1][:2], rel=1e-5)
    lines = task.report(metrics, tmp_path)
    assert (tmp_path / "reconstructions.png").stat().st_size > 0
    text = "\n".join(lines)
    assert "x 1e-3" in text and "squared Euclidean" in text and "| Airplane |" in text
    assert "Chamfer distance" in task.summary(metrics) and "purity" in task.summary(metrics)
    assert task.mode == "min" and task.metric == "chamfer"


def test_short_training_lowers_the_test_chamfer(synth):
    task = _task(synth, num_points=128)
    train, test = task.dataset("train", train=True), task.dataset("test", train=False)
    model = _model("capsule_ae_demo_dr")
    before = task.evaluate(model, _loader(test), torch.device("cpu"), autocast=contextlib.nullcontext)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for epoch in range(25):
        train.set_epoch(epoch)
        for batch in _loader(train, batch=8):
            opt.zero_grad()
            loss, _ = task.step(model, batch, torch.device("cpu"))
            loss.backward()
            opt.step()
    after = task.evaluate(model, _loader(test), torch.device("cpu"), autocast=contextlib.nullcontext)
    assert after["chamfer"] < 0.6 * before["chamfer"], (before["chamfer"], after["chamfer"])


def test_bad_settings_and_missing_data(tmp_path, synth):
    with pytest.raises(ValueError, match=r"task.augment must be one of \['none', 'rotate_up'\], got 'x'"):
        _task(tmp_path, augment="x")
    with pytest.raises(ValueError, match="task.fscore_threshold must be > 0, got 0"):
        _task(tmp_path, fscore_threshold=0)
    with pytest.raises(ValueError, match="task.undersized must be 'repeat' or 'error'"):
        _task(tmp_path, undersized="drop")
    with pytest.raises(ValueError, match="data.dataset must be one of .* for reconstruction, got 'mnist'"):
        _task(synth, "mnist").dataset("train", train=True)
    for dataset in ("modelnet40", "shapenet_part", "shapenet_core"):
        with pytest.raises(MissingDatasetError, match="pointabstract data synth"):
            _task(tmp_path / "empty", dataset).dataset("train", train=True)


def test_real_shapenet_part_cap_subset(realdata):
    task = _task(realdata, "shapenet_part", num_points=2048)
    ds = task.dataset("test", train=False)
    assert len(ds) == 11 and {int(ds[i]["category"]) for i in range(len(ds))} == {2}  # Cap
    metrics = task.evaluate(_model(), _loader(ds), torch.device("cpu"), autocast=contextlib.nullcontext)
    assert metrics["samples"] == 11 and set(metrics["capsule_parts"]["parts"]) <= {6, 7}
    assert metrics["per_category_chamfer"]["Cap"] == pytest.approx(metrics["chamfer"])


def test_real_off_meshes(realdata, tmp_path):
    # the OFF cache is written beside the meshes: link the files into a folder of our own
    for mesh in (realdata / "ModelNet40").rglob("*.off"):
        target = tmp_path / "ModelNet40" / mesh.relative_to(realdata / "ModelNet40")
        target.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(mesh, target)
    task = _task(tmp_path, "modelnet40", num_points=512)
    ds = task.dataset("train", train=True)
    assert ds.layout == "off" and len(ds) == 22
    batch = collate([ds[i] for i in range(4)])
    assert torch.linalg.norm(batch["pos"], dim=-1).amax(1).sub(1).abs().max() < 1e-5
    loss, _ = task.step(_model(), batch, torch.device("cpu"))
    assert torch.isfinite(loss)


def _train_overrides(root, out, *extra):
    return {"model": "capsule_ae_demo_ca", "data.dataset": "shapenet_part", "data.root": str(root),
            "data.num_points": 64, "data.batch_size": 4, "data.eval_batch_size": 16, "data.workers": 0,
            "optim.epochs": 4, "optim.lr": 1e-2, "task.examples": 0, "log.out_dir": str(out), "log.progress": False,
            "log.tensorboard": False, "device": "cpu", **tiny_sizes("capsule_ae_demo_ca"),
            **dict(extra)}


def test_precise_bn_closes_the_eval_gap_and_checkpoints_reproduce_it(synth, tmp_path):
    from pointabstract.engine import evaluate_checkpoint, load_config, train

    metrics = {}
    for bn in (0, 8):
        cfg = load_config(None, _train_overrides(synth, tmp_path / f"bn{bn}", ("task.bn_batches", bn)))
        metrics[bn] = train(cfg)
    rows = [json.loads(line) for line in (tmp_path / "bn8" / "metrics.jsonl").read_text().splitlines()]
    print({bn: m["chamfer"] for bn, m in metrics.items()}, rows[-1]["train_loss"])
    assert metrics[8]["chamfer"] < 1.5 * rows[-1]["train_loss"]
    assert metrics[0]["chamfer"] > 1.5 * metrics[8]["chamfer"]  # running averages lag the weights
    again = evaluate_checkpoint(tmp_path / "bn8" / "last.pt", out_dir=tmp_path / "eval")
    assert again["chamfer"] == pytest.approx(metrics[8]["chamfer"], rel=1e-6)


def test_recalibrate_touches_only_statistics_and_is_deterministic(synth):
    task = _task(synth, "shapenet_part", num_points=64)
    train = task.dataset("train", train=True)
    model = _model()
    model.eval()
    weights = {k: v.clone() for k, v in model.named_parameters()}
    buffers = []
    for _ in range(2):
        recalibrate_batchnorm(model, train, batches=3, batch_size=4, seed=0, device="cpu")
        buffers.append({k: v.clone() for k, v in model.named_buffers()})
    assert not model.training and all(torch.equal(v, weights[k]) for k, v in model.named_parameters())
    assert all(torch.equal(buffers[0][k], buffers[1][k]) for k in buffers[0])
    # the primary capsules' own statistics are recomputed too (cumulative average, momentum kept)
    assert model.primary.momentum == 0.1 and model.primary._batches == 3
    assert not torch.equal(buffers[0]["primary.running_var"], torch.ones_like(buffers[0]["primary.running_var"]))
    with pytest.raises(ValueError, match="task.bn_batches must be an integer >= 0, got -1"):
        _task(synth, bn_batches=-1)


def test_how_often_a_run_evaluates_does_not_change_its_training(synth, tmp_path):
    from pointabstract.engine import load_checkpoint, load_config, train

    weights = []
    for every in (1, 3):
        out = tmp_path / f"every{every}"
        train(load_config(None, _train_overrides(synth, out, ("optim.epochs", 3), ("log.eval_every", every))))
        weights.append(load_checkpoint(out / "last.pt")["model"])
    assert [k for k in weights[0] if not torch.equal(weights[0][k], weights[1][k])] == []
