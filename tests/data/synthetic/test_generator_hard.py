import numpy as np
import pytest

from pointabstract.data import ModelNet40, ShapeNetCore, ShapeNetPart, evaluate_baseline
from pointabstract.data.categories import SHAPENET_CORE, SHAPENET_PART
from pointabstract.data.synthetic.generator import generate
from pointabstract.data.synthetic.hard import HARD_CLASS_NAMES, HARD_CLASSES
from pointabstract.data.synthetic.nuisances import NUISANCES, Nuisances
from tests.fixtures import file_digests, read_h5

N, TRAIN, TEST = 256, 6, 3  # a small hard sample: 240 train and 120 test shapes
OPTIONS = dict(level="hard", train_per_class=TRAIN, test_per_class=TEST, num_points=N, progress=False)


@pytest.fixture(scope="module")
def hard(tmp_path_factory):
    out = tmp_path_factory.mktemp("synthetic-hard")
    return out, generate(out, workers=1, **OPTIONS)


def test_same_seed_same_bytes_with_any_worker_count(hard, tmp_path):
    out, _ = hard
    generate(tmp_path, workers=2, **OPTIONS)
    assert file_digests(tmp_path) == file_digests(out)


def test_classes_balanced_and_present_in_both_splits(hard):
    out, info = hard
    mn = out / "modelnet40_ply_hdf5_2048"
    assert (mn / "shape_names.txt").read_text().splitlines() == list(HARD_CLASS_NAMES)
    for split, per_class in (("train", TRAIN), ("test", TEST)):
        label = read_h5(mn / f"ply_data_{split}0.h5")["label"][:, 0]
        np.testing.assert_array_equal(np.bincount(label, minlength=40), np.full(40, per_class))
    assert info["counts"] == {"train": 40 * TRAIN - 40, "val": 40, "test": 40 * TEST}


def test_part_set_labels_are_the_family_categories(hard):
    out, _ = hard
    families = np.array([c.family for c in HARD_CLASSES])
    sp = out / "shapenet_part_seg_hdf5_data"
    classes = read_h5(out / "modelnet40_ply_hdf5_2048" / "ply_data_test0.h5")
    part = read_h5(sp / "ply_data_test0.h5")
    np.testing.assert_array_equal(part["label"][:, 0], families[classes["label"][:, 0]])
    np.testing.assert_array_equal(part["data"], classes["data"])
    for category, pid in zip(part["label"][:, 0], part["pid"]):
        assert set(np.unique(pid)) <= set(SHAPENET_PART[category].parts)


def test_the_loaders_read_every_layout(hard):
    out, _ = hard
    assert tuple(ModelNet40(out, "test", num_points=N).classes) == HARD_CLASS_NAMES
    parts = ShapeNetPart(out, "test", num_points=N)
    assert set(parts.categories) == {c.family for c in HARD_CLASSES}
    core = ShapeNetCore(out, "test", num_points=128)  # reconstruction reads the part layout
    assert len(core) == 40 * TEST and core.layout == "hdf5"
    assert core.category_names[core[0]["category"]] == SHAPENET_CORE[0].name == "airplane"


def test_nuisance_switches_reach_the_files(hard, tmp_path):
    out, _ = hard
    reference = read_h5(out / "modelnet40_ply_hdf5_2048" / "ply_data_test0.h5")["data"]
    for name in NUISANCES:
        generate(tmp_path / name, workers=1, nuisances=Nuisances(**{name: False}),
                 **{**OPTIONS, "train_per_class": 1, "test_per_class": 1})
        data = read_h5(tmp_path / name / "modelnet40_ply_hdf5_2048" / "ply_data_test0.h5")["data"]
        assert not np.array_equal(data, reference[:40]), name


def test_non_learned_baselines_stay_under_their_bound(hard):
    out, _ = hard
    assert evaluate_baseline(out)["accuracy"] < 0.5  # chance is 2.5 %
    assert evaluate_baseline(out, features="statistics")["accuracy"] < 0.5
