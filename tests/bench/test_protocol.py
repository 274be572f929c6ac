"""The protocol recorded beside every bench curves run: what counts as other code, what must match."""

import json

import pytest
import torch

from pointabstract.bench import protocol as P


def _package(root):
    (root / "nn").mkdir(parents=True)
    (root / "configs").mkdir()
    (root / "bench").mkdir()
    (root / "nn" / "block.py").write_text("x = 1\n")
    (root / "configs" / "demo.yaml").write_text("model: a\n")
    (root / "bench" / "report.py").write_text("y = 1\n")
    (root / "_validate.py").write_text("z = 1\n")
    return root


def test_the_source_hash_covers_the_training_code_only(tmp_path):
    pkg = _package(tmp_path / "pkg")
    before = P.source_hash(pkg)
    assert len(before) == 16 and P.source_hash(pkg) == before
    (pkg / "bench" / "report.py").write_text("y = 2\n")  # reporting code: not what a run executes
    (pkg / "nn" / "notes.md").write_text("docs\n")
    (pkg / "nn" / "__pycache__").mkdir()
    (pkg / "nn" / "__pycache__" / "block.py").write_text("compiled\n")
    assert P.source_hash(pkg) == before
    for path, text in [("nn/block.py", "x = 2\n"), ("configs/demo.yaml", "model: b\n"), ("_validate.py", "z = 2\n")]:
        old = (pkg / path).read_text()
        (pkg / path).write_text(text)
        assert P.source_hash(pkg) != before, path
        (pkg / path).write_text(old)
    (pkg / "nn" / "block.py").rename(pkg / "nn" / "moved.py")  # a rename is other code too
    assert P.source_hash(pkg) != before


def test_current_protocol_and_what_must_match(tmp_path):
    now = P.current_protocol(1, device="cpu")
    assert now["threads"] == 1 and now["torch"] == torch.__version__ and now["device"] == "cpu"
    assert now["source"] == P.source_hash() and now["commit"]
    assert P.differences(dict(now), now) == []
    assert P.differences({**now, "commit": "other"}, now) == []  # a docs-only commit keeps the runs
    assert P.differences({**now, "threads": 2}, now) == ["threads 2, now 1"]
    assert P.differences({**now, "source": "0" * 16, "device": "cuda"}, now) == [
        f"source {'0' * 16}, now {now['source']}", "device cuda, now cpu"]
    assert P.differences(None, now) == ["no protocol recorded"]
    assert P.describe(now).startswith(f"commit {now['commit']}, training code {now['source']}, 1 thread per run")


def test_written_and_read_back_atomically(tmp_path):
    run = tmp_path / "run"
    assert P.read_protocol(run) is None
    path = P.write_protocol(run, {"threads": 1})
    assert json.loads(path.read_text()) == {"threads": 1} and P.read_protocol(run) == {"threads": 1}
    assert sorted(p.name for p in run.iterdir()) == ["protocol.json"]  # no temporary left
    path.write_text("{broken")
    assert P.read_protocol(run) is None


@pytest.mark.parametrize("bad", ["[1, 2]", "null"])
def test_a_protocol_that_is_not_a_mapping_counts_as_none(tmp_path, bad):
    (tmp_path / "protocol.json").write_text(bad)
    assert P.read_protocol(tmp_path) is None
