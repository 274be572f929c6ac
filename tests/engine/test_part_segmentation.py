"""The part-segmentation task on the synthetic set's ShapeNetPart layout (its metrics:
tests/engine/test_metrics.py)."""

import pytest
import torch

from pointabstract.data.collate import collate
from pointabstract.engine.config import DataConfig
from pointabstract.engine.tasks.base import MissingDatasetError
from pointabstract.engine.tasks.part_segmentation import PartSegmentationSettings, PartSegmentationTask
from pointabstract.models.sequoia import SPECS

CAP = 2  # index into SHAPENET_PART; Cap owns parts 6, 7


# -- the task on data -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    from pointabstract.data.synthetic import generate

    root = tmp_path_factory.mktemp("synthetic")
    generate(root, train_per_class=3, test_per_class=1, num_points=256, workers=1, progress=False)
    return root


def _task(root, **settings):
    data = DataConfig(dataset="shapenet_part", root=str(root), num_points=128)
    return PartSegmentationTask(data, seed=0, settings=PartSegmentationSettings(**settings))


def _model(task, **overrides):
    spec = SPECS["sequoia_seg"]
    torch.manual_seed(0)
    return spec.factory(spec.config(**{**spec.tiny, **task.model_args(), **overrides}))


def _loader(ds, batch_size=16):
    return torch.utils.data.DataLoader(ds, batch_size=batch_size, collate_fn=collate)


def test_short_training_raises_miou(synthetic):
    task = _task(synthetic)
    train = task.dataset("train", train=True)
    assert len(train) == 32 and task.categories[0] == "Airplane" and len(task.categories) == 16
    clean = _loader(task.dataset("train", train=False))
    model = _model(task)
    before = task.evaluate(model, clean, torch.device("cpu"))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for epoch in range(12):
        train.set_epoch(epoch)
        for batch in _loader(train):
            loss, stats = task.step(model, batch, torch.device("cpu"))
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert 0 <= stats["accuracy"] <= 1
    after = task.evaluate(model, clean, torch.device("cpu"))
    assert after["instance_miou"] > before["instance_miou"] + 0.05, (before["instance_miou"], after)
    assert after["samples"] == 32 and set(after) >= {"instance_miou", "class_miou", "per_category"}


def test_votes_and_report(synthetic, tmp_path):
    task = _task(synthetic, votes=3)
    test = _loader(task.dataset("test", train=False))
    metrics = task.evaluate(_model(task), test, torch.device("cpu"))
    assert metrics["samples"] == 16 and 0 <= metrics["class_miou"] <= 1
    lines = task.report(metrics, tmp_path)
    assert "| Airplane | 1 |" in "\n".join(lines) and (tmp_path / "part_iou.png").stat().st_size > 0
    assert "instance mIoU" in task.summary(metrics)
    assert set(task.curves()["mIoU / accuracy"]) >= {"test_instance_miou", "test_class_miou"}


def test_category_subset_and_restore_check(synthetic):
    task = _task(synthetic, categories=("Cap", "Mug"))
    assert len(task.dataset("test", train=False)) == 2 and task.categories == ["Cap", "Mug"]
    task.check_restore({"categories": ["Cap", "Mug"]}, "ckpt")
    with pytest.raises(ValueError, match="ckpt was trained on categories"):
        task.check_restore({"categories": ["Cap"]}, "ckpt")


def test_step_refuses_labels_outside_the_category(synthetic):
    task = _task(synthetic)
    batch = collate([task.dataset("train", train=False)[i] for i in range(2)])
    batch["part"][1, 5] = 49  # Bag owns 4, 5
    with pytest.raises(ValueError, match="part label 49 of shape 1 point 5 is not one of Bag's parts"):
        task.step(_model(task), batch, torch.device("cpu"))


def test_reads_the_real_cap_subset(realdata):
    task = _task(realdata)
    task.data.num_points = 256
    ds = task.dataset("test", train=False)
    assert len(ds) == 11 and set(ds.categories.tolist()) == {CAP}
    metrics = task.evaluate(_model(task), _loader(ds), torch.device("cpu"))
    assert metrics["samples"] == 11
    assert {k for k, v in metrics["per_category"].items() if v is not None} == {"Cap"}


def test_bad_settings_and_data(tmp_path):
    with pytest.raises(ValueError, match="task.votes must be >= 1, got 0"):
        _task(tmp_path, votes=0)
    with pytest.raises(MissingDatasetError, match="no ShapeNetPart layout found"):
        _task(tmp_path).dataset("train", train=True)
    task = _task(tmp_path)
    task.data.dataset = "modelnet40"
    with pytest.raises(ValueError, match=r"data.dataset must be one of \['shapenet_part'\] for part_segmentation, "
                                         "got 'modelnet40'"):
        task.dataset("train", train=True)
