import copy

import numpy as np
import pytest
import torch
from scipy import stats

from pointabstract.data.collate import collate
from pointabstract.data.datasets.base import PointDataset
from pointabstract.data.transforms import (
    Compose,
    Jitter,
    NormalizeUnitCube,
    NormalizeUnitSphere,
    RandomDropout,
    RandomRotate,
    RandomScale,
    RandomSO3Rotation,
    RandomTranslate,
    Resample,
    Shuffle,
)
from pointabstract.data.transforms.geometry import axis_rotation, random_so3


def _sample(n: int = 64, seed: int = 0, dtype=np.float32) -> dict:
    """Distinct random points with unit normals; ``part[i] == i`` tracks where each point went."""
    rng = np.random.default_rng(seed)
    normal = rng.standard_normal((n, 3))
    return {"pos": rng.uniform(-1, 1, (n, 3)).astype(dtype),
            "normal": (normal / np.linalg.norm(normal, axis=1, keepdims=True)).astype(dtype),
            "part": np.arange(n, dtype=np.int64), "label": 3, "category": 1}


def _sphere(n: int = 200, seed: int = 0) -> dict:
    """Points on the unit sphere whose normal is the point itself."""
    rng = np.random.default_rng(seed)
    pos = rng.standard_normal((n, 3))
    pos /= np.linalg.norm(pos, axis=1, keepdims=True)
    return {"pos": pos.astype(np.float32), "normal": pos.astype(np.float32), "label": 0}


def _assert_same(a: dict, b: dict):
    assert a.keys() == b.keys()
    for k in a:
        assert np.array_equal(a[k], b[k]), k
        assert type(a[k]) is type(b[k])


ALL = [
    NormalizeUnitSphere(), NormalizeUnitCube(), RandomScale(), RandomScale(0.5, 2.0, anisotropic=False),
    RandomTranslate(0.2), RandomRotate("y"), RandomRotate("z", max_angle=0.5), RandomSO3Rotation(),
    Jitter(), RandomDropout(), Shuffle(), Resample(40), Resample(100),
    Compose([NormalizeUnitSphere(), RandomScale(), RandomTranslate(), RandomDropout(), Shuffle()]),
    Compose([]),
]
RANDOM = [t for t in ALL if t.random]


@pytest.mark.parametrize("t", ALL, ids=repr)
def test_input_untouched_and_output_shares_no_array(t):
    sample = _sample()
    before = copy.deepcopy(sample)
    out = t(sample, np.random.default_rng(1))
    _assert_same(sample, before)
    assert out is not sample
    for k, v in out.items():
        if isinstance(v, np.ndarray):
            assert not any(np.shares_memory(v, w) for w in sample.values() if isinstance(w, np.ndarray)), k
    n = len(out["pos"])
    assert out["normal"].shape == (n, 3) and out["part"].shape == (n,)
    assert out["pos"].dtype == out["normal"].dtype == np.float32 and out["part"].dtype == np.int64
    assert out["label"] == 3 and out["category"] == 1


@pytest.mark.parametrize("t", RANDOM, ids=repr)
def test_same_generator_state_same_sample(t):
    sample = _sample()
    _assert_same(t(sample, np.random.default_rng(5)), t(sample, np.random.default_rng(5)))
    _assert_same(t(sample, 5), t(sample, np.random.default_rng(5)))  # an int seeds a generator
    a, b = t(sample, np.random.default_rng(5)), t(sample, np.random.default_rng(6))
    assert a["pos"].shape != b["pos"].shape or not np.array_equal(a["pos"], b["pos"])


def test_repr_shows_arguments():
    assert repr(NormalizeUnitSphere()) == "NormalizeUnitSphere()"
    assert repr(RandomScale(0.5, 2, anisotropic=False)) == "RandomScale(low=0.5, high=2.0, anisotropic=False)"
    assert repr(RandomTranslate(0.1)) == "RandomTranslate(max_shift=0.1)"
    assert repr(RandomRotate("z", max_angle=1)) == "RandomRotate(axis='z', max_angle=1.0)"
    assert repr(Jitter(0.02, clip=None)) == "Jitter(sigma=0.02, clip=None)"
    assert repr(RandomDropout(0.5)) == "RandomDropout(max_ratio=0.5)"
    assert repr(Resample(1024)) == "Resample(n=1024)"
    assert repr(Compose([Shuffle(), Resample(8)])) == "Compose([\n    Shuffle(),\n    Resample(n=8),\n])"


def test_float64_stays_float64():
    out = Compose([NormalizeUnitSphere(), RandomScale(), RandomSO3Rotation(), Jitter()])(
        _sample(dtype=np.float64), 0)
    assert out["pos"].dtype == out["normal"].dtype == np.float64


# ----------------------------------------------------------------- normalisation


def test_normalize_unit_sphere_hand_case():
    pos = np.array([[1, 0, 0], [3, 0, 0], [2, 2, 0], [2, -2, 0]], np.float32)
    out = NormalizeUnitSphere()({"pos": pos, "normal": np.eye(3, dtype=np.float32)[[0, 0, 1, 2]]})
    assert np.allclose(out["pos"], [[-0.5, 0, 0], [0.5, 0, 0], [0, 1, 0], [0, -1, 0]])
    assert np.array_equal(out["normal"], np.eye(3)[[0, 0, 1, 2]])


def test_normalize_unit_cube_hand_case_keeps_aspect_ratio():
    pos = np.array([[0, 0, 0], [4, 2, 1], [1, 1, 0.5]], np.float32)
    out = NormalizeUnitCube()({"pos": pos})
    assert np.allclose(out["pos"], [[-1, -0.5, -0.25], [1, 0.5, 0.25], [-0.5, 0, 0]])


def test_normalizations_of_a_single_repeated_point_only_centre():
    pos = np.full((5, 3), 2.5, np.float32)
    for t in (NormalizeUnitSphere(), NormalizeUnitCube()):
        assert np.array_equal(t({"pos": pos})["pos"], np.zeros((5, 3)))


# ----------------------------------------------------------------- rotations


def test_axis_rotation_hand_cases():
    x, y, z = np.eye(3)
    assert np.allclose(axis_rotation("z", np.pi / 2) @ x, y)
    assert np.allclose(axis_rotation("x", np.pi / 2) @ y, z)
    assert np.allclose(axis_rotation("y", np.pi / 2) @ z, x)


@pytest.mark.parametrize("t", [RandomRotate("x"), RandomRotate("y"), RandomRotate("z"), RandomSO3Rotation(),
                               Compose([RandomSO3Rotation(), RandomRotate("y"), Shuffle()])], ids=repr)
def test_normals_rotate_with_points(t):
    sample = _sphere()
    for seed in range(5):
        out = t(sample, seed)
        # the normal of a sphere point is the point: still true after the rotation
        assert np.allclose(out["normal"], out["pos"], atol=1e-6)
        assert np.allclose(np.linalg.norm(out["normal"], axis=1), 1, atol=1e-6)
        # angles between normals are kept
        assert np.allclose(out["normal"] @ out["normal"].T, out["pos"] @ out["pos"].T, atol=1e-6)
    # a rotation that moved nothing would pass the checks above: make sure it moved
    assert not np.allclose(t(sample, 0)["pos"], sample["pos"])


def test_rotate_about_up_axis_keeps_height_and_bounds_angle():
    sample = _sample()
    for seed in range(20):
        out = RandomRotate("y", max_angle=0.3)(sample, seed)
        assert np.allclose(out["pos"][:, 1], sample["pos"][:, 1])
        p, q = sample["pos"][:, [2, 0]], out["pos"][:, [2, 0]]  # the (z, x) plane turned about y
        angle = np.arctan2(p[:, 0] * q[:, 1] - p[:, 1] * q[:, 0], (p * q).sum(1))
        assert np.allclose(angle, angle[0], atol=1e-4) and abs(angle[0]) <= 0.3 + 1e-5


def test_so3_rotations_are_uniform():
    rng = np.random.default_rng(0)
    rots = np.stack([random_so3(rng) for _ in range(3000)])
    assert np.allclose(rots @ rots.transpose(0, 2, 1), np.eye(3), atol=1e-12)
    assert np.allclose(np.linalg.det(rots), 1)
    assert np.abs(rots.mean(0)).max() < 0.05  # E[R] = 0 under the Haar measure
    # the image of a fixed axis is uniform on the sphere, so each coordinate is uniform in [-1, 1]
    assert stats.kstest(rots[:, 2, 2], stats.uniform(-1, 2).cdf).pvalue > 1e-3


# ----------------------------------------------------------------- scale, translate, jitter


def _plane(n: int = 100) -> dict:
    """Points on the plane a . p = 0.5 with a = (1, 2, 3) / |(1, 2, 3)|, normals a."""
    a = np.array([1.0, 2.0, 3.0]) / np.sqrt(14)
    t1 = np.cross(a, [1.0, 0, 0])
    t1 /= np.linalg.norm(t1)
    t2 = np.cross(a, t1)
    uv = np.random.default_rng(0).uniform(-1, 1, (n, 2))
    pos = 0.5 * a + uv[:, :1] * t1 + uv[:, 1:] * t2
    return {"pos": pos.astype(np.float32), "normal": np.tile(a, (n, 1)).astype(np.float32)}


def test_anisotropic_scale_keeps_normals_unit_and_perpendicular_to_the_scaled_plane():
    sample = _plane()
    for seed in range(10):
        out = RandomScale()(sample, seed)
        factors = out["pos"] / sample["pos"]
        assert np.allclose(factors, factors[0], rtol=1e-5)
        assert (factors[0] >= 2 / 3 - 1e-6).all() and (factors[0] <= 1.5 + 1e-6).all()
        assert np.ptp(factors[0]) > 1e-3  # anisotropic indeed
        assert np.allclose(np.linalg.norm(out["normal"], axis=1), 1, atol=1e-6)
        chords = out["pos"] - out["pos"][0]
        assert np.abs((chords * out["normal"]).sum(1)).max() < 1e-5
        assert not np.allclose(out["normal"], sample["normal"], atol=1e-3)


def test_isotropic_scale_keeps_normals():
    sample = _plane()
    out = RandomScale(0.5, 2.0, anisotropic=False)(sample, 3)
    factors = out["pos"] / sample["pos"]
    assert np.allclose(factors, factors[0, 0], rtol=1e-5) and 0.5 <= factors[0, 0] <= 2
    assert np.array_equal(out["normal"], sample["normal"])


def test_translate_shifts_every_point_alike_within_bound():
    sample = _sample()
    for seed in range(10):
        out = RandomTranslate(0.2)(sample, seed)
        shift = (out["pos"].astype(np.float64) - sample["pos"])
        assert np.allclose(shift, shift[0], atol=1e-6) and np.abs(shift[0]).max() <= 0.2 + 1e-6
        assert np.array_equal(out["normal"], sample["normal"])


def test_jitter_moves_positions_only_within_clip():
    sample = _sample(2000)
    out = Jitter(0.01, clip=0.02)(sample, 0)
    noise = out["pos"].astype(np.float64) - sample["pos"]
    assert np.abs(noise).max() <= 0.02 + 1e-6 and np.abs(noise).max() > 0.015
    assert np.array_equal(out["normal"], sample["normal"]) and np.array_equal(out["part"], sample["part"])
    unclipped = Jitter(0.01, clip=None)(_sample(20000, dtype=np.float64), 0)["pos"] - _sample(
        20000, dtype=np.float64)["pos"]
    assert abs(unclipped.std() - 0.01) < 0.0005


# ----------------------------------------------------------------- point selection


def _assert_rows_follow_part(out: dict, sample: dict):
    """Every output point is the input point its ``part`` names, with its normal."""
    assert np.array_equal(out["pos"], sample["pos"][out["part"]])
    assert np.array_equal(out["normal"], sample["normal"][out["part"]])


def test_dropout_leaves_no_duplicate_points():
    sample = _sample(256)
    sizes = []
    for seed in range(50):
        out = RandomDropout(0.875)(sample, seed)
        n = len(out["pos"])
        sizes.append(n)
        assert len(np.unique(out["pos"], axis=0)) == n  # distinct rows
        assert (np.diff(out["part"]) > 0).all()  # a subset, in the original order
        _assert_rows_follow_part(out, sample)
    assert min(sizes) >= 256 - int(0.875 * 256) and max(sizes) <= 256
    assert min(sizes) < 100 and max(sizes) > 200  # the ratio is drawn, not fixed


def test_dropout_keeps_at_least_one_point_and_zero_ratio_keeps_all():
    for seed in range(20):
        assert len(RandomDropout(0.99)(_sample(1), seed)["pos"]) == 1
        assert len(RandomDropout(0.99)(_sample(2), seed)["pos"]) >= 1
    _assert_same(RandomDropout(0.0)(_sample(), 0), _sample())


def test_shuffle_permutes_every_field_alike():
    sample = _sample()
    sample["color"] = np.arange(64 * 3).reshape(64, 3)  # an extra per-point field follows too
    out = Shuffle()(sample, 0)
    assert sorted(out["part"]) == list(range(64)) and not np.array_equal(out["part"], sample["part"])
    _assert_rows_follow_part(out, sample)
    assert np.array_equal(out["color"], sample["color"][out["part"]])


def test_resample_down_is_a_distinct_ordered_subset():
    sample = _sample(100)
    out = Resample(40)(sample, 0)
    assert len(out["pos"]) == 40 and (np.diff(out["part"]) > 0).all()
    _assert_rows_follow_part(out, sample)
    _assert_same(Resample(100)(sample, 0), sample)


@pytest.mark.parametrize("n_in, n_out", [(10, 15), (10, 20), (10, 37), (1, 4)])
def test_resample_up_keeps_all_points_and_repeats_them_evenly(n_in, n_out):
    sample = _sample(n_in)
    out = Resample(n_out)(sample, 0)
    assert len(out["pos"]) == n_out
    assert np.array_equal(out["part"][:n_in], np.arange(n_in))
    counts = np.bincount(out["part"], minlength=n_in)
    assert set(counts) <= {n_out // n_in, n_out // n_in + 1}
    _assert_rows_follow_part(out, sample)


# ----------------------------------------------------------------- bad input


@pytest.mark.parametrize("make, error, match", [
    (lambda: RandomScale(0, 1), ValueError, r"low must be a positive finite number, got 0.0"),
    (lambda: RandomScale(2, 1), ValueError, r"high must be a finite number in \[2.0, inf\), got 1.0"),
    (lambda: RandomScale(1, float("nan")), ValueError, "high must be a finite number"),
    (lambda: RandomScale(anisotropic="yes"), TypeError, "anisotropic must be True or False, got str 'yes'"),
    (lambda: RandomTranslate(-0.1), ValueError, "max_shift must be a finite number"),
    (lambda: RandomTranslate("0.2"), TypeError, "max_shift must be a real number, got str"),
    (lambda: RandomRotate("up"), ValueError, r"axis must be one of \['x', 'y', 'z'\], got 'up'"),
    (lambda: RandomRotate("y", max_angle=4), ValueError, "max_angle must be a finite number in"),
    (lambda: Jitter(-1), ValueError, "sigma must be a finite number"),
    (lambda: Jitter(clip=0), ValueError, r"clip must be a positive finite number, got 0.0"),
    (lambda: RandomDropout(1.0), ValueError, r"max_ratio must be a finite number in \[0.0, 1.0\)"),
    (lambda: Resample(0), ValueError, "n must be a positive int, got 0"),
    (lambda: Resample(2.5), TypeError, "n must be an int, got float"),
    (lambda: Resample(True), TypeError, "n must be an int, got bool"),
    (lambda: Compose(Shuffle()), TypeError, "transforms must be a sequence"),
    (lambda: Compose([Shuffle(), 3]), TypeError, r"transforms\[1\] is not callable"),
])
def test_bad_arguments_raise_naming_them(make, error, match):
    with pytest.raises(error, match=match):
        make()


@pytest.mark.parametrize("sample, error, match", [
    ([1, 2], TypeError, "sample must be a dict, got list"),
    ({"normal": np.zeros((3, 3))}, ValueError, "sample has no 'pos'"),
    ({"pos": torch.zeros(4, 3)}, TypeError, r"sample\['pos'\] must be a numpy array, got Tensor"),
    ({"pos": np.zeros((4, 2))}, ValueError, r"sample\['pos'\] must be a float array of shape \(N, 3\)"),
    ({"pos": np.zeros((0, 3))}, ValueError, "with N > 0"),
    ({"pos": np.zeros((4, 3), int)}, ValueError, r"sample\['pos'\] must be a float array"),
    ({"pos": np.zeros((4, 3)), "normal": np.zeros((5, 3))}, ValueError, r"sample\['normal'\] .* \(4, 3\)"),
    ({"pos": np.zeros((4, 3)), "part": np.zeros(4)}, ValueError, r"sample\['part'\] must be an int array"),
])
def test_bad_samples_raise(sample, error, match):
    with pytest.raises(error, match=match):
        Shuffle()(sample, 0)


def test_random_transforms_need_a_generator():
    with pytest.raises(TypeError, match="RandomScale draws random numbers: rng must be a numpy.random.Generator"):
        RandomScale()(_sample())
    with pytest.raises(TypeError, match="Compose draws random numbers"):
        Compose([NormalizeUnitSphere(), Shuffle()])(_sample())
    with pytest.raises(TypeError, match="got RandomState"):
        Shuffle()(_sample(), np.random.RandomState(0))
    NormalizeUnitSphere()(_sample())  # deterministic ones do not
    Compose([NormalizeUnitSphere(), NormalizeUnitCube()])(_sample())


def test_compose_passes_one_advancing_generator():
    sample = _sample()
    rng = np.random.default_rng(9)
    by_hand = Jitter()(Jitter()(sample, rng), rng)
    _assert_same(Compose([Jitter(), Jitter()])(sample, 9), by_hand)


# ----------------------------------------------------------------- DataLoader workers


class _TinySet(PointDataset):
    """Clouds of different sizes held in memory; ``load`` hands out the cached arrays."""

    def __init__(self, transform):
        super().__init__(transform=transform, seed=11)
        self.clouds = [_sample(48 + 8 * i, seed=i) for i in range(6)]

    def __len__(self):
        return len(self.clouds)

    def load(self, index, rng):
        return dict(self.clouds[index])


def _batches(dataset, workers: int) -> list[dict]:
    loader = torch.utils.data.DataLoader(dataset, batch_size=3, num_workers=workers, collate_fn=collate)
    return list(loader)


def test_same_batches_with_any_number_of_workers():
    train = Compose([NormalizeUnitSphere(), RandomDropout(), RandomSO3Rotation(), RandomScale(),
                     RandomTranslate(), Jitter(), Shuffle()])
    dataset = _TinySet(train)
    cache = copy.deepcopy(dataset.clouds)
    single, double = _batches(dataset, 0), _batches(dataset, 2)
    assert len(single) == len(double) == 2
    for a, b in zip(single, double):
        assert a.keys() == b.keys() and "lengths" in a  # dropout made the batch ragged
        for k in a:
            assert torch.equal(a[k], b[k]), k
    dataset.set_epoch(1)
    assert not torch.equal(_batches(dataset, 0)[0]["pos"], single[0]["pos"])
    for before, after in zip(cache, dataset.clouds):  # the cached arrays were never touched
        _assert_same(before, after)


def test_unit_sphere_frame_hand_computed_and_inverse():
    """frame() is what the transform applies: (p - centre) / radius, and q * radius + centre maps back."""
    pos = np.array([[0, 0, 0], [4, 0, 0], [2, 3, 0], [2, -3, 0]], dtype=np.float32)  # centroid (2, 0, 0)
    centre, radius = NormalizeUnitSphere.frame(pos)
    assert np.allclose(centre, [2, 0, 0]) and radius == pytest.approx(3.0)
    out = NormalizeUnitSphere()({"pos": pos})["pos"]
    assert np.allclose(out, (pos - centre) / radius)
    assert np.allclose(out * radius + centre, pos, atol=1e-6)
    same = np.ones((5, 3), dtype=np.float32)  # coinciding points: only centred, radius 1
    assert NormalizeUnitSphere.frame(same)[1] == 1.0
    assert np.allclose(NormalizeUnitSphere()({"pos": same})["pos"], 0)
