import pytest
import torch

from pointabstract.interop import pyg
from tests.fixtures import cloud

# the 4-node square of PyG's own docstring examples
SQUARE = torch.tensor([[-1.0, -1.0], [-1.0, 1.0], [1.0, -1.0], [1.0, 1.0]])
MIDS = torch.tensor([[-1.0, 0.0], [1.0, 0.0]])


def _ragged(sizes, c=3, *, seed=0, dtype=torch.float32):
    x = cloud(1, sum(sizes), c, seed=seed, dtype=dtype)[0]
    batch = torch.repeat_interleave(torch.arange(len(sizes)), torch.tensor(sizes))
    return x, batch


def _equal(a, b):
    assert a.dtype == torch.int64 and a.shape == b.shape, (a.shape, b.shape)
    assert torch.equal(a, b), (a, b)


# --- hand-computed cases (PyG's docstring examples) -------------------------------------------


def test_square_examples_by_hand():
    zeros = torch.zeros(4, dtype=torch.int64)
    _equal(pyg.fps(SQUARE, zeros, ratio=0.5, random_start=False), torch.tensor([0, 3]))
    # y (-1, 0) is 1 from nodes 0 and 1 (a tie: lower index first), y (1, 0) from 2 and 3
    want = torch.tensor([[0, 0, 1, 1], [0, 1, 2, 3]])  # row 0 indexes y, row 1 indexes x
    _equal(pyg.knn(SQUARE, MIDS, 2, zeros, torch.zeros(2, dtype=torch.int64)), want)
    _equal(pyg.radius(SQUARE, MIDS, 1.5, zeros, torch.zeros(2, dtype=torch.int64)), want)
    # every node's two nearest others are its square neighbours (distance 2; the diagonal is 2.83)
    sides = torch.tensor([[1, 2, 0, 3, 0, 3, 1, 2], [0, 0, 1, 1, 2, 2, 3, 3]])  # (source, target)
    _equal(pyg.knn_graph(SQUARE, k=2, batch=zeros, loop=False), sides)
    _equal(pyg.radius_graph(SQUARE, r=2.5, batch=zeros, loop=False), sides)


def test_radius_excludes_the_boundary_like_pyg():
    # pyg-lib keeps dist2 < r * r: the square's sides (length exactly 2) are outside r = 2
    assert pyg.radius_graph(SQUARE, r=2.0).shape == (2, 0)
    assert pyg.radius_graph(SQUARE, r=2.0 + 1e-6).shape == (2, 8)


def test_self_loops():
    with_loops = pyg.knn_graph(SQUARE, k=2, loop=True)  # each node is its own first neighbour
    _equal(with_loops, torch.tensor([[0, 1, 1, 0, 2, 0, 3, 1], [0, 0, 1, 1, 2, 2, 3, 3]]))
    r_loops = pyg.radius_graph(SQUARE, r=2.5, loop=True)
    _equal(r_loops, torch.tensor([[0, 1, 2, 0, 1, 3, 0, 2, 3, 1, 2, 3], [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3]]))


def test_max_num_neighbors_keeps_the_lowest_indices_and_skips_self_first():
    x = torch.zeros(5, 3) + torch.arange(5.0)[:, None] * 1e-3  # all within r of each other
    got = pyg.radius(x, x[4:], 1.0, max_num_neighbors=2)
    _equal(got, torch.tensor([[0, 0], [0, 1]]))  # the two lowest indices, not the two nearest
    graph = pyg.radius_graph(x, 1.0, max_num_neighbors=2, flow="target_to_source")
    # without loop the self-edge does not use up a slot: node 0 gets 1 and 2, node 1 gets 0 and 2
    _equal(graph, torch.tensor([[0, 0, 1, 1, 2, 2, 3, 3, 4, 4], [1, 2, 0, 2, 0, 1, 0, 1, 0, 1]]))
    assert pyg.radius(x, x, 1.0, max_num_neighbors=None).shape == (2, 25)


def test_knn_graph_duplicates_keep_k_plus_one_like_pyg():
    # PyG asks knn for k + 1 and drops self-edges afterwards; four copies of one point, k = 2:
    # every node's 3 nearest are 0, 1, 2 (ties: lowest index), so node 3 keeps all three
    x = torch.ones(4, 3)
    edges = pyg.knn_graph(x, 2, flow="target_to_source")
    _equal(edges, torch.tensor([[0, 0, 1, 1, 2, 2, 3, 3, 3], [1, 2, 0, 2, 0, 1, 0, 1, 2]]))


def test_flow_swaps_rows():
    x, batch = _ragged([9, 7], seed=1)
    for fn, arg in ((pyg.knn_graph, 3), (pyg.radius_graph, 0.8)):
        a = fn(x, arg, batch, flow="source_to_target")
        _equal(fn(x, arg, batch, flow="target_to_source"), a.flip(0))


# --- against the references -------------------------------------------------------------------


@pytest.mark.parametrize("sizes,k", [([20], 4), ([12, 1, 30, 5], 6), ([3, 4], 10)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_knn_matches_naive(sizes, k, dtype):
    x, bx = _ragged(sizes, seed=2, dtype=dtype)
    y, by = _ragged([max(1, s // 2) for s in sizes], seed=3, dtype=dtype)
    _equal(pyg.knn(x, y, k, bx, by), pyg.knn_naive(x, y, k, bx, by))
    _equal(pyg.knn(x, y, k, bx, by, cosine=True), pyg.knn_naive(x, y, k, bx, by, cosine=True))


@pytest.mark.parametrize("loop", [False, True])
@pytest.mark.parametrize("c", [3, 5])
def test_knn_graph_matches_naive(loop, c):
    x, batch = _ragged([15, 2, 25], c, seed=4)
    k = 5
    ref = pyg.knn_naive(x, x, k if loop else k + 1, batch, batch)
    if not loop:
        ref = ref[:, ref[0] != ref[1]]
    _equal(pyg.knn_graph(x, k, batch, loop=loop), ref.flip(0))
    deg = torch.bincount(pyg.knn_graph(x, k, batch, loop=loop)[1], minlength=x.shape[0])
    assert deg.tolist() == [k] * 15 + [1 + loop] * 2 + [k] * 25  # a 2-node cloud has 1 other node


@pytest.mark.parametrize("limit", [None, 3, 64])
@pytest.mark.parametrize("c", [3, 4])
def test_radius_matches_naive(limit, c):
    x, bx = _ragged([40, 3, 60], c, seed=5)
    y, by = _ragged([10, 2, 20], c, seed=6)
    _equal(pyg.radius(x, y, 0.7, bx, by, max_num_neighbors=limit),
           pyg.radius_naive(x, y, 0.7, bx, by, limit))
    ref = pyg.radius_naive(x, x, 0.7, bx, bx, limit, ignore_same_index=True)
    _equal(pyg.radius_graph(x, 0.7, bx, max_num_neighbors=limit), ref.flip(0))
    ref = pyg.radius_naive(x, x, 0.7, bx, bx, limit)
    _equal(pyg.radius_graph(x, 0.7, bx, loop=True, max_num_neighbors=limit), ref.flip(0))


@pytest.mark.parametrize("limit", [2, 5, None])
def test_radius_on_a_grid_with_neighbours_exactly_on_the_sphere(limit):
    # integer grid, r = 1: the 6 axis neighbours lie exactly at distance r (outside for PyG)
    g = torch.arange(4.0)
    x = torch.cartesian_prod(g, g, g)
    for r in (1.0, 1.5):
        want = pyg.radius_naive(x, x, r, max_num_neighbors=limit, ignore_same_index=True)
        _equal(pyg.radius_graph(x, r, max_num_neighbors=limit, flow="target_to_source"), want)
    assert pyg.radius_graph(x, 1.0, max_num_neighbors=limit).shape == (2, 0)


def test_fps_matches_naive_and_counts_ceil_ratio():
    x, batch = _ragged([5, 3, 8], seed=7)
    idx = pyg.fps(x, batch, ratio=0.5, random_start=False)
    _equal(idx, pyg.fps_naive(x, batch, 0.5))
    assert torch.bincount(batch[idx]).tolist() == [3, 2, 4]  # ceil(0.5 * N_b)
    _equal(pyg.fps(x, batch, ratio=1.0, random_start=False).sort().values, torch.arange(16))


def test_fps_random_start_is_seeded_by_torch():
    x, batch = _ragged([30, 20], seed=8)
    torch.manual_seed(0)
    a = pyg.fps(x, batch, ratio=0.25)
    torch.manual_seed(0)
    _equal(pyg.fps(x, batch, ratio=0.25), a)
    starts = [int(a[0]), int(a[8]) - 30]  # ceil(0.25 * 30) = 8 picks in cloud 0
    _equal(a, pyg.fps_naive(x, batch, 0.25, starts=starts))
    firsts = set()
    for seed in range(6):
        torch.manual_seed(seed)
        firsts.add(int(pyg.fps(x, batch, ratio=0.25)[0]))
    assert len(firsts) > 1


# torch_cluster's own fps test case (test/test_fps.py): two squares, of side 2 and 4
SQUARES = torch.tensor([[-1.0, -1], [-1, 1], [1, 1], [1, -1], [-2, -2], [-2, 2], [2, 2], [2, -2]])


def test_fps_ptr_and_tensor_ratio_like_torch_cluster():
    batch = torch.tensor([0, 0, 0, 0, 1, 1, 1, 1])
    # each square: start at its first corner, then the opposite corner (by hand)
    want = torch.tensor([0, 2, 4, 6])
    for kwargs in ({"batch": batch}, {"ptr": [0, 4, 8]}, {"ptr": torch.tensor([0, 4, 8])},
                   {"batch": batch, "ptr": [0, 4, 8]}, {"batch": batch, "ratio": torch.tensor(0.5)},
                   {"batch": batch, "ratio": torch.tensor([0.5, 0.5])}, {"ptr": [0, 4, 8], "ratio": None},
                   {"batch": batch, "ratio": torch.tensor([0.5], dtype=torch.float64)}):
        _equal(pyg.fps(SQUARES, **{"ratio": 0.5, **kwargs}, random_start=False), want)
    # one cloud of 8: 0, then (2, 2) = 6, then (-2, 2) = 5 and (2, -2) = 7 tie at 10: 5 first, then 7
    for ratio in (0.5, torch.tensor(0.5), torch.tensor([0.5])):
        _equal(pyg.fps(SQUARES, ratio=ratio, random_start=False), torch.tensor([0, 6, 5, 7]))
    _equal(pyg.fps(SQUARES, ptr=[0, 8], random_start=False), torch.tensor([0, 6, 5, 7]))


def test_fps_one_ratio_per_cloud_matches_naive():
    x, batch = _ragged([8, 5, 0, 9], seed=13)
    ptr = torch.tensor([0, 8, 13, 13, 22])
    ratio = torch.tensor([0.25, 1.0, 0.5, 0.4])
    got = pyg.fps(x, batch, ratio, random_start=False)
    _equal(got, pyg.fps_naive(x, batch, [0.25, 1.0, 0.4]))  # the naive skips the empty cloud
    assert torch.bincount(batch[got], minlength=4).tolist() == [2, 5, 0, 4]  # ceil(N_b * ratio_b)
    _equal(pyg.fps(x, ratio=ratio, random_start=False, ptr=ptr), got)
    _equal(pyg.fps(x, ratio=ratio, random_start=False, ptr=ptr.tolist(), batch_size=4), got)


def test_fps_ratio_counts_follow_torch_type_promotion():
    # torch_cluster computes ceil(float32(N_b) * ratio) under torch's promotion: a number or a 0-d
    # tensor stays float32 (50 * 0.3 = 15.000001 -> 16 picks), a (B,) float64 tensor is float64 (15)
    x = cloud(1, 50, 3, seed=14)[0]
    for ratio, picks in ((0.3, 16), (torch.tensor(0.3, dtype=torch.float64), 16),
                         (torch.tensor([0.3]), 16), (torch.tensor([0.3], dtype=torch.float64), 15)):
        assert pyg.fps(x, ratio=ratio, random_start=False).shape == (picks,), ratio


def test_fps_duplicates_and_random_start_with_ptr():
    x = torch.cat([torch.ones(4, 3), torch.zeros(3, 3)])  # all duplicates: the lowest index repeats
    _equal(pyg.fps(x, ptr=[0, 4, 7], ratio=1.0, random_start=False), torch.tensor([0, 0, 0, 0, 4, 4, 4]))
    x, batch = _ragged([30, 20], seed=15)
    torch.manual_seed(1)
    a = pyg.fps(x, ptr=[0, 30, 50], ratio=0.25)
    torch.manual_seed(1)
    _equal(pyg.fps(x, batch, ratio=torch.tensor([0.25, 0.25])), a)  # the same draws either way
    _equal(a, pyg.fps_naive(x, batch, 0.25, starts=[int(a[0]), int(a[8]) - 30]))


@pytest.mark.parametrize("x", [torch.empty(0, 3), torch.empty(0), torch.empty(0, 2, 3)])
def test_fps_on_an_empty_input_returns_an_empty_index(x):
    empty = torch.empty(0, dtype=torch.int64)
    _equal(pyg.fps(x), empty)
    _equal(pyg.fps(x, torch.empty(0, dtype=torch.int64), 0.5, False), empty)
    _equal(pyg.fps(x, ptr=[0, 0], ratio=torch.tensor([0.5])), empty)
    _equal(pyg.fps(x, ptr=torch.tensor([0, 0, 0]), ratio=torch.tensor([0.5, 1.0])), empty)


def test_radius_ignore_same_index_like_torch_cluster():
    # y = the first two corners of the square; with ignore_same_index node i of y skips node i of x
    _equal(pyg.radius(SQUARE, SQUARE[:2], 2.5), torch.tensor([[0, 0, 0, 1, 1, 1], [0, 1, 2, 0, 1, 3]]))
    _equal(pyg.radius(SQUARE, SQUARE[:2], 2.5, ignore_same_index=True), torch.tensor([[0, 0, 1, 1], [1, 2, 0, 3]]))
    # the skipped node does not use up one of the max_num_neighbors slots (torch_cluster's order)
    _equal(pyg.radius(SQUARE, SQUARE[:2], 2.5, max_num_neighbors=1, ignore_same_index=True),
           torch.tensor([[0, 1], [1, 0]]))
    x, batch = _ragged([20, 4, 30], seed=16)
    _equal(pyg.radius(x, x, 0.6, batch, batch, ignore_same_index=True),
           pyg.radius_graph(x, 0.6, batch, flow="target_to_source"))


@pytest.mark.parametrize("limit", [None, 2, 32])
@pytest.mark.parametrize("c", [3, 4])
def test_radius_ignore_same_index_matches_naive(limit, c):
    # x and y different point sets: the same *index*, not the same point, is skipped
    x, bx = _ragged([25, 3, 40], c, seed=17)
    y, by = _ragged([30, 5, 10], c, seed=18)
    _equal(pyg.radius(x, y, 0.7, bx, by, max_num_neighbors=limit, ignore_same_index=True),
           pyg.radius_naive(x, y, 0.7, bx, by, limit, ignore_same_index=True))


def test_batch_separation_and_empty_clouds():
    x, bx = _ragged([6, 0, 7], seed=9)  # cloud 1 has no x nodes
    y, by = _ragged([2, 3, 0, 4], seed=10)  # ...and cloud 2 no y nodes; cloud 3 only y nodes
    for edges in (pyg.knn(x, y, 3, bx, by), pyg.radius(x, y, 2.0, bx, by)):
        assert (bx[edges[1]] == by[edges[0]]).all()
        assert set(by[edges[0]].tolist()) == {0}  # clouds 1-3 lack one side
    edges = pyg.knn_graph(x, 2, bx, batch_size=5)
    assert (bx[edges[0]] == bx[edges[1]]).all() and edges.shape == (2, 13 * 2)
    _equal(pyg.fps(x, bx, 0.5, False, batch_size=4), pyg.fps_naive(x, bx, 0.5))
    assert pyg.knn(x[:0], y[:0], 2).shape == (2, 0)


def test_matches_pyg_lib_when_installed():
    typing = pytest.importorskip("torch_geometric.typing")
    if not (typing.WITH_KNN and typing.WITH_RADIUS and typing.WITH_FPS):
        pytest.skip("pyg-lib (fps / knn / radius) is not installed")
    import torch_geometric.nn as gnn

    x, batch = _ragged([50, 30], seed=11)
    _equal(pyg.fps(x, batch, 0.3, False), gnn.fps(x, batch, 0.3, False))
    for ours, theirs in ((pyg.knn_graph(x, 6, batch), gnn.knn_graph(x, 6, batch)),
                         (pyg.radius_graph(x, 0.5, batch, max_num_neighbors=100),
                          gnn.radius_graph(x, 0.5, batch, max_num_neighbors=100))):
        assert set(map(tuple, ours.t().tolist())) == set(map(tuple, theirs.t().tolist()))


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_matches_cpu():
    x, batch = _ragged([200, 50], seed=12)
    xc, bc = x.cuda(), batch.cuda()
    _equal(pyg.fps(xc, bc, 0.25, False).cpu(), pyg.fps(x, batch, 0.25, False))
    _equal(pyg.knn_graph(xc, 8, bc).cpu(), pyg.knn_graph(x, 8, batch))
    _equal(pyg.radius_graph(xc, 0.3, bc, max_num_neighbors=16).cpu(),
           pyg.radius_graph(x, 0.3, batch, max_num_neighbors=16))
    _equal(pyg.radius(xc, xc[:7], 0.3, max_num_neighbors=4).cpu(), pyg.radius(x, x[:7], 0.3, max_num_neighbors=4))


# --- bad input ----------------------------------------------------------------------------------


@pytest.mark.parametrize("call,error,match", [
    (lambda: pyg.knn([[0.0]], SQUARE, 1), TypeError, "x must be a torch.Tensor"),
    (lambda: pyg.knn(SQUARE.long(), SQUARE, 1), TypeError, "x must be a floating-point"),
    (lambda: pyg.knn(SQUARE[None], SQUARE, 1), ValueError, r"x must have shape \(N, C\)"),
    (lambda: pyg.knn(SQUARE, SQUARE[:, :1], 1), ValueError, "x and y must share C"),
    (lambda: pyg.knn(SQUARE * float("nan"), SQUARE, 1), ValueError, "x holds NaN"),
    (lambda: pyg.knn(SQUARE, SQUARE, 0), ValueError, "k must be a positive int"),
    (lambda: pyg.knn(SQUARE, SQUARE, 2.0), TypeError, "k must be an int"),
    (lambda: pyg.knn_graph(SQUARE, 2, flow="up"), ValueError, "flow must be one of"),
    (lambda: pyg.radius_graph(SQUARE, 1.0, flow="up"), ValueError, "flow must be one of"),
    (lambda: pyg.knn_graph(SQUARE, 2, torch.tensor([1, 0, 0, 0])), ValueError, "sorted in ascending"),
    (lambda: pyg.knn_graph(SQUARE, 2, torch.tensor([0.0, 0, 0, 0])), TypeError, "batch must be an integer"),
    (lambda: pyg.knn_graph(SQUARE, 2, torch.tensor([0, 0])), ValueError, r"batch must have shape \(N,\)"),
    (lambda: pyg.knn_graph(SQUARE, 2, torch.tensor([0, 0, 1, 2]), batch_size=2), ValueError, "batch_size = 2"),
    (lambda: pyg.knn(SQUARE, MIDS, 1, batch_y=torch.tensor([0, -1])), ValueError, "batch_y must hold non-negative"),
    (lambda: pyg.radius(SQUARE, MIDS, 0.0), ValueError, "r must be a positive finite"),
    (lambda: pyg.radius(SQUARE, MIDS, float("inf")), ValueError, "r must be a positive finite"),
    (lambda: pyg.radius(SQUARE, MIDS, 1.0, max_num_neighbors=0), ValueError, "max_num_neighbors must be"),
    (lambda: pyg.fps(SQUARE, ratio=0.0), ValueError, r"ratio must be a finite number in \(0.0, 1.0\], got 0.0"),
    (lambda: pyg.fps(SQUARE, ratio=1.5), ValueError, r"ratio must be a finite number in \(0.0, 1.0\], got 1.5"),
    (lambda: pyg.fps(SQUARE, batch_size=0), ValueError, "batch_size must be a positive int"),
    (lambda: pyg.fps(SQUARE, ptr=[0, 3, 2, 4]), ValueError, r"ptr must be sorted in ascending order, got \[0, 3, 2, 4\]"),
    (lambda: pyg.fps(SQUARE, ptr=[0, 2, 3]), ValueError, r"ptr must start at 0 and end at N = 4, got 0 \.\.\. 3"),
    (lambda: pyg.fps(SQUARE, ptr=[1, 2, 4]), ValueError, r"ptr must start at 0 and end at N = 4, got 1 \.\.\. 4"),
    (lambda: pyg.fps(SQUARE, ptr=[4]), ValueError, r"ptr must have shape \(B \+ 1,\) with B >= 1, got \(1,\)"),
    (lambda: pyg.fps(SQUARE, ptr=torch.tensor([[0, 4]])), ValueError, r"ptr must have shape \(B \+ 1,\)"),
    (lambda: pyg.fps(SQUARE, ptr=torch.tensor([0.0, 4.0])), TypeError, "ptr must be an integer tensor or a list"),
    (lambda: pyg.fps(SQUARE, ptr=[0, 2.5, 4]), TypeError, "ptr must be an integer tensor or a list"),
    (lambda: pyg.fps(SQUARE, ptr=[0, 2, 4], batch_size=3), ValueError, "batch_size = 3 but ptr holds 2 clouds"),
    (lambda: pyg.fps(SQUARE, torch.tensor([0, 0, 0, 1]), ptr=[0, 2, 4]), ValueError,
     r"batch and ptr describe different clouds: sizes \[3, 1\] and \[2, 2\]"),
    (lambda: pyg.fps(SQUARE, ratio=torch.tensor(0.0)), ValueError, r"ratio values must lie in \(0, 1\], got 0.0"),
    (lambda: pyg.fps(SQUARE, ratio=torch.tensor([0.5, 1.5]), ptr=[0, 2, 4]), ValueError,
     r"ratio values must lie in \(0, 1\], got 1.5"),
    (lambda: pyg.fps(SQUARE, ratio=torch.tensor([float("nan")])), ValueError, r"ratio values must lie in \(0, 1\]"),
    (lambda: pyg.fps(SQUARE, ratio=torch.tensor([0.5, 0.5, 0.5]), ptr=[0, 2, 4]), ValueError,
     r"ratio must be a number, a 0-d tensor or one value per cloud \(B = 2\), got shape \(3,\)"),
    (lambda: pyg.fps(SQUARE, ratio=torch.full((1, 1), 0.5)), ValueError, r"got shape \(1, 1\)"),
    (lambda: pyg.fps(SQUARE, ratio=torch.tensor([True])), TypeError, "ratio must be a real tensor"),
    (lambda: pyg.radius(SQUARE, MIDS, 1.0, ignore_same_index="yes"), TypeError, "ignore_same_index must be a bool"),
])
def test_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()
