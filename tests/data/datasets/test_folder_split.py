"""A folder's split, once made, is reused exactly: files added later are left out (and counted),
never mixed into train or test; a recorded file that is gone is an error naming it."""

import json

import pytest

from pointabstract.data.datasets.folder import ShapeFolder
from pointabstract.data.datasets.folder_split import read_split_record
from tests.fixtures import PYRAMID, TETRA, write_mesh, write_shapes


@pytest.fixture(autouse=True)
def cache_in_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("POINTABSTRACT_CACHE", str(tmp_path / "cache"))


def _recorded(root, path, **kwargs):
    """The split a run on ``root`` records, written to ``path``; (train, test) datasets."""
    train = ShapeFolder(root, "train", num_points=16, progress=False, **kwargs)
    path.write_text(json.dumps(train.split_record))
    return train, ShapeFolder(root, "test", num_points=16, progress=False, **kwargs)


def test_files_added_later_never_enter_the_recorded_split(tmp_path):
    root = write_shapes(tmp_path / "mine", per_class=4)
    train, test = _recorded(root, tmp_path / "split.json", seed=1)
    added = [write_mesh(root / "tetra" / f"new{i}.obj", TETRA, 2.0 + i) for i in range(6)]
    added.append(write_mesh(root / "cone" / "c0.ply", PYRAMID))  # a new class folder, sorted first
    fresh = ShapeFolder(root, "test", num_points=16, seed=1, progress=False)
    assert fresh.sources != test.sources  # a split made again takes some of the new files (issue 38)
    for split, before in (("train", train), ("test", test)):
        again = ShapeFolder(root, split, num_points=16, seed=1, progress=False, split_file=tmp_path / "split.json")
        assert again.sources == before.sources and again.labels.tolist() == before.labels.tolist()
        assert again.classes == ("pyramid", "slab", "tetra") and sorted(again.new_files) == sorted(added)


def test_the_layout_s_own_split_is_kept_too(tmp_path):
    root = tmp_path / "mine"
    for c in ("cup", "mug"):
        write_mesh(root / "train" / c / "x.obj", TETRA)
        write_mesh(root / "test" / c / "z.ply", PYRAMID)
    _, test = _recorded(root, tmp_path / "split.json")
    write_mesh(root / "test" / "mug" / "later.obj", TETRA)
    again = ShapeFolder(root, "test", num_points=16, progress=False, split_file=tmp_path / "split.json")
    assert again.sources == test.sources and again.new_files == [root / "test" / "mug" / "later.obj"]


def test_a_recorded_file_that_is_gone_is_named(tmp_path):
    root = write_shapes(tmp_path / "mine", per_class=3)
    _, test = _recorded(root, tmp_path / "split.json")
    gone = test.sources[0]
    (root / gone).unlink()
    name = str((root / gone).relative_to(root))
    with pytest.raises(ValueError, match=rf"split.json: the test file '{name}' of the run's split is no longer "
                                         r"under .*mine: the run's split cannot be reused exactly; put the file back"):
        ShapeFolder(root, "test", num_points=16, progress=False, split_file=tmp_path / "split.json")


def test_a_file_that_is_not_a_split_record_is_named(tmp_path):
    (tmp_path / "split.json").write_text('{"train": []}')
    with pytest.raises(ValueError, match=r"split.json: not a split recorded by a run \(it needs 'classes', "):
        read_split_record(tmp_path / "split.json")
    (tmp_path / "split.json").write_text("{")
    with pytest.raises(ValueError, match=r"split.json: the run's split cannot be read \(Expecting"):
        read_split_record(tmp_path / "split.json")
