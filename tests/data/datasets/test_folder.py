"""data.dataset=folder: a folder of the user's own shapes in class folders (OBJ / PLY / OFF mixed),
its layouts, the seeded stratified split, the content-keyed cache outside the data, and errors."""

import json
import os
from pathlib import Path

import numpy as np
import pytest

from pointabstract.data import LayoutNotFoundError, ModelNet40
from pointabstract.data.datasets.folder import (
    ShapeFolder,
    describe_folder,
    folder_hint,
    scan_folder,
    split_of,
)
from pointabstract.data.datasets.folder_cache import cache_folder, content_digest
from tests.fixtures import PYRAMID, SLAB, TETRA, snapshot, write_mesh, write_shapes


@pytest.fixture(autouse=True)
def cache_in_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("POINTABSTRACT_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_seeded_split_is_stratified_recorded_and_nothing_is_written_under_root(tmp_path, cache_in_tmp):
    root = write_shapes(tmp_path / "mine")
    before = snapshot(root)
    train = ShapeFolder(root, "train", num_points=64, seed=3)
    test = ShapeFolder(root, "test", num_points=64, seed=3)
    assert train.classes == test.classes == ("pyramid", "slab", "tetra")  # sorted folder names
    # 5 files per class, test_fraction 0.2: one test file per class
    assert np.bincount(test.labels).tolist() == [1, 1, 1] and np.bincount(train.labels).tolist() == [4, 4, 4]
    assert set(train.sources).isdisjoint(test.sources) and len(train.sources) + len(test.sources) == 15
    record = train.split_record  # what a run writes to its split.json
    assert train.split_file is None and not (cache_folder(root) / "split.json").exists()
    assert record == json.loads(json.dumps(test.split_record)) and record["classes"] == ["pyramid", "slab", "tetra"]
    assert record["seed"] == 3 and record["test_fraction"] == 0.2 and record["layout"] == "seeded split"
    assert sorted(record["test"]) == sorted(Path(s).relative_to(root).as_posix() for s in test.sources)
    assert snapshot(root) == before  # nothing written into the user's folder
    sample = train[0]
    assert sample["pos"].shape == (64, 3) and sample["pos"].dtype == np.float32 and sample["label"] == train.labels[0]


def test_split_is_deterministic_per_seed_and_follows_the_hand_rule(tmp_path):
    root = write_shapes(tmp_path / "mine")
    layout = scan_folder(root)
    first = split_of(layout, root, seed=0, test_fraction=0.2)
    assert first == split_of(scan_folder(root), root, seed=0, test_fraction=0.2)
    others = [split_of(layout, root, seed=s, test_fraction=0.2)["test"] for s in range(1, 6)]
    assert any(o != first["test"] for o in others)
    # the rule: per class, order by sha1("<seed>:<relative path>"), the first round-half-up(0.5 * 5) = 3 are test
    import hashlib

    half = split_of(layout, root, seed=7, test_fraction=0.5)
    tetra = sorted((f"tetra/t{i}.obj" for i in range(5)), key=lambda n: hashlib.sha1(f"7:{n}".encode()).hexdigest())
    assert sorted(f.relative_to(root).as_posix() for f, lab in half["test"] if lab == 2) == sorted(tetra[:3])


def test_tiny_classes_keep_a_training_file(tmp_path):
    root = tmp_path / "mine"
    write_mesh(root / "one" / "a.obj", TETRA)
    for i in range(2):
        write_mesh(root / "two" / f"b{i}.obj", TETRA)
    splits = split_of(scan_folder(root), root, seed=0, test_fraction=0.9)
    assert [lab for _, lab in splits["train"]] == [0, 1] and [lab for _, lab in splits["test"]] == [1]


def test_cache_follows_file_content(tmp_path, notes):
    root = write_shapes(tmp_path / "mine", per_class=2)
    first = ShapeFolder(root, "train", num_points=32, test_fraction=0.5)
    assert "sampling 3 new or changed train file(s) of 3" in notes()
    again = ShapeFolder(root, "train", num_points=32, test_fraction=0.5)
    assert notes() == "" and again._entries == first._entries
    changed = Path(first.sources[0])
    write_mesh(changed, {".obj": TETRA, ".ply": PYRAMID, ".off": SLAB}[changed.suffix], 5.0)
    edited = ShapeFolder(root, "train", num_points=32, test_fraction=0.5)
    assert "sampling 1 new or changed train file(s) of 3" in notes()
    assert edited._entries[0] != first._entries[0] and edited._entries[1:] == first._entries[1:]
    assert np.abs(edited.load(0, np.random.default_rng(0))["pos"]).max() > 2  # the 5x larger shape
    assert edited._entries[0].name.startswith(content_digest(changed))


def test_added_file_is_noticed(tmp_path):
    root = write_shapes(tmp_path / "mine", per_class=3)
    before = len(ShapeFolder(root, "train", num_points=32)) + len(ShapeFolder(root, "test", num_points=32))
    write_mesh(root / "tetra" / "new.ply", TETRA, 2.0)
    after = len(ShapeFolder(root, "train", num_points=32)) + len(ShapeFolder(root, "test", num_points=32))
    assert (before, after) == (9, 10)


def test_class_split_folders_split_class_folders_and_lists(tmp_path):
    a = tmp_path / "a"
    for c in ("cup", "mug"):
        write_mesh(a / c / "train" / "x.obj", TETRA)
        write_mesh(a / c / "train" / "y.off", SLAB)
        write_mesh(a / c / "test" / "z.ply", PYRAMID)
    layout = scan_folder(a)
    assert layout.kind == "class/split folders" and layout.classes == ("cup", "mug")
    assert [f.name for f, _ in layout.files["test"]] == ["z.ply", "z.ply"]
    b = tmp_path / "b"
    for s, c in (("train", "cup"), ("train", "mug"), ("test", "mug")):
        write_mesh(b / s / c / "x.obj", TETRA)
    layout = scan_folder(b)
    assert layout.kind == "split/class folders" and layout.classes == ("cup", "mug")
    assert [lab for _, lab in layout.files["test"]] == [1]
    c = write_shapes(tmp_path / "c", per_class=2)
    (c / "train.txt").write_text("tetra/t0.obj\npyramid/p0.ply\nslab/nested/s0.off\n")
    (c / "test.txt").write_text("./tetra/t1.obj\n")
    layout = scan_folder(c)
    assert layout.kind == "split lists" and len(layout.files["train"]) == 3 and len(layout.files["test"]) == 1
    assert layout.notes == ["2 shape file(s) listed in neither train.txt nor test.txt: left out"]
    ds = ShapeFolder(c, "test", num_points=16)
    assert ds.sources == [str(c / "tetra" / "t1.obj")] and ds.labels.tolist() == [2]
    record = ds.split_record
    assert record["rule"] == "as given by the split lists (seed and test_fraction unused)"
    assert record["test"] == ["tetra/t1.obj"]


def test_clouds_are_reduced_by_fps_or_repeated(tmp_path):
    root = tmp_path / "mine"
    rng = np.random.default_rng(0)
    (root / "big").mkdir(parents=True)
    (root / "small").mkdir()
    for i in range(2):
        np.save(root / "big" / f"b{i}.npy", rng.normal(size=(3000, 3)))
        np.savetxt(root / "small" / f"s{i}.xyz", rng.normal(size=(10, 3)))
    ds = ShapeFolder(root, "train", num_points=40, points_per_shape=100, test_fraction=0.5)
    with np.load(ds._entries[0]) as big:
        assert big["pos"].shape == (100, 3)  # farthest point sample of the 3000
    sample = ds[1]
    assert sample["pos"].shape == (40, 3) and len(np.unique(sample["pos"], axis=0)) == 10  # 10 points repeated
    with pytest.raises(ValueError, match=r"b\d\.npy: data.use_normals=true but this point cloud has no normals"):
        ShapeFolder(root, "train", num_points=40, use_normals=True, test_fraction=0.5)
    meshes = write_shapes(tmp_path / "meshes", per_class=2)
    sample = ShapeFolder(meshes, "train", num_points=40, use_normals=True, test_fraction=0.5)[0]
    np.testing.assert_allclose(np.linalg.norm(sample["normal"], axis=1), 1, rtol=1e-5)


def test_folder_errors(tmp_path, monkeypatch):
    root = write_shapes(tmp_path / "mine", per_class=2)
    (root / "empty").mkdir()
    (root / "empty" / "readme.md").write_text("")
    with pytest.raises(ValueError, match=r"empty: class folder without any shape file \(\.ply .*\); it holds: readme\.md"):
        scan_folder(root)
    (root / "empty" / "readme.md").unlink()
    (root / "empty").rmdir()
    write_mesh(root / "tetra" / "train" / "x.obj", TETRA)
    with pytest.raises(ValueError, match=r"class folder '(pyramid|slab)' has no train/ or test/ folder while others have"):
        scan_folder(root)
    with pytest.raises(LayoutNotFoundError, match=r"nothing: no such folder"):
        scan_folder(tmp_path / "nothing")
    (tmp_path / "flat").mkdir()
    (tmp_path / "flat" / "a.obj").write_text("v 0 0 0\n")
    with pytest.raises(LayoutNotFoundError, match=r"flat: no class folders: data.dataset=folder reads ROOT/<class>/<shape files> \(found in .*: a\.obj\)"):
        scan_folder(tmp_path / "flat")
    monkeypatch.setenv("POINTABSTRACT_CACHE", str(root / "cache"))
    with pytest.raises(ValueError, match=r"lies inside the data folder .*mine; set POINTABSTRACT_CACHE to a folder outside it"):
        cache_folder(root)


def test_list_errors(tmp_path):
    root = write_shapes(tmp_path / "mine", per_class=2)
    (root / "train.txt").write_text("tetra/t0.obj\n")
    with pytest.raises(ValueError, match=r"test\.txt: file not found"):
        scan_folder(root)
    (root / "test.txt").write_text("tetra/t9.obj\n")
    with pytest.raises(ValueError, match=r"test\.txt: entry 1 'tetra/t9\.obj': no such shape file under"):
        scan_folder(root)
    (root / "test.txt").write_text("tetra/t0.obj\n")
    with pytest.raises(ValueError, match=r"test\.txt: entry 1 'tetra/t0\.obj' is also listed in train\.txt"):
        scan_folder(root)


def test_layout_errors_suggest_the_folder_dataset(tmp_path):
    root = write_shapes(tmp_path / "mine", per_class=1)
    assert "holds 3 class folder(s) of shape files (pyramid, slab, tetra)" in folder_hint(root)
    assert folder_hint(tmp_path / "nothing") == "" and folder_hint(root / "tetra") == ""
    with pytest.raises(LayoutNotFoundError, match=r"no ModelNet layout found(.|\n)*use data.dataset=folder"):
        ModelNet40(root)
    # a ModelNet-style mesh tree with a class ModelNet40 does not have
    write_mesh(tmp_path / "mn" / "ModelNet40" / "widget" / "train" / "w.off", TETRA)
    with pytest.raises(ValueError, match=r"unknown class folder 'widget' .*use data.dataset=folder data.root=.*ModelNet40"):
        ModelNet40(tmp_path / "mn", progress=False, cache_dir=tmp_path / "c")


def test_describe_folder(tmp_path):
    root = write_shapes(tmp_path / "mine")
    info = describe_folder(root)
    assert info["layout"] == "seeded split" and info["counts"]["test"] == {"pyramid": 1, "slab": 1, "tetra": 1}
    assert info["types"] == {".obj": 5, ".off": 5, ".ply": 5} and len(info["files"]) == 15


def test_default_cache_is_under_the_user_cache(tmp_path, monkeypatch):
    from pointabstract.data.datasets.folder_cache import cache_root

    monkeypatch.delenv("POINTABSTRACT_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root() == tmp_path / "xdg" / "pointabstract"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache_root() == Path(os.path.expanduser("~")) / ".cache" / "pointabstract"
