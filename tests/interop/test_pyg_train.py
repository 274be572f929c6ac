"""PyG's own point-cloud layers, trained for a few steps on our synthetic shapes with our drop-ins."""

import numpy as np
import pytest
import torch

pytest.importorskip("torch_geometric")

from torch_geometric.nn import DynamicEdgeConv, PointNetConv, global_max_pool  # noqa: E402

from pointabstract.data import build_shape, collate, sample_surface  # noqa: E402
from pointabstract.interop.pyg import fps, radius  # noqa: E402
from pointabstract.interop.pyg_data import to_pyg_batch  # noqa: E402
from pointabstract.interop.pyg_ops import register_pyg_ops  # noqa: E402


def _shapes(per_class=8, n=128):
    """Airplanes (label 0) and mugs (label 1) from the synthetic generator, unit-sphere scaled."""
    samples = []
    for i in range(2 * per_class):
        category = ("Airplane", "Mug")[i % 2]
        vertices, faces, _ = build_shape(category, np.random.default_rng(i))
        pos, normal = sample_surface(vertices, faces, n, np.random.default_rng(1000 + i))
        pos = pos - pos.mean(0)
        samples.append({"pos": pos / np.linalg.norm(pos, axis=1).max(), "normal": normal, "label": i % 2})
    return to_pyg_batch(collate(samples))


def _mlp(*sizes):
    layers = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        layers += [torch.nn.Linear(a, b), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers)


class SetAbstraction(torch.nn.Module):
    """PointNet++ set abstraction as in PyG's example, with our fps and radius."""

    def __init__(self, ratio, r, mlp):
        super().__init__()
        self.ratio, self.r = ratio, r
        self.conv = PointNetConv(mlp, add_self_loops=False)

    def forward(self, x, pos, batch):
        idx = fps(pos, batch, ratio=self.ratio)
        row, col = radius(pos, pos[idx], self.r, batch, batch[idx], max_num_neighbors=32)
        edge_index = torch.stack([col, row])  # messages from the neighbours to the centres
        x = self.conv((x, None if x is None else x[idx]), (pos, pos[idx]), edge_index)
        return x, pos[idx], batch[idx]


class PointNet2(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.sa1 = SetAbstraction(0.5, 0.3, _mlp(3, 32, 32))
        self.sa2 = SetAbstraction(0.25, 0.6, _mlp(32 + 3, 64, 64))
        self.head = torch.nn.Linear(64, 2)

    def forward(self, data):
        x, pos, batch = self.sa1(None, data.pos, data.batch)
        x, pos, batch = self.sa2(x, pos, batch)
        return self.head(global_max_pool(x, batch))


class TinyDGCNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = DynamicEdgeConv(_mlp(6, 32), k=8)  # PyG's layer, KNN by torch.ops.pyg.knn
        self.conv2 = DynamicEdgeConv(_mlp(64, 64), k=8)
        self.head = torch.nn.Linear(64, 2)

    def forward(self, data):
        x = self.conv2(self.conv1(data.pos, data.batch), data.batch)
        return self.head(global_max_pool(x, data.batch))


@pytest.fixture(autouse=True)
def one_thread():
    """One torch thread: on a shared CPU, 2 threads measured 10x slower per step than 1."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _train(model, data, steps):
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(data), data.y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    with torch.no_grad():
        acc = (model(data).argmax(1) == data.y).float().mean().item()
    return losses, acc


def test_pointnet2_with_our_fps_and_radius_learns():
    torch.manual_seed(0)
    data = _shapes()
    losses, acc = _train(PointNet2(), data, steps=20)
    assert np.mean(losses[-3:]) < 0.6 * np.mean(losses[:3]), losses
    assert acc >= 0.9


@pytest.mark.slow
def test_dynamic_edge_conv_with_registered_ops_learns():
    torch.manual_seed(0)
    data = _shapes()
    with register_pyg_ops():
        losses, acc = _train(TinyDGCNN(), data, steps=20)
    assert np.mean(losses[-3:]) < 0.6 * np.mean(losses[:3]), losses
    assert acc >= 0.9
