import h5py
import numpy as np
import pytest

from pointabstract.data import (
    SHAPENET_CORE,
    LayoutNotFoundError,
    ShapeNetCore,
    read_ply_points,
)
from pointabstract.data.datasets.shapenet_core import find_ply_folder
from tests.fixtures import CAP, MUG, write_part_hdf5, write_ply

CORE_CAP, CORE_MUG = SHAPENET_CORE.index(("cap", "02954340")), SHAPENET_CORE.index(("mug", "03797390"))

def write_core13(root, per_category=5, n=64):
    folder = root / "shapenet_core13" / "customShapeNet"
    rng = np.random.default_rng(0)
    for synset in ("02691156", "04530566"):
        for i in range(per_category):
            fmt = ("ascii", "binary_little_endian", "binary_big_endian")[i % 3]
            write_ply(folder / synset / "ply" / f"{i:03d}.points.ply", rng.normal(size=(n, 3)), fmt=fmt)
    return folder


def test_core13_layout_splits_80_20_and_samples_at_random(tmp_path):
    folder = write_core13(tmp_path)
    assert find_ply_folder(tmp_path) == folder
    train, test = ShapeNetCore(tmp_path, "train", num_points=32), ShapeNetCore(tmp_path, "test", num_points=32)
    assert train.layout == "ply" and (len(train), len(test)) == (8, 2)
    assert list(test.categories) == [0, 12] and test.category_names[12] == "watercraft"
    assert [s.rsplit("/", 1)[1] for s in test.sources] == ["004.points.ply", "004.points.ply"]
    sample = train[1]
    assert set(sample) == {"pos", "category"} and sample["pos"].shape == (32, 3) and sample["category"] == 0
    stored = read_ply_points(folder / "02691156" / "ply" / "001.points.ply")
    rows = {np.flatnonzero((stored == p).all(1))[0] for p in sample["pos"]}
    assert len(rows) == 32  # a subset of the stored points, none twice
    np.testing.assert_array_equal(train[1]["pos"], sample["pos"])  # seeded
    train.set_epoch(1)
    assert not np.array_equal(train[1]["pos"], sample["pos"])
    assert len(ShapeNetCore(tmp_path, "train", categories=["04530566"])) == 4
    assert len(ShapeNetCore(tmp_path, "train", categories=["Watercraft", 0])) == 8
    with pytest.raises(ValueError, match="unknown ShapeNetCore category 'boat'"):
        ShapeNetCore(tmp_path, "train", categories="boat")
    with pytest.raises(ValueError, match=r"\['mug'\] are not ShapeNetCore13 categories"):
        ShapeNetCore(tmp_path, "train", categories=["mug", "airplane"])
    with pytest.raises(ValueError, match=r"split must be one of \['train', 'test'\] for the PLY layout, got"):
        ShapeNetCore(tmp_path, "val")
    (folder / "12345678" / "ply").mkdir(parents=True)
    with pytest.raises(ValueError, match=r"12345678: unknown synset folder"):
        ShapeNetCore(tmp_path, "train")


def test_shapenet_part_points_without_labels(tmp_path):
    write_part_hdf5(tmp_path)
    data = ShapeNetCore(tmp_path, "train", num_points=16)
    # one label space in every layout: category indexes SHAPENET_CORE, the part index is kept apart
    assert data.layout == "hdf5" and list(data.categories) == [CORE_CAP, CORE_MUG]
    assert list(data.part_categories) == [CAP, MUG]
    assert set(data[0]) == {"pos", "category"} and data[0]["category"] == CORE_CAP
    assert data.category_names[CORE_CAP] == "cap" and data.category_names[4] == "chair"
    assert list(ShapeNetCore(tmp_path, "train", categories="Mug").categories) == [CORE_MUG]
    with pytest.raises(ValueError, match=r"\['cabinet'\] are not ShapeNetPart categories"):
        ShapeNetCore(tmp_path, "train", categories="cabinet")
    with pytest.raises(LayoutNotFoundError, match=r"(?s)no ShapeNetPart layout found .*\(and no ShapeNetCore13 PLY"):
        ShapeNetCore(tmp_path / "nothing", "train")
    with pytest.raises(LayoutNotFoundError, match=r"no ShapeNetCore13 PLY layout"):
        ShapeNetCore(tmp_path, "train", layout="ply")


def test_float_labels_of_the_shapenet_part_hdf5_files_are_refused(tmp_path):
    folder = write_part_hdf5(tmp_path)
    with h5py.File(folder / "ply_data_train0.h5", "a") as handle:
        label = handle["label"][()].astype(np.float32)
        label[0, 0] += 0.5
        del handle["label"]
        handle["label"] = label
    with pytest.raises(ValueError, match=r"ply_data_train0\.h5: labels must be whole numbers, got \d+\.5 at sample 0"):
        ShapeNetCore(tmp_path, "train")


def test_real_cap_points(realdata):
    data = ShapeNetCore(realdata, "test", num_points=1024)
    assert len(data) == 11 and all(data[i]["category"] == CORE_CAP for i in range(len(data)))
    assert all(np.isfinite(data[i]["pos"]).all() for i in range(len(data)))
