import numpy as np
import pytest

from pointabstract.data.categories import SHAPENET_PART
from pointabstract.data.synthetic.hard import (
    HARD_CLASS_NAMES,
    HARD_CLASSES,
    random_rotation,
    sample_hard_shape,
)
from tests.fixtures import NO_NUISANCES

N = 256


def test_forty_classes_in_families_of_two_or_more():
    assert len(HARD_CLASSES) == 40 and len(set(HARD_CLASS_NAMES)) == 40
    families = [c.family for c in HARD_CLASSES]
    assert all(families.count(f) >= 2 for f in set(families))  # every class has a sibling
    assert families == sorted(families)  # grouped by family, in SHAPENET_PART order
    assert repr(HARD_CLASSES[11]) == "HardClass('armchair', 'Chair')"


@pytest.mark.parametrize("label", range(40), ids=HARD_CLASS_NAMES)
def test_every_class_builds_a_labelled_shape_in_the_unit_sphere(label):
    s = sample_hard_shape(label, np.random.default_rng(label), num_points=N)
    family = SHAPENET_PART[HARD_CLASSES[label].family]
    assert s["label"] == label and s["category"] == HARD_CLASSES[label].family
    assert s["pos"].shape == s["normal"].shape == (N, 3) and s["pos"].dtype == np.float32
    assert set(np.unique(s["part"])) <= set(family.parts)
    assert set(np.unique(s["pool_part"])) <= set(family.parts)
    assert np.linalg.norm(s["pos"], axis=1).max() == pytest.approx(1, abs=1e-5)
    np.testing.assert_allclose(np.linalg.norm(s["normal"], axis=1), 1, atol=1e-4)


def test_pairs_differ_in_the_defining_part():
    def parts(name):
        label = HARD_CLASS_NAMES.index(name)
        return set(sample_hard_shape(label, np.random.default_rng(0), num_points=N, nuisances=NO_NUISANCES)["part"])

    engine, arm, cord, support = 3, 15, 18, 49
    assert engine not in parts("airplane_0_engines") and engine in parts("airplane_4_engines")
    assert arm not in parts("chair") and arm in parts("armchair")
    assert cord not in parts("headphones") and cord in parts("headset_cord")
    assert support not in parts("table_round") and support in parts("table_pedestal")


def test_same_generator_same_shape_and_so3_turns_it():
    a, b = (sample_hard_shape(7, np.random.default_rng(4), num_points=N) for _ in range(2))
    for key in ("pos", "normal", "part", "source"):
        np.testing.assert_array_equal(a[key], b[key])
    up = sample_hard_shape(7, np.random.default_rng(4), num_points=N, nuisances=NO_NUISANCES)
    turned = sample_hard_shape(7, np.random.default_rng(4), num_points=N, nuisances=NO_NUISANCES, rotation_mode="so3")
    assert not np.allclose(up["pos"], turned["pos"])
    rotation = random_rotation(np.random.default_rng(1))
    np.testing.assert_allclose(rotation @ rotation.T, np.eye(3), atol=1e-12)
    assert np.linalg.det(rotation) == pytest.approx(1)


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(label=40), ValueError, r"label must be an int in \[0, 39\], got 40"),
    (dict(label=True), TypeError, "label must be an int, got bool True"),
    (dict(num_points=0), ValueError, "num_points must be a positive int, got 0"),
    (dict(rotation_mode="z"), ValueError, r"rotation_mode must be one of \['up', 'so3'\], got 'z'"),
    (dict(nuisances={"partial": False}), TypeError, "nuisances must be a Nuisances, got dict"),
])
def test_bad_arguments_are_refused(kwargs, error, match):
    options = {"label": 0, "num_points": N, **kwargs}
    label = options.pop("label")
    with pytest.raises(error, match=match):
        sample_hard_shape(label, np.random.default_rng(0), **options)
