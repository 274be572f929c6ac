import json

import h5py
import numpy as np
import pytest

from pointabstract.data.datasets.shapenet_part import ShapeNetPart, detect_part_layout
from tests.fixtures import (
    CAP,
    MUG,
    PART_SHAPES,
    PART_V0,
    TABLE,
    part_shape,
    write_normal,
    write_part_hdf5,
    write_v0,
)


@pytest.mark.parametrize("writer, layout", [(write_normal, "normal"), (write_v0, "v0"), (write_part_hdf5, "hdf5")])
def test_every_layout_gives_global_parts_and_categories(tmp_path, writer, layout):
    writer(tmp_path)
    sizes = {"train": 2, "val": 1, "test": 2, "trainval": 3}
    for split, size in sizes.items():
        data = ShapeNetPart(tmp_path, split, num_points=30, sampling="first")
        assert data.layout == layout and len(data) == size
    data = ShapeNetPart(tmp_path, "test", num_points=30, sampling="first")
    assert list(data.categories) == [TABLE, MUG]
    sample = data[0]
    assert set(sample) == {"pos", "part", "category"} and sample["category"] == TABLE
    assert sample["pos"].dtype == np.float32 and sample["pos"].shape == (30, 3)
    assert sample["part"].dtype == np.int64 and set(sample["part"]) == {47, 48, 49}
    i = [t for _, _, t in PART_SHAPES].index("t0")
    pos, normal, part = part_shape(TABLE, 40 + i if layout != "hdf5" else 32, i)
    np.testing.assert_allclose(sample["pos"], pos[:30], atol=1e-5)
    np.testing.assert_array_equal(sample["part"], part[:30])


def test_normals_random_sampling_and_category_filter(tmp_path):
    write_normal(tmp_path)
    data = ShapeNetPart(tmp_path, "trainval", categories=["Cap", "03797390"], num_points=25, use_normals=True)
    assert list(data.categories) == [CAP, MUG, CAP]
    sample = data[2]
    assert sample["normal"].shape == (25, 3)
    np.testing.assert_allclose(np.linalg.norm(sample["normal"], axis=1), 1, atol=1e-4)
    assert set(sample["part"]) <= {6, 7}
    np.testing.assert_array_equal(data[2]["pos"], sample["pos"])  # same (seed, epoch, index)
    assert len(ShapeNetPart(tmp_path, "test", categories="Airplane")) == 0
    with pytest.raises(ValueError, match="categories: unknown ShapeNetPart category 'Bicycle'"):
        ShapeNetPart(tmp_path, "train", categories=["Bicycle"])


def test_undersized_shapes_raise_or_repeat_when_asked(tmp_path):
    write_normal(tmp_path, n=10)
    with pytest.raises(ValueError, match=r"c0\.txt: has 10 points, fewer than num_points=16"):
        ShapeNetPart(tmp_path, "train", num_points=16)[0]
    sample = ShapeNetPart(tmp_path, "train", num_points=16, undersized="repeat")[0]
    assert sample["pos"].shape == (16, 3) and len(np.unique(sample["pos"], axis=0)) == 10
    assert len(ShapeNetPart(tmp_path, "train", num_points=None)[1]["pos"]) == 11


def test_layout_detection_and_bad_arguments(tmp_path):
    write_v0(tmp_path)
    assert detect_part_layout(tmp_path) == ("v0", tmp_path / PART_V0)
    with pytest.raises(ValueError, match="use_normals=True but the v0 layout has no normals"):
        ShapeNetPart(tmp_path, "train", use_normals=True)
    with pytest.raises(ValueError, match="split must be one of"):
        ShapeNetPart(tmp_path, "all")
    with pytest.raises(ValueError, match="undersized must be"):
        ShapeNetPart(tmp_path, "train", undersized="pad")
    with pytest.raises(ValueError, match=r"no ShapeNetPart layout found under .*\n.*all_object_categories"):
        ShapeNetPart(tmp_path, "train", layout="hdf5")


def test_corrupt_text_files_are_named(tmp_path):
    folder = write_normal(tmp_path)
    cap = folder / "02954340" / "c1.txt"
    lines = cap.read_text().splitlines()
    data = ShapeNetPart(tmp_path, "val", num_points=20)
    cap.write_text("\n".join(lines[:5] + [lines[5].rsplit(" ", 1)[0] + " 12.000000"] + lines[6:]) + "\n")
    with pytest.raises(ValueError, match=r"c1\.txt: part id 12 at line 6 is not one of Cap's parts \[6, 7\]"):
        data[0]
    cap.write_text("\n".join(lines[:3] + ["nan " + lines[3].split(" ", 1)[1]] + lines[4:]) + "\n")
    with pytest.raises(ValueError, match=r"c1\.txt: non-finite value \(NaN or Inf\) at line 4"):
        data[0]
    cap.write_text("\n".join(lines[:-1] + [lines[-1][:20]]) + "\n")
    with pytest.raises(ValueError, match=r"c1\.txt: cannot parse"):
        data[0]
    cap.write_text("\n".join(line.rsplit(" ", 1)[0] for line in lines) + "\n")
    with pytest.raises(ValueError, match=r"c1\.txt: expected rows of 7 values"):
        data[0]
    cap.unlink()
    with pytest.raises(ValueError, match=r"shuffled_val_file_list\.json: entry 0 .*c1\.txt not found"):
        ShapeNetPart(tmp_path, "val")


def test_corrupt_lists_are_named(tmp_path):
    folder = write_normal(tmp_path)
    listing = folder / "train_test_split" / "shuffled_train_file_list.json"
    listing.write_text(json.dumps(["shape_data/02954340/c0", "shape_data/99999999/x"]))
    with pytest.raises(ValueError, match=r"shuffled_train_file_list\.json: entry 1 .*unknown synset"):
        ShapeNetPart(tmp_path, "train")
    listing.write_text(json.dumps(["shape_data/02954340/c0", "shape_data/02954340/c0"]))
    with pytest.raises(ValueError, match=r"entry 1 'shape_data/02954340/c0' is listed twice"):
        ShapeNetPart(tmp_path, "train")
    listing.write_text("[not json")
    with pytest.raises(ValueError, match=r"shuffled_train_file_list\.json: cannot read the split list"):
        ShapeNetPart(tmp_path, "train")
    (folder / "synsetoffset2category.txt").write_text("Cap\t02954340\nBicycle\t12345678\n")
    with pytest.raises(ValueError, match=r"synsetoffset2category\.txt:2: unknown category line"):
        ShapeNetPart(tmp_path, "val")


def test_v0_local_ids_are_checked(tmp_path):
    folder = write_v0(tmp_path)
    seg = folder / "02954340" / "points_label" / "c1.seg"
    seg.write_text(seg.read_text().replace("2\n", "3\n", 1))
    with pytest.raises(ValueError, match=r"c1\.seg: local part id 3 at line 2 is outside 1\.\.2 \(Cap\)"):
        ShapeNetPart(tmp_path, "val", num_points=10)[0]
    seg.write_text("1\n2\n")
    with pytest.raises(ValueError, match=r"c1\.seg: 2 labels for the 42 points of .*c1\.pts"):
        ShapeNetPart(tmp_path, "val", num_points=10)[0]


def test_corrupt_hdf5_files_are_named(tmp_path):
    folder = write_part_hdf5(tmp_path)
    path = folder / "ply_data_test0.h5"
    with h5py.File(path, "a") as handle:
        pid = handle["pid"][()]
        pid[1, 3] = 0  # an Airplane part in a Mug
        handle["pid"][...] = pid
    with pytest.raises(ValueError, match=r"ply_data_test0\.h5 sample 1: part id 0 at point 3 is not one of Mug's"):
        ShapeNetPart(tmp_path, "test")
    with h5py.File(path, "a") as handle:
        del handle["pid"]
    with pytest.raises(ValueError, match=r"ply_data_test0\.h5: missing dataset 'pid'"):
        ShapeNetPart(tmp_path, "test")
    with h5py.File(folder / "ply_data_val0.h5", "a") as handle:
        handle["label"][0, 0] = 16
    with pytest.raises(ValueError, match=r"ply_data_val0\.h5: label 16 of sample 0 is outside \[0, 16\)"):
        ShapeNetPart(tmp_path, "val")
    with pytest.raises(ValueError, match=r"ply_data_train0\.h5: use_normals=True but there is no dataset"):
        ShapeNetPart(tmp_path, "train", use_normals=True)


def test_an_hdf5_file_with_no_shape_is_named(tmp_path):
    folder = write_part_hdf5(tmp_path)
    with h5py.File(folder / "ply_data_train1.h5", "w") as handle:
        handle["data"] = np.zeros((0, 32, 3), np.float32)
        handle["label"] = np.zeros((0, 1), np.uint8)
        handle["pid"] = np.zeros((0, 32), np.uint8)
    with pytest.raises(ValueError, match=r"^.*ply_data_train1\.h5: holds no shape \(dataset 'data' has shape "
                                         r"\(0, 32, 3\)\); "
                                         r"remove the file or write its shapes$"):
        ShapeNetPart(tmp_path, "train")


def test_non_whole_labels_and_part_ids_are_refused(tmp_path):
    folder = write_part_hdf5(tmp_path)
    path = folder / "ply_data_test0.h5"
    with h5py.File(path, "a") as handle:
        label, pid = handle["label"][()].astype(np.float64), handle["pid"][()].astype(np.float32)
        del handle["label"], handle["pid"]
        handle["label"], handle["pid"] = label, pid  # whole floats: accepted
    data = ShapeNetPart(tmp_path, "test", num_points=8)
    assert list(data.categories) == [TABLE, MUG] and data[1]["part"].dtype == np.int64
    with h5py.File(path, "a") as handle:
        handle["pid"][1, 5] = 37.5
    with pytest.raises(ValueError, match=r"ply_data_test0\.h5: part ids must be whole numbers, got 37\.5 at sample 1"):
        ShapeNetPart(tmp_path, "test")
    with h5py.File(path, "a") as handle:
        handle["label"][1, 0] = label[1, 0] + 0.5
    with pytest.raises(ValueError, match=rf"ply_data_test0\.h5: labels must be whole numbers, got {int(label[1, 0])}\.5 at"
                                         r" sample 1"):
        ShapeNetPart(tmp_path, "test")
    cap = write_normal(tmp_path / "text") / "02954340" / "c1.txt"
    lines = cap.read_text().splitlines()
    cap.write_text("\n".join(lines[:2] + [lines[2].rsplit(" ", 1)[0] + " 6.500000"] + lines[3:]) + "\n")
    with pytest.raises(ValueError, match=r"c1\.txt: part ids must be whole numbers, got 6\.5 at line 3$"):
        ShapeNetPart(tmp_path / "text", "val")[0]


def test_real_cap_shapes(realdata):
    sizes = {}
    for split in ("train", "val", "test", "trainval"):
        data = ShapeNetPart(realdata, split, use_normals=True)
        sizes[split] = len(data)
        parts = set()
        for i in range(len(data)):
            sample = data[i]
            assert sample["category"] == CAP and sample["pos"].shape == (2048, 3)
            assert np.isfinite(sample["pos"]).all() and np.isfinite(sample["normal"]).all()
            parts |= set(sample["part"].tolist())
        assert parts == ({6, 7} if len(data) else set())
    assert sizes == {"train": 0, "val": 5, "test": 11, "trainval": 5}
