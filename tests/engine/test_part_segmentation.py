import math

import pytest
import torch

from pointabstract.data.collate import collate
from pointabstract.engine.config import RunConfig
from pointabstract.engine.tasks.base import MissingDatasetError
from pointabstract.engine.tasks.part_segmentation import (
    PartIoU,
    PartSegmentationTask,
    check_part_labels,
    restrict_to_category,
    shape_ious,
    shape_ious_naive,
)
from pointabstract.models.sequoia import SPECS

CAP, AIRPLANE, BAG = 2, 0, 1  # indices into SHAPENET_PART; Cap owns parts 6, 7; Airplane 0-3


def _t(rows):
    return torch.tensor(rows, dtype=torch.int64)


def test_shape_iou_hand_computed():
    # Cap: part 6 -> 2 / 3, part 7 -> 1 / 2; mean 7 / 12
    assert shape_ious(_t([[6, 6, 7, 7]]), _t([[6, 6, 6, 7]]), _t([CAP])).tolist() == [pytest.approx(7 / 12)]
    # Airplane: parts 2 and 3 absent from both count 1; parts 0, 1 have IoU 1 / 2 each
    assert shape_ious(_t([[0, 1, 1]]), _t([[0, 0, 1]]), _t([AIRPLANE])).tolist() == [pytest.approx(0.75)]
    # a perfect prediction of a shape showing 2 of its 4 parts scores 1
    assert shape_ious(_t([[0, 0, 1]]), _t([[0, 0, 1]]), _t([AIRPLANE])).tolist() == [1.0]
    # padded points (-1) are ignored whatever is predicted there
    assert shape_ious(_t([[6, 7, 0]]), _t([[6, 7, -1]]), _t([CAP])).tolist() == [1.0]
    # a part predicted but absent from the truth: IoU 0 for it
    assert shape_ious(_t([[6, 6]]), _t([[7, 7]]), _t([CAP])).tolist() == [0.0]


def test_shape_ious_match_naive():
    g = torch.Generator().manual_seed(0)
    category = torch.randint(0, 16, (20,), generator=g)
    from pointabstract.data.categories import SHAPENET_PART

    part = torch.stack([torch.tensor(SHAPENET_PART[c].parts)[torch.randint(0, len(SHAPENET_PART[c].parts),
                                                                           (30,), generator=g)]
                        for c in category.tolist()])
    pred = torch.where(torch.rand(20, 30, generator=g) < 0.6, part, torch.randint(0, 50, (20, 30), generator=g))
    part[3, :5] = -1
    torch.testing.assert_close(shape_ious(pred, part, category),
                               torch.tensor(shape_ious_naive(pred, part, category), dtype=torch.float64))


def test_instance_vs_class_mean():
    meter = PartIoU()
    meter.update(torch.tensor([1.0, 0.5]), _t([AIRPLANE, AIRPLANE]))
    meter.update(torch.tensor([0.0]), _t([CAP]))
    s = meter.summary()
    assert s["instance_miou"] == pytest.approx(0.5)  # (1 + 0.5 + 0) / 3
    assert s["class_miou"] == pytest.approx(0.375)  # (0.75 + 0) / 2
    assert s["per_category"]["Airplane"] == pytest.approx(0.75) and s["per_category"]["Bag"] is None
    assert s["shapes_per_category"]["Airplane"] == 2 and s["samples"] == 3
    assert math.isnan(PartIoU().summary()["instance_miou"])


def test_restriction_to_the_category():
    logits = torch.zeros(1, 2, 50)
    logits[0, :, 0] = 10.0  # Airplane body wins unrestricted
    logits[0, 0, 7], logits[0, 1, 6] = 1.0, 2.0
    assert restrict_to_category(logits, _t([CAP])).argmax(-1).tolist() == [[7, 6]]
    assert restrict_to_category(logits, _t([AIRPLANE])).argmax(-1).tolist() == [[0, 0]]


def test_bad_labels():
    with pytest.raises(ValueError, match=r"part label 0 of shape 1 point 2 is not one of Cap's parts \[6, 7\]"):
        check_part_labels(_t([[6, 7, 6], [6, 7, 0]]), _t([CAP, CAP]))
    with pytest.raises(ValueError, match="part label 50 of shape 0 point 0"):
        shape_ious(_t([[6]]), _t([[50]]), _t([CAP]))
    with pytest.raises(ValueError, match=r"category must hold int64 ids in \[0, 16\), got \[16\]"):
        check_part_labels(_t([[6]]), _t([16]))


# -- the task on data -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    from pointabstract.data.synthetic import generate

    root = tmp_path_factory.mktemp("synthetic")
    generate(root, train_per_class=3, test_per_class=1, num_points=256, workers=1, progress=False)
    return root


def _task(root, **settings):
    cfg = RunConfig(model="centroid_transformer", task="part_segmentation")
    cfg.data.dataset, cfg.data.root, cfg.data.num_points = "shapenet_part", str(root), 128
    cfg.task_args = dict(settings)
    return PartSegmentationTask(cfg)


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
    task.cfg.data.num_points = 256
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
    task.cfg.data.dataset = "modelnet40"
    with pytest.raises(ValueError, match="data.dataset must be 'shapenet_part'"):
        task.dataset("train", train=True)


@pytest.mark.parametrize("call, message", [
    # a predicted id outside the 50 parts used to be clamped to 0 or 49 and scored
    (lambda: shape_ious(_t([[6, 50]]), _t([[6, 7]]), _t([CAP])), r"pred values must lie in \[0, 49\], got values in \[6, 50\]"),
    (lambda: shape_ious(_t([[6, -1]]), _t([[6, 7]]), _t([CAP])), r"pred values must lie in \[0, 49\], got values in \[-1, 6\]"),
    (lambda: shape_ious(_t([[6, 7, 6]]), _t([[6, 7]]), _t([CAP])), r"pred must have shape \(B, N\) = \(1, 2\), got \(1, 3\)"),
    (lambda: shape_ious(_t([6, 7]), _t([[6, 7]]), _t([CAP])), r"pred must have shape \(B, N\) = \(1, 2\), got \(2,\)"),
    (lambda: shape_ious(_t([[6, 7]] * 2), _t([[6, 7]] * 2), _t([CAP])),
     r"category must have shape \(B,\) = \(2,\), got \(1,\)"),
    (lambda: check_part_labels(_t([6, 7]), _t([CAP])), r"part must have shape \(B, N\), got \(2,\)"),
    (lambda: restrict_to_category(torch.zeros(1, 2, 49), _t([CAP])),
     r"logits must have shape \(B, N, 50\) = \(1, 2, 50\), got \(1, 2, 49\)"),
    (lambda: restrict_to_category(torch.zeros(1, 2, 50), _t([16])), r"category values must lie in \[0, 15\], got values in \[16, 16\]"),
    (lambda: restrict_to_category(torch.zeros(2, 2, 50), _t([CAP])),
     r"category must have shape \(B,\) = \(2,\), got \(1,\)"),
    (lambda: PartIoU().update(torch.tensor([0.5, 1.0]), _t([CAP])),
     r"category must have shape \(B,\) = \(2,\), got \(1,\)"),
    (lambda: PartIoU().update(torch.tensor([0.5]), _t([-1])), r"category values must lie in \[0, 15\], got values in \[-1, -1\]"),
    (lambda: PartIoU().update(torch.tensor([1.5]), _t([CAP])), r"ious must lie in \[0, 1\], got values in \[1.5, 1.5\]"),
    (lambda: PartIoU().update(torch.tensor([[0.5]]), _t([CAP])), r"ious must have shape \(B,\) = \(1,\), got \(1, 1\)"),
])
def test_metric_inputs_are_checked(call, message):
    with pytest.raises(ValueError, match=message):
        call()
