import numpy as np
import pytest
import torch

from pointabstract.viz.classification.part_agreement import (
    block_part_labels,
    chance_agreement,
    neighbour_agreement,
    neighbour_agreement_naive,
    open_part_dataset,
    part_agreement,
)
from tests.fixtures import cloud

# five points on a line at x = 0, 1, 2, 10, 11; the first three are part 0, the last two part 1
LINE = np.array([[0.0, 0, 0], [1, 0, 0], [2, 0, 0], [10, 0, 0], [11, 0, 0]])
PARTS = np.array([0, 0, 0, 1, 1])


def test_hand_computed_agreement_on_a_line():
    # k = 1: every nearest other point is in the same part
    np.testing.assert_allclose(neighbour_agreement(LINE, PARTS, 1), [1, 1, 1, 1, 1])
    # k = 2: point 0 -> {1, 2}; 1 -> {0, 2}; 2 -> {1, 0}; 3 -> {4, 2}: 1/2; 4 -> {3, 2}: 1/2
    np.testing.assert_allclose(neighbour_agreement(LINE, PARTS, 2), [1, 1, 1, 0.5, 0.5])
    # k = 3: 0 -> {1, 2, 3}: 2/3; 1 -> {0, 2, 3}: 2/3; 2 -> {1, 0, 3}: 2/3; 3 -> {4, 2, 1}: 1/3; 4 -> 1/3
    np.testing.assert_allclose(neighbour_agreement(LINE, PARTS, 3), [2 / 3, 2 / 3, 2 / 3, 1 / 3, 1 / 3])
    # chance: the other points of the same part among the 4 others
    np.testing.assert_allclose(chance_agreement(PARTS), [0.5, 0.5, 0.5, 0.25, 0.25])


def test_ties_go_to_the_lower_index_and_the_point_is_never_its_own_neighbour():
    pts = np.array([[0.0, 0], [1, 0], [-1, 0], [0, 0]])  # 1 and 2 tie for point 0; point 3 duplicates 0
    lab = np.array([0, 1, 2, 0])
    # point 0: neighbours sorted (0.0, 3), (1.0, 1), (1.0, 2) -> k=2 takes 3 and 1 -> 1/2
    assert neighbour_agreement(pts, lab, 2)[0] == 0.5 == neighbour_agreement_naive(pts, lab, 2)[0]


def test_fast_matches_naive_on_random_features():
    for seed, (m, c, k, parts) in enumerate([(30, 3, 5, 3), (50, 16, 12, 4), (12, 7, 11, 2)]):
        x = cloud(1, m, c, seed=seed)[0]
        lab = np.random.default_rng(seed).integers(0, parts, m)
        np.testing.assert_allclose(neighbour_agreement(x, lab, k), neighbour_agreement_naive(x, lab, k))


def test_fast_matches_naive_where_many_distances_tie():
    # points on a small integer grid: most distances tie, often right at the K-th neighbour
    for seed, (m, c, k) in enumerate([(40, 2, 7), (60, 3, 20), (25, 1, 24)]):
        rng = np.random.default_rng(seed)
        x = rng.integers(0, 3, (m, c)).astype(np.float64)
        lab = rng.integers(0, 3, m)
        np.testing.assert_allclose(neighbour_agreement(x, lab, k), neighbour_agreement_naive(x, lab, k))


def test_block_points_take_the_part_of_their_nearest_input_point():
    block = np.array([[0.4, 0, 0], [10.6, 0, 0], [1.9, 0.1, 0]], dtype=np.float32)
    assert block_part_labels(block, LINE.astype(np.float32), PARTS).tolist() == [0, 1, 0]


class _PartOracle(torch.nn.Module):
    """Two 'blocks': the input points with features = one-hot part (a perfect part grouping), and
    the same points with features = random noise (no grouping at all)."""

    def __init__(self, parts):
        super().__init__()
        self.parts = parts

    def forward(self, pos, *, features=None, return_features=False):
        b, n, _ = pos.shape
        onehot = torch.nn.functional.one_hot(torch.as_tensor(self.parts), 2).float()[None].expand(b, n, 2)
        noise = torch.randn(b, n, 8, generator=torch.Generator().manual_seed(0))
        return {"logits": torch.zeros(b, 2),
                "blocks": [{"features": onehot, "pos": pos}, {"features": noise, "pos": pos}]}


def test_part_agreement_of_a_perfect_and_of_a_random_grouping():
    rng = np.random.default_rng(0)
    parts = np.repeat([0, 1], 20)
    # random positions: 3D neighbourhoods ignore the parts
    data = [{"pos": rng.uniform(-1, 1, (40, 3)).astype(np.float32), "part": parts} for _ in range(3)]
    out = part_agreement(_PartOracle(parts), data, k=5, batch_size=2)
    assert out["shapes"] == 3 and out["num_points"] == 40
    assert out["block_0"]["feature"] == pytest.approx(1.0) and out["block_0"]["k"] == 5
    assert out["block_0"]["chance"] == pytest.approx(19 / 39)
    assert out["block_0"]["xyz"] == pytest.approx(out["block_1"]["xyz"])  # same points, same 3D neighbours
    assert abs(out["block_1"]["feature"] - 19 / 39) < 0.2  # random features: about chance
    assert abs(out["block_0"]["xyz"] - 19 / 39) < 0.2


class _SideOracle(torch.nn.Module):
    """Features: which side of x = 0 a point lies on, for clouds of any size."""

    def forward(self, pos, *, features=None, return_features=False):
        side = torch.nn.functional.one_hot((pos[..., 0] > 0).long(), 2).float()
        return {"logits": torch.zeros(pos.shape[0], 2), "blocks": [{"features": side, "pos": pos}]}


def test_part_agreement_of_clouds_of_different_sizes_is_the_mean_over_each_alone():
    # a split opened with every stored point (data.num_points=all) holds clouds of their own sizes
    rng = np.random.default_rng(1)
    clouds = [rng.uniform(-1, 1, (n, 3)).astype(np.float32) for n in (30, 41, 52)]
    data = [{"pos": c, "part": (c[:, 0] > 0.3).astype(np.int64)} for c in clouds]
    together = part_agreement(_SideOracle(), data, k=4, batch_size=3)
    alone = [part_agreement(_SideOracle(), [d], k=4) for d in data]
    assert together["num_points"] == "30-52" and together["shapes"] == 3
    for key in ("feature", "xyz", "chance"):
        assert together["block_0"][key] == pytest.approx(np.mean([a["block_0"][key] for a in alone]))
    assert [a["num_points"] for a in alone] == [30, 41, 52]


def test_part_agreement_input_errors():
    data = [{"pos": LINE.astype(np.float32), "part": PARTS}]
    model = _PartOracle(PARTS)
    with pytest.raises(ValueError, match="k must be a positive int or None, got 0"):
        part_agreement(model, data, k=0)
    with pytest.raises(ValueError, match="batch_size must be a positive int, got 0"):
        part_agreement(model, data, batch_size=0)
    with pytest.raises(ValueError, match="dataset must hold at least one sample"):
        part_agreement(model, [])
    with pytest.raises(ValueError, match="dataset sample 0 has no 'part' labels"):
        part_agreement(model, [{"pos": LINE.astype(np.float32)}])
    with pytest.raises(ValueError, match=r"k must be an int in \[1, 4\] \(M - 1 other points\), got 5"):
        neighbour_agreement(LINE, PARTS, 5)
    with pytest.raises(ValueError, match=r"labels must be \(5,\) integers"):
        neighbour_agreement(LINE, PARTS[:3], 1)
    with pytest.raises(ValueError, match=r"points must be a float array of shape \(M, C\)"):
        neighbour_agreement(PARTS, PARTS, 1)
    with pytest.raises(ValueError, match="labels must be .M,. integers with M >= 2"):
        chance_agreement([1])
    with pytest.raises(ValueError, match=r"input_part must be \(5,\) integers"):
        block_part_labels(LINE[:2], LINE, PARTS[:2])


def test_synthetic_data_parts_line_up_with_its_classification_split(demo_run):
    """The demo's data root also holds part labels for the same test shapes, in the same order."""
    from pointabstract.data import ModelNet40

    parts = open_part_dataset(demo_run[1], num_points=256)
    shapes = ModelNet40(demo_run[1], "test", num_points=256, sampling="first")
    assert len(parts) == len(shapes) == 16
    np.testing.assert_array_equal(parts[5]["pos"], shapes[5]["pos"])
    assert parts[5]["part"].shape == (256,) and len(np.unique(parts[5]["part"])) >= 2
    with pytest.raises((FileNotFoundError, ValueError), match="no ShapeNetPart layout found"):
        open_part_dataset(demo_run[0].parent)
