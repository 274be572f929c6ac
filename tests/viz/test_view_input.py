"""pointabstract view CKPT --input FILE: a file of one's own shown with the panels of a dataset
sample, prepared as pointabstract predict prepares it (window, --png, --html)."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

import pointabstract
from pointabstract.cli import main
from pointabstract.data import write_off
from pointabstract.viz.tasks import load_input_session
from tests.fixtures import tiny_runs


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return tiny_runs(tmp_path_factory)


@pytest.fixture
def mesh(tmp_path):
    path = tmp_path / "02954340" / "tent.off"  # a synset folder: the part segmenter's category is Cap
    path.parent.mkdir()
    write_off(path, [[0, 0, 0], [2, 0, 0], [0, 3, 0], [0, 0, 1]], [[0, 1, 2], [0, 1, 3], [0, 2, 3], [1, 2, 3]])
    return path


def test_the_session_shows_what_the_predictor_predicts(runs, mesh):
    session = load_input_session(runs["classification"], mesh)
    shown = session.sample(0)
    expected = pointabstract.load(runs["classification"]).predict(mesh)
    assert len(session) == 1 and shown.pred_name == expected.label and shown.label is None
    assert np.allclose(shown.probs.numpy(), expected.probs, atol=1e-5)
    seg = load_input_session(runs["part_segmentation"], mesh).sample(0)
    assert seg.category_name == "Cap" and seg.part is None
    found = pointabstract.load(runs["part_segmentation"]).predict(mesh)
    assert np.array_equal(seg.pred, found.model_labels)


def test_png_and_html_of_a_file(o3d, runs, mesh, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("DISPLAY", raising=False)
    code = main(["view", str(runs["reconstruction"]), "--input", str(mesh), "--png", str(tmp_path / "r.png"),
                 "--width", "320", "--height", "200"])
    out = capsys.readouterr().out
    assert code == 0 and Image.open(tmp_path / "r.png").size == (320, 200) and "sample #0: CD" in out
    code = main(["view", str(runs["part_segmentation"]), "--input", str(mesh), "--html", str(tmp_path / "s.html")])
    assert code == 0 and (tmp_path / "s.html").stat().st_size > 1000


@pytest.mark.parametrize("extra, message", [
    (["--index", "2"], "--input shows one file in the window, --png or --html; drop --index"),
    (["--figure", "f.png"], "--input shows one file in the window, --png or --html; drop --figure"),
    (["--category", "Cap"], "--category applies to part_segmentation checkpoints; "),
])
def test_input_refuses_options_it_cannot_show(runs, mesh, capsys, extra, message):
    assert main(["view", str(runs["classification"]), "--input", str(mesh), "--png", "x.png", *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and len(err.splitlines()) == 1
