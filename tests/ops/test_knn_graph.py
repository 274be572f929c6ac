import pytest
import torch

from pointabstract.ops import knn, knn_graph
from tests.fixtures import cloud


def _edge_set(edge_index):
    return set(map(tuple, edge_index.t().tolist()))


@pytest.mark.parametrize("loop", [False, True])
def test_matches_brute_force_pyg_convention(loop):
    pos = cloud(1, 40, seed=1)[0]
    k = 5
    edge_index = knn_graph(pos, k, loop=loop)
    assert edge_index.shape == (2, 40 * k) and edge_index.dtype == torch.int64
    d2 = torch.cdist(pos, pos) ** 2
    if not loop:
        d2.fill_diagonal_(float("inf"))
    nbrs = d2.topk(k, largest=False).indices
    want = {(int(j), i) for i in range(40) for j in nbrs[i]}  # (source = neighbour, target = centre)
    assert _edge_set(edge_index) == want
    assert torch.equal(edge_index[1], torch.arange(40).repeat_interleave(k))  # grouped by centre
    flipped = knn_graph(pos, k, loop=loop, flow="target_to_source")
    assert torch.equal(flipped, edge_index.flip(0))


def test_batch_vector_keeps_clouds_apart_and_handles_small_clouds():
    pos = cloud(1, 13, seed=2)[0]
    batch = torch.tensor([0] * 8 + [1] * 3 + [2] * 2)
    edge_index = knn_graph(pos, 4, batch=batch)
    assert (batch[edge_index[0]] == batch[edge_index[1]]).all()
    assert (edge_index[0] != edge_index[1]).all()
    deg = torch.bincount(edge_index[1], minlength=13)
    assert deg.tolist() == [4] * 8 + [2] * 3 + [1] * 2  # a cloud of n points: n - 1 neighbours


def test_batched_tensor_layout_equals_flat_layout():
    pos = cloud(3, 10, seed=3)
    flat = knn_graph(pos.reshape(-1, 3), 3, batch=torch.arange(3).repeat_interleave(10))
    assert torch.equal(knn_graph(pos, 3), flat)


def test_duplicate_points_do_not_break_self_removal():
    pos = torch.zeros(6, 3)  # all coincide: the centre may not be among the first k + 1
    edge_index = knn_graph(pos, 2)
    assert (edge_index[0] != edge_index[1]).all()
    assert torch.bincount(edge_index[1], minlength=6).tolist() == [2] * 6


def test_feeds_a_torch_geometric_layer():
    pyg_nn = pytest.importorskip("torch_geometric.nn")
    pos = cloud(2, 30, seed=4)
    feats = cloud(2, 30, 6, seed=5)
    edge_index = knn_graph(pos, 4)
    out = pyg_nn.SimpleConv(aggr="sum")(feats.reshape(-1, 6), edge_index).view(2, 30, 6)
    _, idx = knn(pos, pos, 5)
    want = torch.stack([feats[b][idx[b, :, 1:]].sum(1) for b in range(2)])  # drop self (first)
    torch.testing.assert_close(out, want)
    conv = pyg_nn.EdgeConv(torch.nn.Linear(12, 8), aggr="max")
    assert conv(feats.reshape(-1, 6), edge_index).shape == (60, 8)


def test_bad_inputs():
    pos = cloud(1, 10, seed=6)[0]
    with pytest.raises(ValueError, match="k must be a positive int, got 0"):
        knn_graph(pos, 0)
    with pytest.raises(ValueError, match="sorted in ascending order"):
        knn_graph(pos, 2, batch=torch.tensor([1] * 5 + [0] * 5))
    with pytest.raises(ValueError, match=r"batch must have shape \(N,\)"):
        knn_graph(pos, 2, batch=torch.zeros(9, dtype=torch.int64))
    with pytest.raises(ValueError, match=r"pos must have shape \(N, C\) or \(B, N, C\)"):
        knn_graph(torch.zeros(10), 2)
