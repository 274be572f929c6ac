"""pointabstract.load(...).predict(...): the same predictions as eval on dataset samples, points
mapped back to the input's coordinates, N handled as documented, labels for every input point."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import pointabstract
from pointabstract.ops import farthest_point_sample
from pointabstract.predict import ClassPrediction, PartPrediction, Reconstruction
from tests.fixtures import eval_outputs, tiny_runs


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return tiny_runs(tmp_path_factory)


@pytest.mark.parametrize("votes", [1, 3])
def test_classification_equals_eval(runs, votes):
    run, passes, metrics = eval_outputs(runs["classification"], "logits", votes=votes)
    batches = len(passes) // votes  # eval: all batches of vote 0, then of vote 1, ...
    probs = torch.stack([torch.cat(passes[v * batches:(v + 1) * batches]).softmax(-1) for v in range(votes)]).mean(0)
    samples = [run.dataset[i]["pos"] for i in range(len(run.dataset))]
    found = pointabstract.load(runs["classification"]).predict(np.stack(samples), votes=votes, normalize="none",
                                                               top_k=3)
    assert len(found) == len(samples) and all(isinstance(r, ClassPrediction) for r in found)
    assert np.allclose(np.stack([r.probs for r in found]), probs.numpy(), atol=1e-5)
    names = run.task.class_names
    assert [r.label for r in found] == [names[i] for i in probs.argmax(-1).tolist()]
    correct = sum(r.label == names[run.dataset[i]["label"]] for i, r in enumerate(found))
    assert correct / len(found) == pytest.approx(metrics["overall_accuracy"])


@pytest.mark.parametrize("votes", [1, 2])
def test_part_segmentation_equals_eval(runs, votes):
    run, passes, metrics = eval_outputs(runs["part_segmentation"], "logits", votes=votes)
    items = [run.dataset[i] for i in range(len(run.dataset))]
    predictor = pointabstract.load(runs["part_segmentation"])
    found = predictor.predict([s["pos"] for s in items], votes=votes, normalize="none",
                              category=[int(s["category"]) for s in items])
    assert all(isinstance(r, PartPrediction) for r in found)
    from pointabstract.engine.tasks.part_segmentation import shape_ious

    pred = torch.from_numpy(np.stack([r.labels for r in found]))
    part = torch.from_numpy(np.stack([s["part"] for s in items]))
    ious = shape_ious(pred, part, torch.tensor([int(s["category"]) for s in items]))
    assert float(ious.mean()) == pytest.approx(metrics["instance_miou"], abs=1e-9)
    assert len(passes) == votes * 2  # two batches of 8, every vote of a batch before the next batch


def test_reconstruction_equals_eval(runs):
    run, outputs, metrics = eval_outputs(runs["reconstruction"], "points", raw=True)
    raw = [run.dataset[i]["pos"] for i in range(len(run.dataset))]  # un-normalised: the predictor normalises
    found = pointabstract.load(runs["reconstruction"]).predict(raw)
    assert all(isinstance(r, Reconstruction) for r in found)
    assert np.mean([r.chamfer for r in found]) == pytest.approx(metrics["chamfer"], rel=1e-5)
    decoded = torch.cat(outputs).numpy()  # eval's decoded points, in the unit sphere
    for r, cloud, unit in zip(found, raw, decoded):
        centre, radius = cloud.astype(np.float64).mean(0), np.linalg.norm(cloud - cloud.mean(0), axis=1).max()
        assert np.allclose(r.points, unit * radius + centre, atol=1e-4)
        assert r.chamfer_input_units == pytest.approx(r.chamfer * radius ** 2, rel=1e-5)


def test_reconstruction_follows_the_input_frame(runs):
    """Scaled and moved input -> the same reconstruction scaled and moved (the frame is undone)."""
    cloud = np.random.default_rng(1).normal(size=(64, 3)).astype(np.float32)
    predictor = pointabstract.load(runs["reconstruction"])
    a, b = predictor.predict(cloud), predictor.predict(cloud * 50 + np.float32([3, -2, 7]))
    assert np.allclose(b.points, a.points * 50 + np.float32([3, -2, 7]), atol=1e-3)
    assert b.chamfer == pytest.approx(a.chamfer, rel=1e-4)
    assert b.chamfer_input_units == pytest.approx(a.chamfer_input_units * 2500, rel=1e-4)
    assert np.array_equal(a.capsule, b.capsule) and a.capsule.max() < a.num_capsules


def test_classification_is_unchanged_by_scale_and_shift_of_a_file(runs):
    cloud = np.random.default_rng(2).normal(size=(48, 3)).astype(np.float32)
    predictor = pointabstract.load(runs["classification"])
    a, b = predictor.predict(cloud), predictor.predict(cloud * 200 - 40)
    assert np.allclose(a.probs, b.probs, atol=1e-5)
    assert predictor.predict(cloud, normalize="none").probs is not None


def test_point_counts(runs):
    """> N: FPS from the first point; == N: as given; >= N/4: repeated; < N/4: refused."""
    predictor = pointabstract.load(runs["classification"])  # N = 48, minimum 12
    rng = np.random.default_rng(3)
    big = rng.normal(size=(500, 3)).astype(np.float32)
    prepared = predictor.prepare(big, normalize="none")[0]
    idx = farthest_point_sample(torch.from_numpy(big)[None], 48)[0].numpy()
    assert np.array_equal(prepared.seen, big[idx]) and "farthest point sampling" in prepared.notes[0]
    exact = rng.normal(size=(48, 3)).astype(np.float32)
    assert np.array_equal(predictor.prepare(exact, normalize="none")[0].pos, exact)
    small = rng.normal(size=(12, 3)).astype(np.float32)
    prepared = predictor.prepare(small)[0]
    assert len(prepared.pos) == 48 and {tuple(p) for p in prepared.seen} == {tuple(p) for p in small}
    assert "36 of them repeated" in prepared.notes[0]
    with pytest.raises(ValueError, match=r"cloud 0: has 11 points, fewer than the 12 this model needs"):
        predictor.predict(small[:11])


def test_a_list_of_clouds_of_different_sizes_and_torch_input(runs):
    predictor = pointabstract.load(runs["classification"])
    rng = np.random.default_rng(4)
    clouds = [rng.normal(size=(n, 3)).astype(np.float32) for n in (20, 48, 300)]
    found = predictor.predict([torch.from_numpy(c) for c in clouds], top_k=2)
    assert [r.source for r in found] == ["cloud 0", "cloud 1", "cloud 2"]
    assert all(len(r.names) == 2 and r.probabilities[0] >= r.probabilities[1] for r in found)
    for cloud, result in zip(clouds, found):  # each cloud of the list as alone
        assert np.allclose(result.probs, predictor.predict(cloud).probs, atol=1e-6)


def test_part_labels_for_every_point_are_carried_by_nearest_neighbour(runs):
    predictor = pointabstract.load(runs["part_segmentation"])
    cloud = np.random.default_rng(5).normal(size=(300, 3)).astype(np.float32)
    r = predictor.predict(cloud, category="Airplane")
    assert r.labels.shape == (300,) and np.array_equal(r.points, cloud)
    d = ((cloud[:, None, :].astype(np.float64) - r.model_points[None].astype(np.float64)) ** 2).sum(-1)
    assert np.array_equal(r.labels, r.model_labels[d.argmin(1)])  # naive nearest neighbour
    assert set(r.labels.tolist()) <= {0, 1, 2, 3} and r.names()[0] in ("body", "wing", "tail", "engine")


def test_part_segmentation_of_a_real_shapenetpart_shape(runs, realdata):
    """Every point of the file (rows ``x y z nx ny nz part``), in file order; the category comes
    from the synset folder it lies in."""
    path = sorted((realdata / "shapenetcore_partanno_segmentation_benchmark_v0_normal" / "02954340").glob("*.txt"))[0]
    rows = np.loadtxt(path, dtype=np.float32)
    r = pointabstract.load(runs["part_segmentation"]).predict(path)
    assert r.category == "Cap" and r.labels.shape == (len(rows),)
    assert np.allclose(r.points, rows[:, :3], atol=1e-6)
    assert set(r.labels.tolist()) <= {6, 7}
    d = ((rows[:, None, :3].astype(np.float64) - r.model_points[None].astype(np.float64)) ** 2).sum(-1)
    assert np.array_equal(r.labels, r.model_labels[d.argmin(1)])  # naive nearest neighbour
    same = pointabstract.load(runs["part_segmentation"]).predict(rows[:, :6], category="02954340")
    assert np.array_equal(same.labels, r.labels)


def test_modelnet40_meshes(runs, realdata):
    files = sorted((realdata / "ModelNet40").glob("*/*/*.off"))
    found = pointabstract.load(runs["classification"]).predict(realdata / "ModelNet40")
    assert [r.source for r in found] == [str(f) for f in files]
    for r in found:
        assert len(r.names) == 5 and sum(r.probs) == pytest.approx(1, abs=1e-5)  # the default top 5
        assert "sampled by area" in r.notes[-1]


def test_option_errors(runs):
    seg = pointabstract.load(runs["part_segmentation"])
    cloud = np.zeros((48, 3), dtype=np.float32) + np.arange(48, dtype=np.float32)[:, None]
    with pytest.raises(ValueError, match=r"cloud 0: a part-segmentation model needs the shape's category"):
        seg.predict(cloud)
    with pytest.raises(ValueError, match=r"unknown category 'Sofa'; this model knows \['Airplane'"):
        seg.predict(cloud, category="Sofa")
    with pytest.raises(ValueError, match=r"category holds 2 values for 1 inputs"):
        seg.predict(cloud, category=["Cap", "Mug"])
    with pytest.raises(ValueError, match=r"top_k applies to classification checkpoints"):
        seg.predict(cloud, category="Cap", top_k=2)
    rec = pointabstract.load(runs["reconstruction"])
    with pytest.raises(ValueError, match=r"votes applies to classification and part_segmentation checkpoints"):
        rec.predict(cloud, votes=2)
    with pytest.raises(ValueError, match=r"normalize='none' does not apply to reconstruction"):
        rec.predict(cloud, normalize="none")


def test_the_training_frame_comes_from_the_checkpoint(runs, tmp_path):
    """Built-in data: files are brought into the unit sphere; data.dataset=folder trained on the files'
    own coordinates, so its files are fed as they are; reconstruction always normalises."""
    from pointabstract.engine import atomic_save, load_checkpoint
    from pointabstract.predict.prepare import training_frame

    ckpt = load_checkpoint(runs["classification"])
    atomic_save({**ckpt, "config": {**ckpt["config"], "data.dataset": "folder"}}, tmp_path / "folder.pt")
    cloud = np.random.default_rng(6).normal(size=(48, 3)).astype(np.float32) * 30 + 7
    folder, builtin = pointabstract.load(tmp_path / "folder.pt"), pointabstract.load(runs["classification"])
    assert (folder.frame, builtin.frame) == ("none", "unit_sphere")
    assert np.array_equal(folder.prepare(cloud)[0].pos, cloud)
    assert np.abs(builtin.prepare(cloud)[0].pos).max() <= 1 + 1e-6
    assert np.allclose(folder.predict(cloud).probs, builtin.predict(cloud, normalize="none").probs)
    rec = load_checkpoint(runs["reconstruction"])["config"]
    from pointabstract.engine import load_config

    assert training_frame(load_config(None, {**rec, "data.dataset": "folder"})) == "unit_sphere"


def test_a_real_scannet_scene_large_n(runs, realdata):
    """81k points of x y z r g b: the colours are not read as normals (the reader's note), the cloud is
    reduced by FPS, and every one of its points gets a part label in file order."""
    path = realdata / "scenes" / "scannet_scene0000_00_xyzrgb.npy"
    rows = np.load(path)
    found = pointabstract.load(runs["classification"]).predict(path)
    assert any("not unit normals" in n for n in found.notes)
    assert f"{len(rows)} points reduced to the model's 48 by farthest point sampling" in found.notes
    parts = pointabstract.load(runs["part_segmentation"]).predict(path, category="Table")
    assert parts.labels.shape == (len(rows),) and np.allclose(parts.points, rows[:, :3])
    assert set(parts.labels.tolist()) <= {47, 48, 49}


def test_z_up_inputs_are_turned_to_y_up_and_back(runs):
    """up="z" is (x, y, z) -> (x, z, -y) before the model: the same as handing in the turned cloud;
    decoded points and part labels come back in the input's own axes."""
    rng = np.random.default_rng(7)
    cloud = (rng.normal(size=(64, 3)) * [1, 2, 3]).astype(np.float32)
    turned = np.stack([cloud[:, 0], cloud[:, 2], -cloud[:, 1]], 1)
    cls = pointabstract.load(runs["classification"])
    assert np.allclose(cls.predict(cloud, up="z").probs, cls.predict(turned).probs, atol=1e-6)
    assert "z up: turned so that z points along the model's y axis" in cls.predict(cloud, up="z").notes
    rec = pointabstract.load(runs["reconstruction"])
    back = rec.predict(turned).points  # in the turned axes
    expected = np.stack([back[:, 0], -back[:, 2], back[:, 1]], 1)  # turned back: (x, y', z') -> (x, -z', y')
    assert np.allclose(rec.predict(cloud, up="z").points, expected, atol=1e-5)
    seg = pointabstract.load(runs["part_segmentation"])
    a, b = seg.predict(cloud, up="z", category="Lamp"), seg.predict(turned, category="Lamp")
    assert np.array_equal(a.labels, b.labels) and np.array_equal(a.points, cloud)
    with pytest.raises(ValueError, match=r"up must be one of \['y', 'z'\] \(the input's up axis\), got 'x'"):
        cls.predict(cloud, up="x")
