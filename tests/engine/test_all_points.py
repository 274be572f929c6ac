"""``data.num_points=all``: training on clouds of their own sizes (batches padded with lengths),
and predict giving each cloud of a mixed-size list what it gives alone."""

import json
from pathlib import Path

import numpy as np
import pytest

import pointabstract
from pointabstract.data import collate
from pointabstract.engine import build_task, load_config, train
from tests.fixtures import tiny_model, write_normal

RUN = ["data.num_points=all", "data.batch_size=4", "data.eval_batch_size=4", "data.workers=0",
       "optim.epochs=1", "log.progress=false", "log.tensorboard=false", "device=cpu"]


def _folder(root):
    """2 classes (ball, bar) of .pts clouds of 30 to 58 points."""
    rng = np.random.default_rng(0)
    for i in range(8):
        n = 30 + 4 * i
        p = rng.normal(size=(n, 3))
        p = p / np.linalg.norm(p, axis=1, keepdims=True) if i % 2 else p * [1, 0.1, 0.1]
        (root / ("ball" if i % 2 else "bar")).mkdir(parents=True, exist_ok=True)
        np.savetxt(root / ("ball" if i % 2 else "bar") / f"c{i}.pts", p, fmt="%.6f", header=str(n), comments="")
    return root


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("all")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("POINTABSTRACT_CACHE", str(tmp / "cache"))
        folder = _folder(tmp / "shapes")
        cls = load_config(None, [f"data.root={folder}", "data.dataset=folder", f"log.out_dir={tmp / 'cls'}",
                                 *RUN, *tiny_model("centroid_transformer")])
        seg = load_config(None, [f"data.root={write_normal(tmp / 'parts')}", "data.dataset=shapenet_part",
                                 "model=sequoia_seg", f"log.out_dir={tmp / 'seg'}", *RUN, *tiny_model("sequoia_seg")])
        yield {"cls": (cls, train(cls)), "seg": (seg, train(seg))}


@pytest.mark.parametrize("kind", ["cls", "seg"])
def test_training_batches_are_padded_with_lengths_and_metrics_are_finite(runs, kind):
    cfg, metrics = runs[kind]
    dataset = build_task(cfg).dataset("train", train=True)
    sizes = {len(dataset[i]["pos"]) for i in range(len(dataset))}
    assert len(sizes) > 1  # every stored point: the clouds keep their own sizes
    assert "lengths" in collate([dataset[i] for i in range(len(dataset))])
    logged = json.loads((Path(cfg.log.out_dir) / "metrics.jsonl").read_text().splitlines()[-1])
    assert np.isfinite(logged["train_loss"]) and metrics["samples"] > 0


def test_predict_of_a_mixed_size_list_equals_each_cloud_alone(runs):
    predictor = pointabstract.load(runs["cls"][0].log.out_dir + "/last.pt")
    assert predictor.num_points is None
    rng = np.random.default_rng(1)
    clouds = [rng.normal(size=(n, 3)).astype(np.float32) for n in (7, 40, 300)]
    together = predictor.predict(clouds, votes=1)
    for cloud, found in zip(clouds, together):
        alone = predictor.predict(cloud, votes=1)
        assert np.allclose(found.probs, alone.probs, atol=1e-5) and not found.notes  # nothing resampled


def test_part_predict_of_a_mixed_size_list_equals_each_cloud_alone(runs):
    predictor = pointabstract.load(runs["seg"][0].log.out_dir + "/last.pt")
    rng = np.random.default_rng(2)
    clouds = [rng.normal(size=(n, 3)).astype(np.float32) for n in (9, 33)]
    together = predictor.predict(clouds, votes=1, category=0)
    for cloud, found in zip(clouds, together):
        alone = predictor.predict(cloud, votes=1, category=0)
        assert len(found.model_labels) == len(cloud)
        assert np.array_equal(found.model_labels, alone.model_labels)


def test_all_is_refused_for_reconstruction_and_other_words_are_refused():
    with pytest.raises(ValueError, match="data.num_points=all is for classification and part_segmentation"):
        load_config(None, ["data.num_points=all", "model=pointnet_ae_demo", "task=reconstruction"])
    with pytest.raises(ValueError, match=r"data.num_points must be a positive int or 'all' \(every stored "
                                         r"point\), got 'many'"):
        load_config(None, ["data.num_points=many"])
