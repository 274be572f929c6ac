"""Our datasets as PyG datasets and back, the transform adapter, and docs/pyg.md's training loop."""

import re
from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("torch_geometric")

import torch_geometric.transforms as T  # noqa: E402
from torch_geometric.data import Data  # noqa: E402
from torch_geometric.loader import DataLoader  # noqa: E402

from pointabstract.data import collate  # noqa: E402
from pointabstract.data.datasets.base import PointDataset  # noqa: E402
from pointabstract.data.transforms import Compose, Jitter, RandomDropout  # noqa: E402
from pointabstract.interop.pyg_data import from_pyg_batch  # noqa: E402
from pointabstract.interop.pyg_dataset import FromPyg, PygView, adapt_transform  # noqa: E402

DOC = Path(__file__).parents[2] / "docs" / "pyg.md"


class _Clouds(PointDataset):
    """Clouds of 5, 3 and 7 points with normals, parts and labels (a transform draws per epoch)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        rng = np.random.default_rng(0)
        self.samples = [{"pos": rng.random((n, 3), dtype=np.float32), "normal": rng.random((n, 3), dtype=np.float32),
                         "part": rng.integers(0, 4, n), "label": i, "category": 2 - i}
                        for i, n in enumerate((5, 3, 7))]

    def __len__(self):
        return len(self.samples)

    def load(self, index, rng):
        return self.samples[index]


def _same(a: dict, b: dict):
    assert sorted(a) == sorted(b)
    for key in a:
        assert torch.equal(torch.as_tensor(a[key]), torch.as_tensor(b[key])), key


def test_our_dataset_through_pyg_dataloader_equals_collate_and_comes_back():
    ours = _Clouds(transform=RandomDropout(0.5), seed=3)
    view = PygView(ours)
    view.set_epoch(2)
    assert ours.epoch == 2
    batch = next(iter(DataLoader(view, batch_size=3)))
    _same(from_pyg_batch(batch), collate([ours[i] for i in range(3)]))
    back = FromPyg(view)
    for i in range(3):
        _same(back[i], ours[i])


def test_a_pyg_transform_on_our_sample_depends_only_on_the_generator():
    sample = _Clouds().samples[2]
    jitter = adapt_transform(T.RandomJitter(0.1))
    torch.manual_seed(5)
    state = torch.random.get_rng_state()
    a, b = jitter(sample, np.random.default_rng(1)), jitter(sample, np.random.default_rng(1))
    assert torch.equal(torch.random.get_rng_state(), state)  # torch's global generator untouched
    _same(a, b)
    assert 0 < np.abs(a["pos"] - sample["pos"]).max() <= 0.1 and np.array_equal(a["part"], sample["part"])
    scaled = adapt_transform(T.NormalizeScale())(sample, 0)
    want = T.NormalizeScale()(Data(pos=torch.as_tensor(sample["pos"])))
    assert torch.allclose(torch.as_tensor(scaled["pos"]), want.pos)


def test_pyg_point_transforms_keep_our_fields_together():
    sample = _Clouds().samples[2]
    fixed = adapt_transform(T.FixedPoints(4, replace=False))(sample, 0)
    rows = [int(np.flatnonzero((sample["pos"] == p).all(1))[0]) for p in fixed["pos"]]
    assert len(rows) == 4 and np.array_equal(fixed["normal"], sample["normal"][rows])
    assert np.array_equal(fixed["part"], sample["part"][rows]) and fixed["label"] == 2
    mesh = {"pos": np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], np.float32), "face": np.array([[0, 1, 2]]),
            "label": 1}
    points = adapt_transform(T.SamplePoints(50, include_normals=True))(mesh, 0)
    assert points["pos"].shape == (50, 3) and np.allclose(points["pos"][:, 2], 0)
    assert np.allclose(np.abs(points["normal"][:, 2]), 1) and points["label"] == 1


def test_our_transform_on_pyg_data():
    data = Data(pos=torch.rand(50, 3), normal=torch.rand(50, 3), y=torch.tensor([4]))
    ours = adapt_transform(Compose([RandomDropout(0.5), Jitter(0.01)]), seed=0)
    out = ours(data)
    assert isinstance(out, Data) and 25 <= out.pos.shape[0] <= 50 and out.normal.shape == out.pos.shape
    assert out.y.tolist() == [4]
    again = adapt_transform(Compose([RandomDropout(0.5), Jitter(0.01)]), seed=0)(data)
    assert torch.equal(again.pos, out.pos)
    with pytest.raises(TypeError, match="transform must be a torch_geometric BaseTransform or a callable"):
        adapt_transform(3)


def test_the_training_loop_of_docs_pyg_md_runs():
    code = re.search(r"A training loop over a PyG `DataLoader`.*?```python\n(.*?)```", DOC.read_text(), re.S)[1]
    scope = {"STEPS": 3}
    exec(compile(code, str(DOC), "exec"), scope)
    assert torch.isfinite(scope["loss"]) and scope["step"] == 2
    assert scope["batch"].num_graphs == 8 and len(set(torch.bincount(scope["batch"].batch).tolist())) > 1
