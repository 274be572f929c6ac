import pytest
import torch

pytest.importorskip("torch_geometric")

import torch_geometric.nn as gnn  # noqa: E402
import torch_geometric.typing as pyg_typing  # noqa: E402

from pointabstract.interop import pyg  # noqa: E402
from pointabstract.interop.pyg_ops import register_pyg_ops  # noqa: E402
from tests.fixtures import cloud  # noqa: E402

FLAGS = ("WITH_FPS", "WITH_KNN", "WITH_RADIUS")


def _data(seed=0):
    x = cloud(1, 70, seed=seed)[0]
    batch = torch.tensor([0] * 40 + [1] * 30)
    return x, batch


def _mlp(c_in, c_out):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(c_in, c_out), torch.nn.ReLU(), torch.nn.Linear(c_out, c_out))


def test_pyg_functions_run_on_our_ops_inside_and_refuse_after():
    x, batch = _data()
    before = {f: getattr(pyg_typing, f) for f in FLAGS}
    with register_pyg_ops() as reg:
        assert all(getattr(pyg_typing, f) for f in FLAGS)
        assert torch.equal(gnn.fps(x, batch, 0.3, False), pyg.fps(x, batch, 0.3, False))
        assert torch.equal(gnn.knn(x, x[:9], 4, batch, batch[:9]), pyg.knn(x, x[:9], 4, batch, batch[:9]))
        assert torch.equal(gnn.knn_graph(x, 5, batch), pyg.knn_graph(x, 5, batch))
        assert torch.equal(gnn.radius(x, x[:9], 0.6, batch, batch[:9], max_num_neighbors=7),
                           pyg.radius(x, x[:9], 0.6, batch, batch[:9], max_num_neighbors=7))
        for loop in (False, True):
            assert torch.equal(gnn.radius_graph(x, 0.6, batch, loop=loop, max_num_neighbors=7),
                               pyg.radius_graph(x, 0.6, batch, loop=loop, max_num_neighbors=7))
        with pytest.raises(RuntimeError, match="already registered"):
            register_pyg_ops()
    assert {f: getattr(pyg_typing, f) for f in FLAGS} == before
    assert "active=False" in repr(reg)
    if reg.ops:  # pyg-lib was missing: PyG refuses again, as before
        with pytest.raises(ImportError, match="pyg-lib"):
            gnn.knn_graph(x, 5, batch)
    reg.remove()  # a second remove does nothing


def test_operators_take_ptr_checked_and_empty_inputs():
    x, batch = _data()
    with register_pyg_ops() as reg:
        if not reg.ops:
            pytest.skip("pyg-lib provides the operators")
        ptr = torch.tensor([0, 40, 70])
        assert torch.equal(torch.ops.pyg.fps(x, ptr, 0.3, False), pyg.fps(x, batch, 0.3, False))
        assert torch.equal(gnn.fps(x[:0]), torch.empty(0, dtype=torch.int64))
        with pytest.raises(ValueError, match=r"ptr must be sorted in ascending order"):
            torch.ops.pyg.fps(x, torch.tensor([0, 50, 40, 70]), 0.5, False)
        with pytest.raises(ValueError, match=r"ptr_x must start at 0 and end at N = 70, got 0 \.\.\. 60"):
            torch.ops.pyg.knn(x, x, torch.tensor([0, 60]), ptr, 2)


def test_dynamic_edge_conv_equals_edge_conv_on_a_precomputed_graph():
    x, batch = _data(1)
    feats = torch.cat([x, x.square()], 1)  # (N, 6) features: DynamicEdgeConv searches in them
    static = gnn.EdgeConv(_mlp(12, 16))(feats, pyg.knn_graph(feats, 6, batch, loop=True))
    with register_pyg_ops():
        conv = gnn.DynamicEdgeConv(_mlp(12, 16), k=6)  # checks WITH_KNN when built
        dynamic = conv(feats, batch)
    torch.testing.assert_close(dynamic, static)


def test_knn_interpolate_runs_inside():
    from torch_geometric.nn import knn_interpolate

    x, batch = _data(2)
    values = torch.randn(70, 4)
    with register_pyg_ops():
        out = knn_interpolate(values, x, x, batch, batch, k=1)
    torch.testing.assert_close(out, values)  # each node's nearest node is itself
