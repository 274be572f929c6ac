import numpy as np
import pytest
import torch

pytest.importorskip("torch_geometric")

from torch_geometric.data import Batch, Data  # noqa: E402

from pointabstract.data import PART_PAD, collate  # noqa: E402
from pointabstract.interop import pyg_data  # noqa: E402
from pointabstract.interop.pyg_data import from_pyg_batch, from_pyg_data, to_pyg_batch, to_pyg_data  # noqa: E402


def _samples(sizes=(5, 3, 5), *, seed=0):
    rng = np.random.default_rng(seed)
    return [{"pos": rng.random((n, 3), dtype=np.float32), "normal": rng.random((n, 3), dtype=np.float32),
             "part": rng.integers(0, 4, n), "label": i + 1, "category": 7 - i} for i, n in enumerate(sizes)]


def _assert_same(a: dict, b: dict):
    assert sorted(a) == sorted(b)
    for key in a:
        assert torch.equal(torch.as_tensor(a[key]), torch.as_tensor(b[key])), key


def test_sample_round_trip_and_field_names():
    sample = _samples()[0]
    data = to_pyg_data(sample)
    assert data.pos.dtype == torch.float32 and data.pos.shape == (5, 3)
    assert data.y.tolist() == [1] and data.category.tolist() == [7] and data.part.shape == (5,)
    _assert_same(from_pyg_data(data), sample)
    seg = to_pyg_data(sample, target="part", normal_key="x")  # PyG's ShapeNet layout
    assert torch.equal(seg.y, torch.as_tensor(sample["part"])) and seg.label.tolist() == [1]
    assert torch.equal(seg.x, torch.as_tensor(sample["normal"]))
    _assert_same(from_pyg_data(seg, target="part", normal_key="x"), sample)


@pytest.mark.parametrize("sizes", [(4, 4), (5, 3, 5)])
def test_batch_round_trip_equals_collate(sizes):
    samples = _samples(sizes)
    ours = collate(samples)
    batch = to_pyg_batch(ours)
    assert batch.num_graphs == len(sizes) and batch.pos.shape == (sum(sizes), 3)
    assert torch.equal(batch.batch, torch.repeat_interleave(torch.arange(len(sizes)), torch.tensor(sizes)))
    assert torch.equal(batch.y, ours["label"])
    _assert_same(from_pyg_batch(batch), ours)  # padding and lengths exactly as collate
    # PyG's own batching of converted samples gives the same
    _assert_same(from_pyg_batch(Batch.from_data_list([to_pyg_data(s) for s in samples])), ours)
    seg = from_pyg_batch(to_pyg_batch(ours, target="part"), target="part")
    _assert_same(seg, ours)


def test_part_padding_constant_matches_collate():
    assert pyg_data.PART_PAD == PART_PAD


@pytest.mark.parametrize("call,error,match", [
    (lambda: to_pyg_data({"normal": np.zeros((2, 3))}), ValueError, "sample must be a dict with at least 'pos'"),
    (lambda: to_pyg_data({"pos": np.zeros((2, 2))}), ValueError, r"sample\['pos'\] must have shape \(N, 3\)"),
    (lambda: to_pyg_data({"pos": np.zeros((2, 3))}, target="y"), ValueError, "target must be one of"),
    (lambda: to_pyg_data({"pos": np.zeros((2, 3))}, normal_key="n"), ValueError, "normal_key must be one of"),
    (lambda: from_pyg_data(Data(x=torch.zeros(2, 3))), ValueError, "data must have a 'pos'"),
    (lambda: to_pyg_batch({"pos": torch.zeros(2, 3)}), ValueError, r"batch\['pos'\] must be a tensor of shape \(B, N, 3\)"),
    (lambda: to_pyg_batch({"pos": torch.zeros(2, 4, 3), "lengths": torch.tensor([4, 5])}), ValueError, "lengths"),
    (lambda: from_pyg_batch(Data(pos=torch.zeros(2, 3))), ValueError, "batch must be a torch_geometric Batch"),
])
def test_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()
