import re

import h5py
import numpy as np
import pytest
import torch

from pointabstract.bench.data import (
    random_meshes,
    write_modelnet_hdf5,
    write_modelnet_off,
    write_modelnet_resampled,
)
from pointabstract.data.categories import MODELNET10, MODELNET40
from pointabstract.data.datasets.modelnet import ModelNet10, ModelNet40, detect_layout, point_indices
from pointabstract.ops import farthest_point_sample

LABELS = np.array([8, 2, 8, 0, 12, 23])  # chair, bed, chair, airplane, desk, night_stand


def _clouds(n, p, seed=0):
    rng = np.random.default_rng(seed)
    pos = rng.normal(size=(n, p, 3)).astype(np.float32)
    return pos, pos / np.linalg.norm(pos, axis=2, keepdims=True)


@pytest.fixture
def hdf5_root(tmp_path):
    pos, normal = _clouds(6, 64)
    write_modelnet_hdf5(tmp_path / "modelnet40_ply_hdf5_2048", "train", pos=pos, labels=LABELS, normals=normal, files=2)
    write_modelnet_hdf5(tmp_path / "modelnet40_ply_hdf5_2048", "test", pos=pos[:2], labels=LABELS[:2], normals=normal[:2])
    return tmp_path, pos, normal


@pytest.fixture
def txt_root(tmp_path):
    pos, normal = _clouds(6, 50)
    folder = tmp_path / "modelnet40_normal_resampled"
    write_modelnet_resampled(folder, "train", pos=pos[:4], normals=normal[:4], labels=LABELS[:4])
    write_modelnet_resampled(folder, "test", pos=pos[4:], normals=normal[4:], labels=LABELS[4:], first_id=101)
    return tmp_path, pos, normal


def test_hdf5_layout_samples_keys_dtypes_and_labels(hdf5_root):
    root, pos, normal = hdf5_root
    data = ModelNet40(root, "train", num_points=32, use_normals=True)
    assert data.layout == "hdf5" and len(data) == 6 and data.classes == MODELNET40
    sample = data[1]
    assert set(sample) == {"pos", "label", "normal"} and sample["label"] == 2
    assert sample["pos"].dtype == np.float32 and sample["pos"].shape == (32, 3)
    np.testing.assert_array_equal(sample["pos"], pos[1, :32])  # sampling="first"
    np.testing.assert_array_equal(sample["normal"], normal[1, :32])
    assert data.sources[3].endswith("ply_data_train1.h5 sample 0")
    assert len(ModelNet40(root / "modelnet40_ply_hdf5_2048", "test")) == 2  # the layout folder itself
    assert "normal" not in ModelNet40(root, "test", num_points=8)[0]


def test_sampling_random_is_seeded_without_repeats_and_fps_matches_the_op(hdf5_root):
    root, pos, _ = hdf5_root
    data = ModelNet40(root, "train", num_points=40, sampling="random", seed=3)
    a, b = data[0]["pos"], data[0]["pos"]
    np.testing.assert_array_equal(a, b)
    rows = [np.flatnonzero((pos[0] == p).all(1))[0] for p in a]
    assert len(set(rows)) == 40  # drawn from the stored points, none twice
    data.set_epoch(1)
    assert not np.array_equal(data[0]["pos"], a)
    fps = ModelNet40(root, "train", num_points=16, sampling="fps")[2]["pos"]
    idx = farthest_point_sample(torch.from_numpy(pos[2])[None], 16)[0].numpy()
    np.testing.assert_array_equal(fps, pos[2, idx])


def test_point_indices_rules():
    rng = np.random.default_rng(0)
    np.testing.assert_array_equal(point_indices(5, None, rng=rng), np.arange(5))
    idx = point_indices(3, 7, sampling="random", rng=rng, undersized="repeat")
    assert sorted(set(idx)) == [0, 1, 2] and len(idx) == 7
    with pytest.raises(ValueError, match=r"shape\.txt: has 3 points, fewer than num_points=7"):
        point_indices(3, 7, rng=rng, source="shape.txt")
    with pytest.raises(ValueError, match="sampling must be one of"):
        point_indices(3, 2, sampling="middle", rng=rng)


def test_resampled_layout_reads_lists_and_official_names(txt_root):
    root, pos, normal = txt_root
    train = ModelNet40(root, "train", num_points=20, use_normals=True)
    assert train.layout == "resampled" and len(train) == 4
    assert [train.classes[label] for label in train.labels] == ["chair", "bed", "chair", "airplane"]
    sample = train[1]
    np.testing.assert_allclose(sample["pos"], pos[1, :20], atol=1e-6)
    np.testing.assert_allclose(sample["normal"], normal[1, :20], atol=1e-6)
    test = ModelNet40(root, "test", num_points=50, sampling="random")
    assert test.sources[1].endswith("night_stand/night_stand_0102.txt") and test[1]["label"] == 23


def test_modelnet10_keeps_its_classes_renumbered(hdf5_root, txt_root):
    for root in (hdf5_root[0], txt_root[0]):
        data = ModelNet10(root, "train", num_points=8)
        assert data.classes == MODELNET10
        kept = [MODELNET40[label] for label in LABELS[: len(data.labels) + 2] if MODELNET40[label] in MODELNET10]
        assert [MODELNET10[label] for label in data.labels] == kept[: len(data)]
        assert all(0 <= s["label"] < 10 for s in (data[i] for i in range(len(data))))


def test_off_layout_is_cached_once_and_resampled_only_when_asked(tmp_path):
    rng = np.random.default_rng(0)
    root = tmp_path / "data"
    write_modelnet_off(root / "ModelNet40", "train", meshes=random_meshes(3, rng), labels=np.array([0, 8, 8]))
    data = ModelNet40(root, "train", num_points=100, mesh_points=128, use_normals=True, progress=False)
    assert data.layout == "off" and len(data) == 3 and list(data.labels) == [0, 8, 8]
    from pointabstract.data.datasets.folder_cache import cache_folder

    assert (cache_folder(root / "ModelNet40", "modelnet") / "ModelNet40_train_128pts_seed0.h5").is_file()
    assert not list(root.rglob("*.h5"))  # nothing written into the user's mesh tree
    first = data[0]["pos"]
    data.set_epoch(5)
    np.testing.assert_array_equal(data[0]["pos"], first)  # the cache does not change per epoch
    fresh = ModelNet40(root, "train", num_points=100, mesh_points=128, resample_meshes=True)
    fresh.set_epoch(1)
    again = fresh[0]["pos"]
    fresh.set_epoch(2)
    assert fresh[0]["pos"].shape == (100, 3) and not np.array_equal(fresh[0]["pos"], again)
    other = ModelNet40(root, "train", num_points=10, cache_dir=tmp_path / "cache", mesh_points=16)
    assert len(other) == 3 and (tmp_path / "cache" / "ModelNet40_train_16pts_seed0.h5").is_file()
    with pytest.raises(ValueError, match="has 16 points, fewer than num_points=32"):
        ModelNet40(root, "train", num_points=32, cache_dir=tmp_path / "cache", mesh_points=16)[0]


def test_off_layout_with_only_upper_case_extensions_is_found_and_read(tmp_path):
    rng = np.random.default_rng(0)
    paths = write_modelnet_off(tmp_path / "ModelNet40", "train", meshes=random_meshes(2, rng),
                               labels=np.array([0, 8]))
    for path in paths:
        path.rename(path.with_suffix(".OFF"))
    assert detect_layout(tmp_path) == ("off", tmp_path / "ModelNet40")
    data = ModelNet40(tmp_path, "train", num_points=32, mesh_points=32, progress=False)
    assert list(data.labels) == [0, 8] and data.sources[1].endswith("chair_0002.OFF")
    fresh = ModelNet40(tmp_path, "train", num_points=32, mesh_points=32, resample_meshes=True)
    assert len(fresh) == 2 and fresh[1]["pos"].shape == (32, 3)


def test_same_samples_with_any_number_of_workers(hdf5_root):
    data = ModelNet40(hdf5_root[0], "train", num_points=16, sampling="random")
    batches = []
    for workers in (0, 2):
        loader = torch.utils.data.DataLoader(data, batch_size=3, num_workers=workers)
        batches.append(torch.cat([b["pos"] for b in loader]))
    torch.testing.assert_close(batches[0], batches[1])


def test_nothing_recognisable_lists_the_layouts_and_what_is_there(tmp_path):
    (tmp_path / "stuff").mkdir()
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(ValueError, match=re.escape(f"found in {tmp_path}: notes.txt, stuff/")) as err:
        ModelNet40(tmp_path, "train")
    for expected in ("ply_data_{train,test}*.h5", "modelnet40_shape_names.txt", "<class>/{train,test}/*.off",
                     "modelnet40_normal_resampled"):
        assert expected in str(err.value)
    with pytest.raises(ValueError, match="it does not exist"):
        detect_layout(tmp_path / "missing")


@pytest.mark.parametrize("kwargs, message", [
    ({"split": "val"}, "split must be one of"),
    ({"sampling": "grid"}, "sampling must be one of"),
    ({"num_points": 0}, "num_points must be a positive int"),
    ({"layout": "zip"}, "layout must be one of"),
])
def test_bad_arguments(hdf5_root, kwargs, message):
    with pytest.raises(ValueError, match=message):
        ModelNet40(hdf5_root[0], **{"split": "train", **kwargs})


def test_corrupt_hdf5_files_are_named(tmp_path):
    folder = tmp_path / "modelnet40_ply_hdf5_2048"
    pos, _ = _clouds(3, 16)
    write_modelnet_hdf5(folder, "train", pos=pos, labels=np.array([1, 2, 3]))
    with h5py.File(folder / "ply_data_train0.h5", "a") as handle:
        del handle["data"]
    with pytest.raises(ValueError, match=r"ply_data_train0\.h5: missing dataset 'data'"):
        ModelNet40(tmp_path, "train")
    pos[1, 5, 2] = np.nan
    write_modelnet_hdf5(folder, "train", pos=pos, labels=np.array([1, 2, 3]))
    with pytest.raises(ValueError, match=r"ply_data_train0\.h5: non-finite point \(NaN or Inf\) at sample 1"):
        ModelNet40(tmp_path, "train")
    write_modelnet_hdf5(folder, "train", pos=pos[:1] * 0, labels=np.array([40]))
    with pytest.raises(ValueError, match=r"ply_data_train0\.h5: label 40 of sample 0 is outside \[0, 40\)"):
        ModelNet40(tmp_path, "train")
    with pytest.raises(ValueError, match=r"ply_data_train0\.h5: use_normals=True but no dataset 'normal'"):
        ModelNet40(tmp_path, "train", use_normals=True)
    with pytest.raises(ValueError, match=r"no ply_data_test\*\.h5 file"):
        ModelNet40(tmp_path, "test")
    (folder / "shape_names.txt").write_text("chair\nchair\n")
    with pytest.raises(ValueError, match=r"shape_names\.txt: 'chair' listed twice"):
        ModelNet40(tmp_path, "train")


def _relabel(path, labels):
    with h5py.File(path, "a") as handle:
        del handle["label"]
        handle["label"] = labels


def test_float_hdf5_labels_are_refused_unless_whole(tmp_path):
    folder = tmp_path / "modelnet40_ply_hdf5_2048"
    pos, _ = _clouds(3, 16)
    write_modelnet_hdf5(folder, "train", pos=pos, labels=np.array([1, 2, 3]), files=2)
    _relabel(folder / "ply_data_train0.h5", np.array([[8.0], [2.0]], np.float32))  # whole: accepted
    data = ModelNet40(tmp_path, "train", num_points=8)
    assert list(data.labels) == [8, 2, 3] and data.labels.dtype == np.int64 and data[0]["label"] == 8
    _relabel(folder / "ply_data_train1.h5", np.array([[7.5]]))
    with pytest.raises(ValueError, match=r"ply_data_train1\.h5: labels must be whole numbers, got 7\.5 at sample 0"):
        ModelNet40(tmp_path, "train")
    _relabel(folder / "ply_data_train0.h5", np.array([[2.0], [0.5]]))
    with pytest.raises(ValueError, match=r"ply_data_train0\.h5: labels must be whole numbers, got 0\.5 at sample 1"):
        ModelNet10(tmp_path, "train")


def test_corrupt_resampled_files_are_named(txt_root):
    root, _, _ = txt_root
    folder = root / "modelnet40_normal_resampled"
    bed = folder / "bed" / "bed_0002.txt"
    lines = bed.read_text().splitlines()
    bed.write_text("\n".join(lines[:30] + [lines[30][:12]]) + "\n")  # truncated mid-row
    data = ModelNet40(root, "train", num_points=40)
    with pytest.raises(ValueError, match=r"bed_0002\.txt: cannot parse x,y,z,nx,ny,nz rows"):
        data[1]
    bed.write_text("\n".join(lines[:30]) + "\n")  # truncated at a row boundary
    with pytest.raises(ValueError, match=r"bed_0002\.txt: has 30 points, fewer than num_points=40"):
        data[1]
    bed.write_text("\n".join(lines[:7] + ["nan,0,0,0,0,1"] + lines[8:]) + "\n")
    with pytest.raises(ValueError, match=r"bed_0002\.txt: non-finite value \(NaN or Inf\) at line 8"):
        data[1]
    bed.write_text("\n".join(",".join(line.split(",")[:3]) for line in lines) + "\n")
    with pytest.raises(ValueError, match=r"bed_0002\.txt: expected rows of 6 values"):
        data[1]
    listing = folder / "modelnet40_train.txt"
    listing.write_text(listing.read_text() + "sofa_table_0003\n")
    with pytest.raises(ValueError, match=r"modelnet40_train\.txt: entry 5 'sofa_table_0003': unknown class 'sofa_table'"):
        ModelNet40(root, "train")
    listing.write_text("chair_0009\n")
    with pytest.raises(ValueError, match=r"entry 1 'chair_0009': file .*chair_0009\.txt not found"):
        ModelNet40(root, "train")


def test_real_resampled_subset_loads_with_official_splits(realdata):
    train = ModelNet40(realdata, "train", num_points=2048, use_normals=True)
    test = ModelNet40(realdata, "test", num_points=2048, use_normals=True)
    assert train.layout == "resampled" and (len(train), len(test)) == (127, 29)
    assert train.classes == MODELNET40
    names = set()
    for data in (train, test):
        for i in range(len(data)):
            sample = data[i]
            assert np.isfinite(sample["pos"]).all() and np.isfinite(sample["normal"]).all()
            # the published normals are unit vectors, except a few rows of (1, 1, 1) in some files
            assert (np.abs(np.linalg.norm(sample["normal"], axis=1) - 1) < 0.01).mean() > 0.99
            name = MODELNET40[sample["label"]]
            assert re.fullmatch(rf"{name}_\d{{4}}\.txt", data.sources[i].rsplit("/", 1)[1])
            names.add(name)
    assert len(names) == 39 and "door" not in names


def test_real_meshes_through_the_cache(realdata, tmp_path):
    data = ModelNet40(realdata, "train", layout="off", num_points=512, mesh_points=512, cache_dir=tmp_path,
                      use_normals=True, progress=False)
    assert len(data) == 22 and {MODELNET40[label] for label in data.labels} == {
        "airplane", "bathtub", "bed", "chair", "flower_pot", "lamp", "stool", "toilet"}
    assert all(np.isfinite(data[i]["pos"]).all() for i in range(len(data)))
    assert len(ModelNet10(realdata, "test", layout="off", cache_dir=tmp_path, progress=False)) == 1
