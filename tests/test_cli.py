"""The `pointabstract` command end to end on a tiny synthetic set."""

import json

import pytest

from pointabstract.cli import main
from pointabstract.data import generate_synthetic
from tests.fixtures import TINY_MODEL


@pytest.fixture(scope="module")
def tiny_synthetic(tmp_path_factory):
    root = tmp_path_factory.mktemp("synth")
    generate_synthetic(root, train_per_class=3, test_per_class=2, num_points=256, progress=False)
    return root


def test_train_then_eval(tiny_synthetic, tmp_path, capsys):
    run = tmp_path / "run"
    code = main(["train", "demo", f"data.root={tiny_synthetic}", "data.num_points=64", "data.workers=0",
                 "optim.epochs=1", f"log.out_dir={run}", "log.progress=false", *TINY_MODEL])
    assert code == 0 and (run / "last.pt").is_file()
    assert "test overall accuracy" in capsys.readouterr().out
    code = main(["eval", str(run / "last.pt"), "--out", str(tmp_path / "report")])
    assert code == 0
    metrics = json.loads((tmp_path / "report" / "metrics.json").read_text())
    assert metrics["samples"] == 32 and len(metrics["class_names"]) == 16
    assert "![confusion matrix](confusion.png)" in (tmp_path / "report" / "report.md").read_text()


def test_helpful_errors(tmp_path, capsys):
    assert main(["train", "demo", f"data.root={tmp_path / 'nothing'}"]) == 2
    err = capsys.readouterr().err
    assert "no ModelNet layout found" in err and "pointabstract data synth --out" in err
    assert main(["train", "demo", "optim.lr_rate=3"]) == 2
    assert "unknown config key(s) ['optim.lr_rate']" in capsys.readouterr().err
    (tmp_path / "bad.pt").write_bytes(b"not a checkpoint")
    assert main(["eval", str(tmp_path / "bad.pt")]) == 2
    assert "is not a readable checkpoint" in capsys.readouterr().err
