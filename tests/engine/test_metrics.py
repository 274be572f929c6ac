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
