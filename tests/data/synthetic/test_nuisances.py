import numpy as np
import pytest
from scipy.spatial import cKDTree

from pointabstract.data.synthetic.nuisances import (
    NUISANCES,
    Nuisances,
    apply_nuisances,
    hidden_point_removal,
    hidden_point_removal_naive,
    normalise_unit_sphere,
)
from tests.fixtures import NO_NUISANCES

N = 512


def _sphere(m: int, seed: int = 0):
    """A labelled unit-sphere pool: (M, 3) points, their normals, part = octant id."""
    pos = np.random.default_rng(seed).normal(size=(m, 3))
    pos /= np.linalg.norm(pos, axis=1, keepdims=True)
    part = (pos[:, 0] > 0) * 4 + (pos[:, 1] > 0) * 2 + (pos[:, 2] > 0)
    return pos, pos.astype(np.float32), part.astype(np.int64)


def _only(name: str) -> Nuisances:
    return Nuisances(**{n: n == name for n in NUISANCES})


def test_hidden_point_removal_hand_case():
    # two points on the ray from the viewpoint: the far one is hidden; a point off to the side is seen
    pos = np.array([[0.0, 0.0, 0.5], [0.0, 0.0, -0.5], [0.9, 0.0, 0.0]])
    viewpoint = np.array([0.0, 0.0, 3.0])
    assert hidden_point_removal(pos, viewpoint, resolution=4).tolist() == [0, 2]
    assert hidden_point_removal(pos, viewpoint, resolution=4, tolerance=2.0, slope=0).tolist() == [0, 1, 2]


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("resolution", [4, 16])
def test_hidden_point_removal_matches_naive(seed, resolution):
    rng = np.random.default_rng(seed)
    pos = normalise_unit_sphere(rng.normal(size=(150, 3)))
    viewpoint = rng.normal(size=3)
    viewpoint *= 2.5 / np.linalg.norm(viewpoint)
    fast = hidden_point_removal(pos, viewpoint, resolution=resolution)
    np.testing.assert_array_equal(fast, hidden_point_removal_naive(pos, viewpoint, resolution=resolution))
    assert 0 < len(fast) < len(pos)


def test_hidden_point_removal_on_a_sphere_keeps_the_near_cap():
    pos, _, _ = _sphere(4000)
    viewpoint = np.array([0.0, 3.0, 0.0])
    seen = hidden_point_removal(pos, viewpoint)
    assert pos[seen, 1].min() > 1 / 3 - 0.1  # the cap visible from distance 3 is y > 1/3
    leaky = hidden_point_removal(pos, viewpoint, resolution=60)  # too fine: far points show through
    assert pos[leaky, 1].min() < 0
    assert np.isin(np.flatnonzero(pos[:, 1] > 0.6), seen).mean() > 0.95  # all but grazing points
    assert len(seen) > 0.5 * (pos[:, 1] > 1 / 3).sum()


def test_hidden_point_removal_refuses_bad_input():
    with pytest.raises(ValueError, match=r"pos must have shape \(M, 3\)"):
        hidden_point_removal(np.zeros((5, 2)), np.ones(3) * 5)
    with pytest.raises(ValueError, match="viewpoint must lie outside the cloud's bounding sphere"):
        hidden_point_removal(np.eye(3), np.array([0.5, 0, 0]))


@pytest.mark.parametrize("nuisances", [NO_NUISANCES, Nuisances(), *[_only(n) for n in NUISANCES]],
                         ids=["none", "all", *NUISANCES])
def test_labels_follow_their_surface_points_under_every_nuisance(nuisances):
    pool, normal, part = _sphere(6 * N)
    out = apply_nuisances(pool, normal, part, np.random.default_rng(3), num_points=N, nuisances=nuisances)
    assert out["pos"].shape == out["normal"].shape == (N, 3) and out["part"].shape == out["source"].shape == (N,)
    assert np.linalg.norm(out["pos"], axis=1).max() <= 1 + 1e-5
    inlier = out["source"] >= 0
    np.testing.assert_array_equal(out["part"][inlier], part[out["source"][inlier]])
    assert set(out["source"][inlier]) <= set(out["candidates"])
    if (~inlier).any():  # an outlier takes the part of its nearest surface point
        _, nearest = cKDTree(out["pos"][inlier]).query(out["pos"][~inlier])
        np.testing.assert_array_equal(out["part"][~inlier], out["part"][inlier][nearest])


def test_each_switch_does_its_own_job():
    pool, normal, part = _sphere(6 * N)

    def run(nuisances, seed=5):
        return apply_nuisances(pool, normal, part, np.random.default_rng(seed), num_points=N,
                               nuisances=nuisances)

    clean = run(NO_NUISANCES)
    assert len(clean["candidates"]) == len(pool) and (clean["source"] >= 0).all()
    assert len(np.unique(clean["source"])) == N  # uniform, without replacement
    # broken: a whole ball of the pool is gone
    missing = np.setdiff1d(np.arange(len(pool)), run(_only("broken"))["candidates"])
    tree = cKDTree(pool)
    assert len(missing) > 0 and any(set(tree.query_ball_point(pool[c], 0.1)) <= set(missing) for c in missing)
    # partial: the candidates lie in one cap of the sphere
    kept = pool[run(_only("partial"))["candidates"]]
    direction = kept.mean(0) / np.linalg.norm(kept.mean(0))
    assert len(kept) < 0.5 * len(pool) and (kept @ direction).min() > 0
    # density: the chosen points lean towards one side, uniform ones do not
    assert np.linalg.norm(pool[run(_only("density"))["source"]].mean(0)) > 0.15
    assert np.linalg.norm(pool[clean["source"]].mean(0)) < 0.1
    # noise: the distance to the sphere spreads 2-5x more than the easy level's 0.004
    spread = np.std(np.linalg.norm(run(_only("noise"))["pos"], axis=1))
    assert 2 * np.std(np.linalg.norm(clean["pos"], axis=1)) < spread < 0.03
    # outliers: 0.5-2 % of the points, only with the switch on
    count = (run(_only("outliers"))["source"] < 0).sum()
    assert N // 200 <= count <= N // 50 and (clean["source"] >= 0).all()


def test_same_generator_same_scan():
    pool, normal, part = _sphere(6 * N)
    a, b = (apply_nuisances(pool, normal, part, np.random.default_rng(9), num_points=N) for _ in range(2))
    for key in ("pos", "normal", "part", "source"):
        np.testing.assert_array_equal(a[key], b[key])


def test_density_top_k_comes_back_shuffled():
    # the Gumbel top-k returns its points sorted by key: without the final shuffle the stored order
    # correlates with the density weight (mean correlation about 0.07 over these seeds, 0.00 with it)
    pool, normal, part = _sphere(6 * N)
    trend = []
    for seed in range(30):
        out = apply_nuisances(pool, normal, part, np.random.default_rng(seed), num_points=N,
                              nuisances=_only("density"))
        dense_side = pool[out["source"]] @ pool[out["source"]].mean(0)
        trend.append(np.corrcoef(np.arange(N), dense_side)[0, 1])
    assert abs(np.mean(trend)) < 0.035


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(pos=np.zeros((4, 2))), ValueError, r"pos must have shape \(M, 3\) with M > 0, got \(4, 2\)"),
    (dict(normal=np.zeros((3, 3))), ValueError, r"normal must have shape \(40, 3\) and part \(40,\)"),
    (dict(part=np.zeros(39)), ValueError, r"got \(40, 3\) and \(39,\)"),
    (dict(num_points=0), ValueError, "num_points must be a positive int, got 0"),
    (dict(nuisances="all"), TypeError, "nuisances must be a Nuisances, got str"),
])
def test_apply_nuisances_refuses_bad_input(kwargs, error, match):
    pool, normal, part = _sphere(40)
    args = {"pos": pool, "normal": normal, "part": part, "num_points": 8, **kwargs}
    with pytest.raises(error, match=match):
        apply_nuisances(args.pop("pos"), args.pop("normal"), args.pop("part"), np.random.default_rng(0), **args)
