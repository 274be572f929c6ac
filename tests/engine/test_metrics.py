import pytest
import torch

from pointabstract.engine.metrics import ConfusionMatrix


def test_counts_and_summary():
    m = ConfusionMatrix(3)
    m.update(torch.tensor([[0.9, 0.1, 0.0], [0.1, 0.8, 0.1], [0.7, 0.2, 0.1]]), torch.tensor([0, 1, 2]))
    s = m.summary(["a", "b", "c"])
    assert s["confusion"] == [[1, 0, 0], [0, 1, 0], [1, 0, 0]]
    assert s["overall_accuracy"] == pytest.approx(2 / 3) and s["per_class_accuracy"]["c"] == 0.0


@pytest.mark.parametrize("logits, labels, error, message", [
    # labels beyond the classes used to be counted in another class's row (3 * 3 + 0 = row 3 -> crash
    # or, for label 1 with 4 columns of logits, a wrong cell)
    (torch.rand(2, 3), torch.tensor([0, 3]), ValueError, r"labels values must lie in \[0, 2\], got values in \[0, 3\]"),
    (torch.rand(2, 3), torch.tensor([-1, 0]), ValueError, r"labels values must lie in \[0, 2\], got values in \[-1, 0\]"),
    (torch.rand(2, 4), torch.tensor([0, 1]), ValueError, r"logits must have shape \(B, C\) = \(2, 3\), got \(2, 4\)"),
    (torch.rand(3, 3), torch.tensor([0, 1]), ValueError, r"labels must have shape \(B,\) = \(3,\), got \(2,\)"),
    (torch.rand(3), torch.tensor([0, 1]), ValueError, r"logits must have shape \(B, C\) = \(2, 3\), got \(3,\)"),
    (torch.rand(2, 3), torch.tensor([[0, 1]]), ValueError, r"labels must have shape \(B,\) = \(2,\), got \(1, 2\)"),
    (torch.rand(2, 3), torch.tensor([0.0, 1.0]), TypeError, r"labels must have dtype int64, got torch.float32"),
    (torch.rand(2, 3), [0, 1], TypeError, r"labels must be a torch.Tensor of dtype int64, got list"),
])
def test_update_refuses_what_does_not_fit(logits, labels, error, message):
    m = ConfusionMatrix(3)
    with pytest.raises(error, match=message):
        m.update(logits, labels)
    assert int(m.counts.sum()) == 0


def test_class_count_is_checked():
    with pytest.raises(ValueError, match="num_classes must be a positive int, got 0"):
        ConfusionMatrix(0)


# -- reconstruction: Chamfer distance and F-score ---------------------------------------------
def test_chamfer_and_fscore_per_shape_hand_computed():
    from pointabstract.engine.metrics import reconstruction_scores

    pos = torch.tensor([[[0.0, 0, 0], [1, 0, 0]], [[0.0, 0, 0], [0, 2, 0]]])
    points = torch.tensor([[[0.0, 0, 0], [1, 0, 0]], [[0.0, 0, 0], [0, 0.5, 0]]])
    chamfer, fscore = reconstruction_scores(points, pos, threshold=0.1)
    # shape 0 exact; shape 1: out -> in 0, 0.25 (mean 0.125); in -> out 0, 1.5^2 (mean 1.125)
    assert chamfer.dtype == torch.float64 and chamfer.tolist() == pytest.approx([0.0, 1.25])
    # shape 1: precision 1/2 (one decoded point within 0.1), recall 1/2 -> F 1/2
    assert fscore.tolist() == pytest.approx([1.0, 0.5])
    far = reconstruction_scores(points + 10, pos, threshold=0.1)[1]
    assert far.tolist() == [0.0, 0.0]  # precision = recall = 0: F-score 0, not NaN


def test_fscore_of_unequal_precision_and_recall():
    from pointabstract.engine.metrics import reconstruction_scores

    pos = torch.tensor([[[0.0, 0, 0], [3, 0, 0], [6, 0, 0], [9, 0, 0]]])
    points = torch.tensor([[[0.0, 0, 0], [3, 0.01, 0]]])
    _, fscore = reconstruction_scores(points, pos, threshold=0.05)
    assert fscore.item() == pytest.approx(2 * 1.0 * 0.5 / 1.5)  # precision 1, recall 2/4


# -- reconstruction: capsule purity -----------------------------------------------------------
def test_purity_leaves_out_capsules_that_decode_nothing():
    from pointabstract.engine.metrics import capsule_purity

    pos = torch.tensor([[[0.0, 0, 0], [1, 0, 0], [2, 0, 0]]])
    part = torch.tensor([[0, 1, 1]])
    points = torch.tensor([[[0.0, 0, 0], [1, 0, 0], [2, 0, 0]]])
    index = torch.tensor([0, 0, 2])  # capsule 1 decodes no point
    purity, counts = capsule_purity(points, pos, part, index, num_parts=2)
    assert purity.item() == pytest.approx((0.5 + 1.0) / 2)
    assert counts.tolist() == [[[1, 1], [0, 0], [0, 1]]]


# -- part segmentation: per-shape IoU and the two means ---------------------------------------
def test_part_iou_of_a_batch_hand_computed():
    from pointabstract.engine.tasks.part_segmentation import PartIoU, shape_ious

    cap, airplane = 2, 0
    pred = torch.tensor([[6, 6, 7, 7], [0, 1, 1, 1]])
    part = torch.tensor([[6, 6, 6, 7], [0, 0, 1, -1]])
    category = torch.tensor([cap, airplane])
    ious = shape_ious(pred, part, category)
    # Cap: part 6 2/3, part 7 1/2 -> 7/12; Airplane: parts 0 and 1 1/2 each, 2 and 3 absent (1) -> 3/4
    assert ious.tolist() == pytest.approx([7 / 12, 3 / 4])
    meter = PartIoU()
    meter.update(ious, category)
    meter.update(torch.tensor([1.0]), torch.tensor([cap]))
    s = meter.summary()
    assert s["instance_miou"] == pytest.approx((7 / 12 + 3 / 4 + 1) / 3)
    assert s["class_miou"] == pytest.approx(((7 / 12 + 1) / 2 + 3 / 4) / 2)
    assert s["per_category"]["Cap"] == pytest.approx(19 / 24) and s["shapes_per_category"]["Cap"] == 2
