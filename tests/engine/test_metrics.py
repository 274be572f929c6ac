"""The metrics (engine/metrics/): hand-computed cases, the naive references, the meters' sums over
batches and processes, and one ``pytest.raises`` per input error."""

import pytest
import torch

from pointabstract.data.categories import SHAPENET_PART
from pointabstract.engine.metrics import (
    ConfusionMatrix,
    PartIoU,
    PurityMeter,
    ReconstructionMeter,
    capsule_purity,
    capsule_purity_naive,
    check_part_labels,
    reconstruction_scores,
    reconstruction_scores_naive,
    restrict_to_category,
    shape_ious,
    shape_ious_naive,
)

CAP, AIRPLANE, BAG = 2, 0, 1  # indices into SHAPENET_PART; Cap owns parts 6, 7; Airplane 0-3


def _t(rows):
    return torch.tensor(rows, dtype=torch.int64)


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
    pos = torch.tensor([[[0.0, 0, 0], [3, 0, 0], [6, 0, 0], [9, 0, 0]]])
    points = torch.tensor([[[0.0, 0, 0], [3, 0.01, 0]]])
    _, fscore = reconstruction_scores(points, pos, threshold=0.05)
    assert fscore.item() == pytest.approx(2 * 1.0 * 0.5 / 1.5)  # precision 1, recall 2/4


# -- reconstruction: capsule purity -----------------------------------------------------------
def test_purity_leaves_out_capsules_that_decode_nothing():
    pos = torch.tensor([[[0.0, 0, 0], [1, 0, 0], [2, 0, 0]]])
    part = torch.tensor([[0, 1, 1]])
    points = torch.tensor([[[0.0, 0, 0], [1, 0, 0], [2, 0, 0]]])
    index = torch.tensor([0, 0, 2])  # capsule 1 decodes no point
    purity, counts = capsule_purity(points, pos, part, index, num_parts=2)
    assert purity.item() == pytest.approx((0.5 + 1.0) / 2)
    assert counts.tolist() == [[[1, 1], [0, 0], [0, 1]]]


# -- part segmentation: per-shape IoU and the two means ---------------------------------------
def test_part_iou_of_a_batch_hand_computed():
    cap, airplane = CAP, AIRPLANE
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
    assert PartIoU().summary()["instance_miou"] != PartIoU().summary()["instance_miou"]  # NaN: no shapes


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
def test_part_iou_inputs_are_checked(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_reconstruction_scores_hand_computed():
    pos = torch.tensor([[[0.0, 0, 0], [1, 0, 0]]])
    points = torch.tensor([[[0.0, 0, 0], [0, 0.5, 0], [1, 0.01, 0]]])
    cd, f = reconstruction_scores(points, pos, threshold=0.1)
    # out -> in: 0, 0.25, 1e-4 (mean 0.0834); in -> out: 0, 1e-4 (mean 5e-5)
    assert cd.item() == pytest.approx((0.25 + 1e-4) / 3 + 1e-4 / 2, rel=1e-5)
    precision, recall = 2 / 3, 1.0
    assert f.item() == pytest.approx(2 * precision * recall / (precision + recall))


@pytest.mark.parametrize("m, n, threshold", [(30, 40, 0.1), (50, 20, 0.3), (8, 8, 1e-3)])
def test_reconstruction_scores_match_naive(m, n, threshold):
    g = torch.Generator().manual_seed(m)
    points, pos = torch.rand(3, m, 3, generator=g), torch.rand(3, n, 3, generator=g)
    for ours, ref in zip(reconstruction_scores(points, pos, threshold=threshold),
                         reconstruction_scores_naive(points, pos, threshold=threshold)):
        torch.testing.assert_close(ours, ref, rtol=1e-5, atol=1e-7)


def test_capsule_purity_hand_computed_and_against_naive():
    pos = torch.tensor([[[0.0, 0, 0], [0.1, 0, 0], [5, 0, 0]]])
    part = torch.tensor([[3, 3, 7]])
    points = torch.tensor([[[0.0, 0, 0], [5, 0, 0], [0.1, 0, 0], [0.05, 0, 0]]])
    index = torch.tensor([0, 0, 1, 1])
    purity, counts = capsule_purity(points, pos, part, index, num_parts=8)
    assert purity.item() == pytest.approx((0.5 + 1.0) / 2)  # capsule 0: parts 3, 7; capsule 1: 3, 3
    assert counts[0, 0, 3] == 1 and counts[0, 0, 7] == 1 and counts[0, 1, 3] == 2
    g = torch.Generator().manual_seed(0)
    pos, points = torch.rand(3, 40, 3, generator=g), torch.rand(3, 30, 3, generator=g)
    part, index = torch.randint(0, 5, (3, 40), generator=g), torch.randint(0, 6, (30,), generator=g)
    torch.testing.assert_close(capsule_purity(points, pos, part, index, num_parts=5)[0],
                               capsule_purity_naive(points, pos, part, index))


def test_reconstruction_meter_means_hand_computed():
    meter = ReconstructionMeter(["a", "b", "c"], threshold=0.05)
    meter.update(torch.tensor([1.0, 3.0], dtype=torch.float64), torch.tensor([0.5, 1.0], dtype=torch.float64),
                 _t([0, 2]))
    meter.update(torch.tensor([2.0], dtype=torch.float64), torch.tensor([0.0], dtype=torch.float64), _t([0]))
    s = meter.summary()
    assert s["chamfer"] == pytest.approx(2.0) and s["fscore"] == pytest.approx(0.5) and s["samples"] == 3
    assert s["per_category_chamfer"] == {"a": pytest.approx(1.5), "b": None, "c": pytest.approx(3.0)}
    assert s["fscore_threshold"] == 0.05


def test_purity_meter_hand_computed():
    meter = PurityMeter()
    meter.update(torch.tensor([1.0, 0.5], dtype=torch.float64), _t([[[2, 0, 0], [0, 0, 1]], [[1, 0, 1], [0, 0, 0]]]))
    meter.update(torch.tensor([0.0], dtype=torch.float64), _t([[[0, 0, 0], [0, 0, 3]]]))
    s = meter.summary()
    assert s["purity"] == pytest.approx(0.5)
    # part 1 was decoded by no capsule: left out of the table
    assert s["capsule_parts"] == {"parts": [0, 2], "counts": [[3, 1], [0, 4]]}


P3, Q3 = torch.rand(2, 8, 3), torch.rand(2, 6, 3)


@pytest.mark.parametrize("call, error, message", [
    (lambda: reconstruction_scores(P3, Q3[:1], threshold=0.1), ValueError,
     r"points and pos must have the same batch size B, got 2 and 1"),
    (lambda: reconstruction_scores(P3[..., :2], Q3, threshold=0.1), ValueError,
     r"points must have shape \(B, N, 3\), got \(2, 8, 2\)"),
    (lambda: reconstruction_scores(P3, Q3, threshold=0.0), ValueError, r"threshold must be a positive finite number, got 0.0"),
    (lambda: reconstruction_scores(P3, Q3, threshold=float("nan")), ValueError,
     r"threshold must be a positive finite number, got nan"),
    (lambda: capsule_purity(P3, Q3, torch.zeros(2, 6, dtype=torch.int64), torch.zeros(7, dtype=torch.int64),
                            num_parts=4), ValueError, r"capsule_index must have shape \(M,\) = \(8,\), got \(7,\)"),
    (lambda: capsule_purity(P3, Q3, torch.zeros(2, 5, dtype=torch.int64), torch.zeros(8, dtype=torch.int64),
                            num_parts=4), ValueError, r"part must have shape \(B, N\) = \(2, 6\), got \(2, 5\)"),
    # a part id >= num_parts used to land in the next capsule's row of the table
    (lambda: capsule_purity(P3, Q3, torch.full((2, 6), 4), torch.zeros(8, dtype=torch.int64), num_parts=4),
     ValueError, r"part values must lie in \[0, 3\], got values in \[4, 4\]"),
    (lambda: capsule_purity(P3, Q3, torch.full((2, 6), -1), torch.zeros(8, dtype=torch.int64), num_parts=4),
     ValueError, r"part values must lie in \[0, 3\], got values in \[-1, -1\]"),
    (lambda: capsule_purity(P3, Q3, torch.zeros(2, 6, dtype=torch.int64), torch.full((8,), -2), num_parts=4),
     ValueError, r"capsule_index values must be >= 0, got values in \[-2, -2\]"),
    (lambda: capsule_purity(P3, Q3, torch.zeros(2, 6, dtype=torch.int64), torch.zeros(8, dtype=torch.int64),
                            num_parts=0), ValueError, r"num_parts must be a positive int, got 0"),
    (lambda: capsule_purity(P3, Q3[:1], torch.zeros(1, 6, dtype=torch.int64), torch.zeros(8, dtype=torch.int64),
                            num_parts=4), ValueError, r"points and pos must have the same batch size B, got 2 and 1"),
])
def test_reconstruction_inputs_are_checked(call, error, message):
    with pytest.raises(error, match=message):
        call()


# -- the meters summed over processes ---------------------------------------------------------
def _fill(rank: int, world: int):
    """Meters holding shard ``rank`` of ``world`` of one fixed set of per-shape scores."""
    g = torch.Generator().manual_seed(0)
    logits, labels = torch.rand(12, 3, generator=g), torch.randint(0, 3, (12,), generator=g)
    ious, category = torch.rand(12, generator=g).double(), torch.randint(0, 16, (12,), generator=g)
    cd, fs = torch.rand(12, generator=g).double(), torch.rand(12, generator=g).double()
    part = slice(rank * 12 // world, (rank + 1) * 12 // world)
    meters = ConfusionMatrix(3), PartIoU(), ReconstructionMeter(["a", "b", "c"], threshold=0.1)
    meters[0].update(logits[part], labels[part])
    meters[1].update(ious[part], category[part])
    meters[2].update(cd[part], fs[part], labels[part])
    return meters


def _summaries(meters):
    return [meters[0].summary(), meters[1].summary(), meters[2].summary()]


def _reduce_worker(rank: int, world: int, store: str, out: str) -> None:
    torch.distributed.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
    try:
        meters = _fill(rank, world)
        for meter in meters:
            meter.all_reduce()
        torch.save(_summaries(meters), f"{out}/{rank}.pt")
    finally:
        torch.distributed.destroy_process_group()


def test_meters_summed_over_two_processes_give_the_whole_sets_metrics(tmp_path):
    import torch.multiprocessing as mp

    mp.spawn(_reduce_worker, args=(2, str(tmp_path / "store"), str(tmp_path)), nprocs=2)
    whole = _summaries(_fill(0, 1))
    for rank in range(2):
        assert torch.load(tmp_path / f"{rank}.pt") == whole
    shard = _summaries(_fill(0, 2))
    assert shard[0]["samples"] == 6 and shard != whole  # each process alone sees half
