"""Benchmark records: written atomically, and never when nothing was measured."""

import os
from pathlib import Path

import pytest

from pointabstract.bench import records
from pointabstract.bench.records import write_records


def _previous(tmp_path):
    md, js = tmp_path / "b.md", tmp_path / "b.json"
    md.write_bytes(b"# b\n\n| old | table |\n")
    js.write_bytes(b'{"rows": [1, 2, 3]}')
    return md, js


def test_writes_every_file_and_creates_the_folder(tmp_path):
    md, js = tmp_path / "new" / "b.md", tmp_path / "new" / "b.json"
    assert write_records({md: "table\n", js: "{}"}, measured=2, what="bench b") == [md, js]
    assert md.read_text() == "table\n" and js.read_text() == "{}"
    assert sorted(os.listdir(tmp_path / "new")) == ["b.json", "b.md"]  # no temporary left


def test_nothing_measured_writes_nothing(tmp_path):
    md, js = _previous(tmp_path)
    before = md.read_bytes(), js.read_bytes()
    with pytest.raises(ValueError, match=r"^bench b measured nothing, so nothing is written \(.*b.md and "
                                         r".*b.json are left as they were\)$"):
        write_records({md: "", js: "{}"}, measured=0, what="bench b")
    assert (md.read_bytes(), js.read_bytes()) == before and sorted(os.listdir(tmp_path)) == ["b.json", "b.md"]


def test_an_interrupt_while_writing_leaves_the_previous_records_whole(tmp_path, monkeypatch):
    md, js = _previous(tmp_path)
    before = md.read_bytes(), js.read_bytes()

    def interrupted(src, dst):  # Ctrl-C before the first rename
        raise KeyboardInterrupt

    monkeypatch.setattr(records.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_records({md: "new table\n", js: '{"rows": []}'}, measured=1, what="bench b")
    assert (md.read_bytes(), js.read_bytes()) == before
    assert sorted(os.listdir(tmp_path)) == ["b.json", "b.md"]  # the temporaries are removed


def test_a_folder_in_the_way_is_one_line(tmp_path):
    (tmp_path / "b.md").mkdir()
    with pytest.raises(IsADirectoryError, match=r"^.*b.md is a folder, not a record file$"):
        write_records({tmp_path / "b.md": "x"}, measured=1, what="bench b")


def test_a_read_only_record_is_kept(tmp_path, monkeypatch):
    md, js = _previous(tmp_path)
    # chmod 0o444 does not stop root: stand in for the permission check instead
    monkeypatch.setattr(records.os, "access", lambda path, mode: Path(path) != md)
    with pytest.raises(PermissionError, match=r"^.*b.md is read-only, so nothing is written \(.*b.md and "
                                              r".*b.json are left as they were\)$"):
        write_records({md: "new", js: "{}"}, measured=1, what="bench b")
    assert md.read_bytes() == b"# b\n\n| old | table |\n" and js.read_bytes() == b'{"rows": [1, 2, 3]}'
