"""Every op on the device under test (CUDA; the CPU in ``bench gpu``'s dry run) against its CPU
result, which comes from the default CPU backends: so these also check that the torch backend on
CUDA agrees with the compiled CPU kernels.

Indices must be equal. float64 inputs (most tests) leave no near-ties, so distances must match
to float64 rounding (assert_close's default); the float32 and bfloat16 tests state their own.
"""

import pytest
import torch

from pointabstract import ops
from pointabstract.bench.gpu_tests import device_under_test, host_syncs

DEVICE = device_under_test()
pytestmark = [pytest.mark.cuda, pytest.mark.skipif(DEVICE is None, reason="no CUDA device")]
ON_CUDA = DEVICE is not None and DEVICE.type == "cuda"


def _clouds(b, n, c=3, *, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(b, n, c, generator=g, dtype=dtype)


def _on(*tensors):
    return [t.to(DEVICE) for t in tensors]


@pytest.mark.skipif(not ON_CUDA, reason="checks the CUDA backend choices")
def test_backends_report_cuda_choices():
    assert ops.farthest_point_sample(_clouds(1, 8).cuda(), 2).device.type == "cuda"
    with pytest.raises(ValueError, match="numba"):
        ops.knn(_clouds(1, 8).cuda(), _clouds(1, 8).cuda(), 2, backend="numba")


@pytest.mark.parametrize("backend", ["auto", "numba", "torch"])  # auto: numba through the host
@pytest.mark.parametrize("n, m", [(7, 7), (1000, 64), (4096, 512)])
def test_fps_matches_cpu(n, m, backend):
    pos = _clouds(3, n)
    lengths = torch.tensor([n, max(1, n // 2), n])
    cpu = ops.farthest_point_sample(pos, m, lengths=lengths)
    dev = ops.farthest_point_sample(*_on(pos), m, lengths=lengths.to(DEVICE), backend=backend)
    assert dev.device.type == DEVICE.type
    assert torch.equal(dev.cpu(), cpu)


@pytest.mark.parametrize("start", ["random", "tensor"])
def test_fps_starts_match_cpu(start):
    pos = _clouds(2, 300, seed=1)
    given = torch.tensor([5, 17]) if start == "tensor" else None
    cpu = ops.farthest_point_sample(pos, 20, start=given if given is not None else "random",
                                    generator=torch.Generator().manual_seed(2))
    dev = ops.farthest_point_sample(pos.to(DEVICE), 20, start=given.to(DEVICE) if given is not None else "random",
                                    generator=torch.Generator().manual_seed(2))
    assert torch.equal(dev.cpu(), cpu)


@pytest.mark.parametrize("backend", ["numba", "torch"])
def test_fps_duplicates(backend):
    pos = torch.zeros(1, 10, 3, device=DEVICE)
    pos[0, 5:] = 1.0
    idx = ops.farthest_point_sample(pos, 4, backend=backend)[0].tolist()
    assert idx[:2] == [0, 5]


@pytest.mark.parametrize("c, k", [(3, 1), (3, 16), (64, 20), (512, 8)])
def test_knn_matches_cpu(c, k):
    query, ref = _clouds(2, 300, c, seed=1), _clouds(2, 500, c, seed=2)
    qlen, rlen = torch.tensor([300, 120]), torch.tensor([500, 40])
    d_cpu, i_cpu = ops.knn(query, ref, k, query_lengths=qlen, ref_lengths=rlen)
    d_dev, i_dev = ops.knn(*_on(query, ref), k, query_lengths=qlen.to(DEVICE), ref_lengths=rlen.to(DEVICE))
    assert i_dev.device.type == DEVICE.type
    assert torch.equal(i_dev.cpu(), i_cpu)
    torch.testing.assert_close(d_dev.cpu(), d_cpu, equal_nan=True)


def test_knn_float32_agrees_on_distances():
    """float32: the same neighbours; distances within 1e-6 absolute / 1e-4 relative (xyz sums of
    three squares, each backend in its own order: a few float32 ulps)."""
    query = _clouds(4, 1024, dtype=torch.float32)
    d_cpu, i_cpu = ops.knn(query, query, 20)
    d_dev, i_dev = ops.knn(*_on(query, query), 20)
    torch.testing.assert_close(d_dev.cpu(), d_cpu, atol=1e-6, rtol=1e-4)
    assert (i_dev.cpu() == i_cpu).float().mean() > 0.999  # only float32 near-ties may swap


def test_ops_on_bfloat16_inputs_match_cpu():
    """bfloat16 clouds (what autocast hands the ops) widen exactly to float32 for the search: the
    same neighbours and picks on both devices, results back in bfloat16."""
    pos = _clouds(2, 256, dtype=torch.float32, seed=3).bfloat16()
    d_cpu, i_cpu = ops.knn(pos, pos, 8)
    d_dev, i_dev = ops.knn(*_on(pos, pos), 8)
    assert d_dev.dtype == torch.bfloat16 and torch.equal(i_dev.cpu(), i_cpu)
    assert torch.equal(ops.farthest_point_sample(pos.to(DEVICE), 16).cpu(), ops.farthest_point_sample(pos, 16))


@pytest.mark.parametrize("pad", ["first", "invalid"])
def test_ball_query_matches_cpu(pad):
    query, ref = _clouds(2, 64, seed=3), _clouds(2, 400, seed=4)
    rlen = torch.tensor([400, 150])
    d_cpu, i_cpu = ops.ball_query(query, ref, 0.15, 12, pad=pad, ref_lengths=rlen)
    d_dev, i_dev = ops.ball_query(*_on(query, ref), 0.15, 12, pad=pad, ref_lengths=rlen.to(DEVICE))
    assert torch.equal(i_dev.cpu(), i_cpu)
    torch.testing.assert_close(d_dev.cpu(), d_cpu)


def test_knn_graph_matches_cpu():
    pos = _clouds(1, 200)[0]
    batch = torch.repeat_interleave(torch.arange(2), torch.tensor([120, 80]))
    assert torch.equal(ops.knn_graph(*_on(pos), 6, batch=batch.to(DEVICE)).cpu(), ops.knn_graph(pos, 6, batch=batch))


@pytest.mark.parametrize("squared", [True, False])
@pytest.mark.parametrize("ragged", [False, True])
def test_chamfer_forward_backward_matches_cpu(squared, ragged):
    x, y = _clouds(3, 256, seed=5), _clouds(3, 300, seed=6)
    y[:, :10] = x[:, :10]  # zero distances: gradients must stay finite
    lengths = {"x_lengths": torch.tensor([256, 100, 30]), "y_lengths": torch.tensor([300, 20, 300])} if ragged else {}
    grads = []
    for dev in ("cpu", DEVICE):
        a, b = x.to(dev, copy=True).requires_grad_(), y.to(dev, copy=True).requires_grad_()
        loss = ops.chamfer_distance(a, b, squared=squared, **{k: v.to(dev) for k, v in lengths.items()})
        loss.backward()
        assert torch.isfinite(a.grad).all() and torch.isfinite(b.grad).all()
        grads.append((loss.detach().cpu(), a.grad.cpu(), b.grad.cpu()))
    for cpu, dev in zip(*grads):
        torch.testing.assert_close(dev, cpu)


def test_gathers_and_upsampling_forward_backward_match_cpu():
    x, pos_x, pos_y = _clouds(2, 50, 16, seed=7), _clouds(2, 50, seed=8), _clouds(2, 200, seed=9)
    idx = ops.farthest_point_sample(pos_y, 30).clamp(max=49)
    idx[1, -3:] = -1  # padding gathers zeros
    lengths = torch.tensor([50, 20])
    for fn, args, kwargs in [(ops.gather_points, (x, idx), {}),
                             (ops.knn_interpolate, (x, pos_x, pos_y), {"x_lengths": lengths}),
                             (ops.nearest_upsample, (x, pos_x, pos_y), {"x_lengths": lengths})]:
        outs = []
        for dev in ("cpu", DEVICE):
            feats = x.to(dev, copy=True).requires_grad_()
            out = fn(feats, *(a.to(dev) for a in args[1:]), **{k: v.to(dev) for k, v in kwargs.items()})
            out.square().sum().backward()
            outs.append((out.detach().cpu(), feats.grad.cpu()))
        for cpu, dev in zip(*outs):
            torch.testing.assert_close(dev, cpu)


def test_max_over_forward_backward_matches_cpu():
    x = _clouds(4, 32, 16, seed=10).view(4, 32, 4, 4)
    outs = []
    for dev in ("cpu", DEVICE):
        a = x.to(dev, copy=True).requires_grad_()
        out = ops.max_over(a, 1)
        out.sum().backward()
        outs.append((out.detach().cpu(), a.grad.cpu()))
    for cpu, dev in zip(*outs):
        torch.testing.assert_close(dev, cpu)


def test_sampling_matches_cpu():
    pos = _clouds(2, 300)
    assert ops.random_sample(pos.to(DEVICE), 10).device.type == DEVICE.type
    km_cpu = ops.kmeans_sample(pos, 8, iters=3)
    km_dev = ops.kmeans_sample(pos.to(DEVICE), 8, iters=3)
    torch.testing.assert_close(km_dev.centroids.cpu(), km_cpu.centroids)
    assert torch.equal(km_dev.assignment.cpu(), km_cpu.assignment)


@pytest.mark.parametrize("nearest", [None, 4])
def test_tree_and_tables_match_cpu(nearest):
    pos = _clouds(2, 300)
    trees = ops.build_tree(pos, branching=4, leaf_size=8), ops.build_tree(pos.to(DEVICE), branching=4, leaf_size=8)
    assert torch.equal(trees[1].leaf_order.cpu(), trees[0].leaf_order)
    for lc, ld in zip(trees[0].levels, trees[1].levels):
        assert torch.equal(ld.children.cpu(), lc.children)
        torch.testing.assert_close(ld.pos.cpu(), lc.pos)
    tables = [ops.tree_tables(t, nearest=nearest) for t in trees]
    for field in ("children", "siblings", "ancestors", "valid") + (("nearest",) if nearest else ()):
        for lc, ld in zip(getattr(tables[0], field), getattr(tables[1], field)):
            assert torch.equal(ld.cpu(), lc), field
    grads = []
    for dev, tree, table in zip(("cpu", DEVICE), trees, tables):
        p = pos.to(dev, copy=True).requires_grad_()
        nodes = ops.node_positions(p, tree, table)
        sum(level.square().sum() for level in nodes).backward()
        grads.append(([level.detach().cpu() for level in nodes], p.grad.cpu()))
    for lc, ld in zip(grads[0][0], grads[1][0]):
        torch.testing.assert_close(ld, lc)
    torch.testing.assert_close(grads[1][1], grads[0][1])


def _syncs(call) -> list[str]:
    """The file:line of every host synchronisation torch reports during ``call()``."""
    call()  # warm-up: lazy CUDA initialisation is not the call's
    return host_syncs(call)


@pytest.mark.skipif(not ON_CUDA, reason="counts CUDA synchronisations")
def test_gathers_sync_once_for_their_index_check():
    x = torch.rand(2, 100, 16, device=DEVICE)
    idx = torch.randint(0, 100, (2, 30, 8), device=DEVICE)
    assert len(_syncs(lambda: ops.gather_points(x, idx))) == 1  # before: 3 (min, max, any padding)
    lengths = torch.tensor([100, 60], device=DEVICE)
    # the finite check of each cloud (one copy of min and max each) and the lengths check
    assert len(_syncs(lambda: ops.knn(x, x, 8, ref_lengths=lengths, backend="torch"))) <= 3
