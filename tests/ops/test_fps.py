import multiprocessing as mp

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from pointabstract.ops import farthest_point_sample, farthest_point_sample_naive
from tests.fixtures import cloud, degenerate_cloud, over_shape_grid, split_backends

EXACT, LIBRARIES = split_backends("farthest_point_sample")


@pytest.mark.parametrize("backend", EXACT)
@over_shape_grid
def test_matches_naive_over_grid(backend, dtype, batch, n):
    pos = cloud(batch, n, dtype=dtype, seed=n)
    for m in sorted({1, max(1, n // 3), n}):
        got = farthest_point_sample(pos, m, backend=backend)
        assert got.dtype == torch.int64 and got.shape == (batch, m)
        assert torch.equal(got, farthest_point_sample_naive(pos, m))


@pytest.mark.parametrize("backend", EXACT)
def test_lengths_sample_only_valid_points_and_pad(backend):
    pos = cloud(3, 50, seed=1)
    lengths = torch.tensor([50, 20, 5])
    got = farthest_point_sample(pos, 10, lengths=lengths, backend=backend)
    assert torch.equal(got, farthest_point_sample_naive(pos, 10, lengths=lengths))
    assert (got[1] < 20).all()
    assert torch.equal(got[2, 5:], torch.full((5,), -1))
    assert sorted(got[2, :5].tolist()) == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("backend", EXACT)
def test_feature_space_any_channels(backend):
    feats = cloud(2, 300, 16, seed=3)
    assert torch.equal(farthest_point_sample(feats, 40, backend=backend),
                       farthest_point_sample_naive(feats, 40))


@pytest.mark.parametrize("backend", LIBRARIES)
def test_library_backends_match_naive_without_ties(backend):
    pos = cloud(3, 500, seed=5)
    assert torch.equal(farthest_point_sample(pos, 100, backend=backend),
                       farthest_point_sample_naive(pos, 100))


@pytest.mark.parametrize("backend", EXACT)
def test_hand_computed_line_with_tie(backend):
    # x = 0, 1, 2, 3, 10: pick 0, then 10 (idx 4), then 3 (idx 3); then idx 1 and 2 both
    # sit at squared distance 1 from the set and the lower index wins.
    pos = torch.tensor([[[0.0, 0, 0], [1, 0, 0], [2, 0, 0], [3, 0, 0], [10, 0, 0]]])
    assert farthest_point_sample(pos, 5, backend=backend).tolist() == [[0, 4, 3, 1, 2]]


@pytest.mark.parametrize("backend", EXACT)
def test_hand_computed_cube_corners(backend):
    # corner i = (i >> 2 & 1, i >> 1 & 1, i & 1); after 0 and its opposite 7 every other
    # corner is at squared distance 1 from the set at each step: ties go to the lowest index.
    corners = torch.tensor([[(i >> 2) & 1, (i >> 1) & 1, i & 1] for i in range(8)], dtype=torch.float32)
    got = farthest_point_sample(corners[None], 8, backend=backend)
    assert got.tolist() == [[0, 7, 1, 2, 3, 4, 5, 6]]


@pytest.mark.parametrize("backend", EXACT)
def test_duplicates_return_every_distinct_point_first(backend):
    a, b, c = [0.0, 0, 0], [1.0, 0, 0], [3.0, 0, 0]
    pos = torch.tensor([[a, a, b, b, c]])
    got = farthest_point_sample(pos, 5, backend=backend)
    assert got.tolist() == [[0, 4, 2, 0, 0]]
    all_same = torch.zeros(1, 6, 3)
    assert farthest_point_sample(all_same, 6, backend=backend).tolist() == [[0] * 6]


def test_random_start_is_reproducible_and_matches_naive():
    pos = cloud(4, 200, seed=7)
    lengths = torch.tensor([200, 150, 3, 1])
    picks = [farthest_point_sample(pos, 20, lengths=lengths, start="random",
                                   generator=torch.Generator().manual_seed(11)) for _ in range(2)]
    assert torch.equal(picks[0], picks[1])
    first = picks[0][:, 0]
    assert ((first >= 0) & (first < lengths)).all()
    assert torch.equal(picks[0], farthest_point_sample_naive(pos, 20, lengths=lengths, starts=first))
    other = farthest_point_sample(pos, 20, start="random", generator=torch.Generator().manual_seed(12))
    assert not torch.equal(other[:2, 0], first[:2])


@pytest.mark.parametrize("n", [1536, 5000])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_pruned_tree_variant_matches_naive(n, dtype):
    # clouds of 1536+ points take the KD-tree-pruned kernel: it must pick exactly the same
    pos = cloud(2, n, dtype=dtype, seed=n)
    lengths = torch.tensor([n, n - 700])  # the second cloud falls back to the plain loop
    got = farthest_point_sample(pos, 700, lengths=lengths)
    assert torch.equal(got, farthest_point_sample_naive(pos, 700, lengths=lengths))


def test_pruned_tree_variant_breaks_ties_like_naive():
    # an integer lattice: thousands of exactly equal distances at every step
    g = torch.arange(14, dtype=torch.float32)
    lattice = torch.stack(torch.meshgrid(g, g, g, indexing="ij"), -1).reshape(1, -1, 3)
    perm = torch.randperm(lattice.shape[1], generator=torch.Generator().manual_seed(0))
    pos = torch.cat([lattice[:, perm], lattice[:, perm[:300]]], 1)  # plus duplicates
    starts = torch.tensor([17])
    got = farthest_point_sample_naive(pos, 400, starts=starts)
    from pointabstract.ops.kernels import fps as kernel

    out = torch.empty(1, 400, dtype=torch.int64)
    kernel.fps_ser(pos.numpy(), torch.tensor([pos.shape[1]]).numpy(), 400, starts.numpy(),
                   out.numpy())
    assert torch.equal(out, got)


def test_pruned_tree_variant_on_duplicates_only():
    pos = torch.zeros(1, 3000, 3)
    pos[0, 1234] = 1.0
    assert farthest_point_sample(pos, 4).tolist() == [[0, 1234, 0, 0]]


@given(st.integers(1, 40), st.integers(0, 2**31 - 1), st.data())
def test_property_picks_are_distinct_when_points_are(n, seed, data):
    m = data.draw(st.integers(1, n))
    pos = cloud(2, n, seed=seed)  # continuous random coordinates: all points distinct
    idx = farthest_point_sample(pos, m)
    for row in idx.tolist():
        assert len(set(row)) == m


def test_property_distinct_first_with_many_duplicates():
    g = torch.Generator().manual_seed(0)
    base = torch.rand(1, 6, 3, generator=g)
    pos = base[:, torch.randint(0, 6, (60,), generator=g)]  # 60 points, at most 6 distinct
    distinct = torch.unique(pos[0], dim=0).shape[0]
    idx = farthest_point_sample(pos, 30)[0]
    firsts = {tuple(p) for p in pos[0, idx[:distinct]].tolist()}
    assert len(firsts) == distinct and not torch.isnan(pos[0, idx]).any()


def _fps_in_child(queue):
    torch.set_num_threads(2)
    queue.put(farthest_point_sample(cloud(4, 300, seed=2), 30).tolist())


def test_works_in_a_forked_child_after_parallel_use():
    torch.set_num_threads(max(2, torch.get_num_threads()))
    parent = farthest_point_sample(cloud(4, 300, seed=2), 30)  # starts the OpenMP pool
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    proc = ctx.Process(target=_fps_in_child, args=(queue,))
    proc.start()
    proc.join(60)
    assert proc.exitcode == 0
    assert queue.get(timeout=5) == parent.tolist()


def test_half_precision_input_is_widened_exactly():
    pos = cloud(2, 100, seed=4).half()
    assert torch.equal(farthest_point_sample(pos, 10),
                       farthest_point_sample_naive(pos.float(), 10))


def test_agrees_with_torch_cluster():
    torch_cluster = pytest.importorskip("torch_cluster")
    pos = cloud(3, 400, seed=8)
    flat = pos.reshape(-1, 3)
    batch = torch.arange(3).repeat_interleave(400)
    theirs = torch_cluster.fps(flat, batch, ratio=0.25, random_start=False).view(3, 100)
    theirs = theirs - (torch.arange(3) * 400)[:, None]
    assert torch.equal(farthest_point_sample(pos, 100), theirs)


def test_numpy_integer_m_is_accepted():
    assert farthest_point_sample(cloud(1, 10), np.int64(3)).shape == (1, 3)


def test_real_scannet_scene_matches_reference(realdata):
    files = sorted((realdata / "scenes").glob("*_xyzrgb.npy"))
    if not files:
        pytest.skip("no ScanNet scene in realdata/scenes")
    xyz = torch.from_numpy(np.load(files[0])[:, :3].copy()).float()[None]  # (1, 81k, 3)
    assert xyz.shape[1] > 80000
    assert torch.equal(farthest_point_sample(xyz, 256), farthest_point_sample_naive(xyz, 256))


def test_explicit_start_indices():
    pos = cloud(3, 60, seed=6)
    starts = torch.tensor([5, 0, 59])
    got = farthest_point_sample(pos, 10, start=starts)
    assert torch.equal(got, farthest_point_sample_naive(pos, 10, starts=starts))
    with pytest.raises(ValueError, match=r"start values must lie in \[0, 59\]"):
        farthest_point_sample(pos, 10, start=torch.tensor([5, 0, 60]))
    with pytest.raises(ValueError, match="start indices must be below lengths"):
        farthest_point_sample(pos, 10, start=starts, lengths=torch.tensor([60, 60, 30]))


@pytest.mark.parametrize("backend", EXACT + LIBRARIES)
@pytest.mark.parametrize("dtype,big", [(torch.float32, 1e20), (torch.float64, 1e200)])
def test_huge_coordinates_sample_like_ordinary_ones(backend, dtype, big):
    # every squared distance overflows the dtype (all inf: the picks used to be 0, 1, 2, ...);
    # such clouds are sampled in (scaled) float64, which picks what the unscaled cloud would
    if backend == "fpsample" and dtype == torch.float64:
        pytest.skip("fpsample computes in float32: float64 beyond its range is out of reach")
    pos = cloud(2, 2000, dtype=torch.float64, seed=3)
    got = farthest_point_sample(pos.mul(big).to(dtype), 50, backend=backend)
    assert torch.equal(got, farthest_point_sample_naive(pos.mul(big).to(dtype), 50))
    if backend in EXACT:
        assert torch.equal(got, farthest_point_sample_naive(pos, 50))


@pytest.mark.parametrize("kind", ["identical", "half duplicates", "few values", "lattice"])
def test_duplicate_heavy_clouds_match_naive(kind):
    # big enough for the pruned tree variant, whose identical-point leaves keep one value
    pos = degenerate_cloud(kind, n=2500)
    starts = torch.tensor([4, 2499])  # inside the runs of duplicates, not their first member
    got = farthest_point_sample(pos, 300, start=starts)
    assert torch.equal(got, farthest_point_sample_naive(pos, 300, starts=starts))
