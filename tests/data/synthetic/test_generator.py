import numpy as np
import pytest

from pointabstract.data.categories import CATEGORY_OF_PART, SHAPENET_PART
from pointabstract.data.synthetic import generator as synthetic
from pointabstract.data.synthetic.generator import CLASS_NAMES, generate, level_classes, sample_shape
from pointabstract.data.synthetic.nuisances import Nuisances
from tests.fixtures import file_digests, read_h5

N = 128  # points per shape: small, the layout does not depend on it


def _tiny(out, **kwargs):
    options = dict(train_per_class=3, test_per_class=2, num_points=N, progress=False, workers=1)
    return generate(out, **{**options, **kwargs})


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    out = tmp_path_factory.mktemp("synthetic")
    return out, _tiny(out)


def test_writes_both_layouts_with_their_index_files(tiny):
    out, info = tiny
    mn, sp = out / "modelnet40_ply_hdf5_2048", out / "shapenet_part_seg_hdf5_data"
    assert info["modelnet"] == str(mn) and info["shapenet_part"] == str(sp)
    assert (mn / "shape_names.txt").read_text().splitlines() == list(CLASS_NAMES)
    assert CLASS_NAMES[0] == "airplane" and len(CLASS_NAMES) == 16
    assert (mn / "train_files.txt").read_text() == "data/modelnet40_ply_hdf5_2048/ply_data_train0.h5\n"
    assert (mn / "test_files.txt").read_text() == "data/modelnet40_ply_hdf5_2048/ply_data_test0.h5\n"
    lines = (sp / "all_object_categories.txt").read_text().splitlines()
    assert lines == [f"{c.name}\t{c.synset}" for c in SHAPENET_PART]
    for split in ("train", "val", "test"):
        assert (sp / f"{split}_hdf5_file_list.txt").read_text() == f"ply_data_{split}0.h5\n"
    assert info["counts"] == {"train": 32, "val": 16, "test": 32}


def test_classification_files_have_the_modelnet_datasets(tiny):
    out, _ = tiny
    for split, count in (("train", 48), ("test", 32)):
        d = read_h5(out / "modelnet40_ply_hdf5_2048" / f"ply_data_{split}0.h5")
        assert set(d) == {"data", "label", "normal"}
        assert d["data"].shape == d["normal"].shape == (count, N, 3)
        assert d["data"].dtype == d["normal"].dtype == np.float32
        assert d["label"].shape == (count, 1) and d["label"].dtype == np.int32
        assert np.array_equal(d["label"][:, 0], np.arange(count) % 16)
        assert np.allclose(np.linalg.norm(d["normal"], axis=2), 1, atol=1e-5)
        assert np.linalg.norm(d["data"], axis=2).max(1) == pytest.approx(1, abs=1e-5)


def test_part_files_label_every_point_with_its_category_parts(tiny):
    out, _ = tiny
    sp = out / "shapenet_part_seg_hdf5_data"
    parts = {s: read_h5(sp / f"ply_data_{s}0.h5") for s in ("train", "val", "test")}
    for d in parts.values():
        assert set(d) == {"data", "label", "pid", "normal"}
        assert d["pid"].shape == d["data"].shape[:2] and d["pid"].dtype == np.int32
        assert d["label"].min() >= 0 and d["label"].max() <= 15
        category = np.vectorize(CATEGORY_OF_PART.get)(d["pid"])
        assert (category == d["label"]).all()
    # one shape collection: the part set's train + val is the classification train set
    train = read_h5(out / "modelnet40_ply_hdf5_2048" / "ply_data_train0.h5")
    assert np.array_equal(np.concatenate([parts["train"]["data"], parts["val"]["data"]]), train["data"])
    assert sorted(np.unique(parts["val"]["label"])) == list(range(16))  # every class in val


def test_same_seed_same_bytes_any_worker_count_and_another_seed_differs(tmp_path):
    # 64 shapes: enough for the worker pool to be used
    _tiny(tmp_path / "a", train_per_class=4, test_per_class=1)
    _tiny(tmp_path / "b", train_per_class=4, test_per_class=1, workers=2)
    _tiny(tmp_path / "c", train_per_class=4, test_per_class=1, seed=1)
    a, b, c = (file_digests(tmp_path / k) for k in "abc")
    assert a == b
    h5 = [k for k in a if k.endswith(".h5")]
    assert h5 and all(a[k] != c[k] for k in h5)


def test_files_hold_at_most_the_chunk_size(tmp_path, monkeypatch):
    monkeypatch.setattr(synthetic, "_FILE_SIZE", 20)
    _tiny(tmp_path, train_per_class=3, test_per_class=1)
    mn = tmp_path / "modelnet40_ply_hdf5_2048"
    names = [line.rsplit("/", 1)[1] for line in (mn / "train_files.txt").read_text().splitlines()]
    assert names == ["ply_data_train0.h5", "ply_data_train1.h5", "ply_data_train2.h5"]
    sizes = [len(read_h5(mn / n)["label"]) for n in names]
    assert sizes == [20, 20, 8]
    labels = np.concatenate([read_h5(mn / n)["label"][:, 0] for n in names])
    assert np.array_equal(labels, np.arange(48) % 16)


def test_sample_shape_returns_a_sample_dict():
    s = sample_shape("Lamp", np.random.default_rng(0), num_points=500)
    assert s["pos"].shape == s["normal"].shape == (500, 3) and s["part"].shape == (500,)
    assert s["pos"].dtype == np.float32 and set(np.unique(s["part"])) <= set(SHAPENET_PART[8].parts)


@pytest.mark.parametrize("kwargs, match", [
    (dict(train_per_class=0), "train_per_class must be a positive int, got 0"),
    (dict(test_per_class=1.5), "test_per_class must be an int, got float 1.5"),
    (dict(num_points=0), "num_points must be an int >= 2"),
    (dict(seed=-1), "seed must be an int >= 0"),
    (dict(val_fraction=1.0), r"val_fraction must be a finite number in \[0.0, 1.0\), got 1.0"),
    (dict(workers=0), "workers must be a positive int, got 0"),
    (dict(level="medium"), r"level must be one of \['easy', 'hard'\], got 'medium'"),
    (dict(rotation="x"), r"rotation must be one of \['up', 'so3'\], got 'x'"),
    (dict(nuisances=Nuisances()), "nuisances apply to level='hard' only, got level='easy'"),
    (dict(level="hard", nuisances=("partial",)), "nuisances must be a Nuisances or None, got tuple"),
])
def test_bad_arguments_are_refused(tmp_path, kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        generate(tmp_path, progress=False, **kwargs)
    with pytest.raises(ValueError, match="num_points must be a positive int"):
        sample_shape(0, np.random.default_rng(0), num_points=0)


def test_a_smaller_run_leaves_no_stale_files(tmp_path, monkeypatch):
    monkeypatch.setattr(synthetic, "_FILE_SIZE", 16)
    _tiny(tmp_path, train_per_class=2, test_per_class=1)
    assert (tmp_path / "modelnet40_ply_hdf5_2048" / "ply_data_train1.h5").exists()
    _tiny(tmp_path, train_per_class=1, test_per_class=1, val_fraction=0.0, overwrite=True)
    mn, sp = tmp_path / "modelnet40_ply_hdf5_2048", tmp_path / "shapenet_part_seg_hdf5_data"
    assert sorted(p.name for p in mn.glob("*.h5")) == ["ply_data_test0.h5", "ply_data_train0.h5"]
    assert not list(sp.glob("ply_data_val*.h5")) and (sp / "val_hdf5_file_list.txt").read_text() == ""


def test_easy_so3_turns_every_shape_and_keeps_the_default_bytes(tmp_path):
    up, turned = tmp_path / "up", tmp_path / "so3"
    _tiny(up, train_per_class=1, test_per_class=1)
    _tiny(turned, train_per_class=1, test_per_class=1, rotation="so3")
    a = read_h5(up / "modelnet40_ply_hdf5_2048" / "ply_data_train0.h5")
    b = read_h5(turned / "modelnet40_ply_hdf5_2048" / "ply_data_train0.h5")
    assert not np.allclose(a["data"], b["data"])
    np.testing.assert_allclose(np.linalg.norm(a["data"], axis=2), np.linalg.norm(b["data"], axis=2), atol=1e-5)
    assert level_classes("easy") == CLASS_NAMES and len(level_classes("hard")) == 40
