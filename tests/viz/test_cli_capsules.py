"""`pointabstract view` and `pointabstract eval` on capsule-autoencoder checkpoints."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from pointabstract import cli as main_cli
from pointabstract.engine import restore
from pointabstract.viz import cli, load_session
from pointabstract.viz.core.colors import HIGHLIGHT
from pointabstract.viz.core.render import png_backend
from tests.fixtures import check_png
from tests.viz._capsule_runs import tiny_ae_run


@pytest.fixture(scope="module")
def ae(tmp_path_factory):
    return tiny_ae_run(tmp_path_factory, "ca")


def _run(capsys, *argv, main=cli.main):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def _one_error_line(err: str, match: str) -> None:
    assert err.startswith("error: ") and err.strip().count("\n") == 0, err
    assert match in err, err


def test_png_colours_and_figure_of_both_checkpoints(o3d, ae, tmp_path_factory, tmp_path, capsys):
    code, out, err = _run(capsys, ae[0], "--index", 2, "--color", "parts", "--png", tmp_path / "p.png",
                          "--width", 240, "--height", 120)
    assert code == 0, err
    assert Image.open(tmp_path / "p.png").size == (240, 120)
    assert "sample #2 " in out and "capsules by majority part: " in out and "colouring parts" in out
    dr = tiny_ae_run(tmp_path_factory, "dr")[0]
    code, out, err = _run(capsys, dr, "--compare", ae[0], "--figure", tmp_path / "fig5.png", "--index", 14)
    assert code == 0, err
    assert (tmp_path / "fig5.png").is_file() and "wrote" in out  # shapes 14 and 15: the split ends there


def test_png_of_an_autoencoder_titles_input_and_reconstruction(o3d, ae, tmp_path, capsys, compose_calls):
    code, out, err = _run(capsys, ae[0], "--index", 1, "--capsule", 3, "--png", tmp_path / "c.png",
                          "--width", 600, "--height", 320)
    assert code == 0, err
    check_png(tmp_path / "c.png", (600, 320), out)
    ((images, titles, labels), kwargs), = compose_calls
    assert titles[0][0].startswith("input (64 points)\nred: the ") and "capsule 3's" in titles[0][0]
    assert titles[0][1].startswith("reconstruction (64 points, CD ") and "red: what capsule 3 decodes" in titles[0][1]
    assert labels[0].startswith("#1 ") and labels[0] in out  # the sample's title, as the status line says
    assert kwargs["title"] == "capsule_ae_demo_ca (last.pt)"


@pytest.mark.parametrize("extra,match", [
    (["--compare", "x.pt"], "--compare needs --figure OUT.png"),
    (["--block", "1"], "--block applies to classification checkpoints; "),
    (["--k", "4"], "--k applies to classification checkpoints; "),
    (["--capsule", "4"], "capsule must be an int in [0, 3] (this model has 4 latent capsules), got 4"),
    (["--color", "neighbours"], "coloring must be one of ['capsule', 'capsules', 'parts'] for an autoencoder"),
    (["--layout", "xyz"], "layout must be one of ['side_by_side', 'input', 'reconstruction']"),
    (["--keys", "N P"], "keys ['P'] are not in the key map of a reconstruction run"),
    (["--keys", "N Z"], "keys ['Z'] are not in the key map"),
    (["--index", "16"], "index must be an int in [0, 15] (the test split"),
])
def test_bad_arguments_on_an_autoencoder_exit_2_with_one_line(ae, tmp_path, capsys, extra, match):
    code, _, err = _run(capsys, ae[0], "--png", tmp_path / "v.png", *extra)
    assert code == 2
    _one_error_line(err, match)


def test_options_of_the_other_task_are_refused(ae, tiny_run, tmp_path, capsys):
    code, _, err = _run(capsys, tiny_run[0], "--capsule", 1, "--png", tmp_path / "v.png")
    assert code == 2
    _one_error_line(err, "--capsule applies to reconstruction checkpoints; ")
    code, _, err = _run(capsys, ae[0], "--capsule", 1, "--figure", tmp_path / "f.png")
    assert code == 2
    _one_error_line(err, "--capsule applies to the window and --png; --figure shows every capsule")
    code, _, err = _run(capsys, tiny_run[0], "--compare", ae[0], "--figure", tmp_path / "f.png")
    assert code == 2
    _one_error_line(err, "--compare applies to reconstruction checkpoints; ")


def test_eval_report_of_an_autoencoder_gains_the_capsule_figure(o3d, ae, tiny_run, tmp_path, capsys):
    code, out, err = _run(capsys, "eval", ae[0], "--out", tmp_path / "report", main=main_cli.main)
    assert code == 0, err
    report = (tmp_path / "report" / "report.md").read_text()
    assert "## Latent capsules" in report and "![capsules](capsules.png)" in report
    assert (tmp_path / "report" / "capsules.png").is_file()
    assert "capsules" in restore(ae[0]).task.figures and "capsules" not in restore(tiny_run[0]).task.figures
    code, _, err = _run(capsys, "eval", ae[0], "--out", tmp_path / "r2", "--neighbourhoods", main=main_cli.main)
    assert code == 2
    _one_error_line(err, "the neighbourhoods figure does not apply to ")
    assert "a 'reconstruction' checkpoint (figures of the 'reconstruction' task's report: capsules, viewer)" in err
    assert not (tmp_path / "r2").exists()


def test_view_png_of_an_autoencoder_in_a_fresh_process_without_display(o3d, ae, tmp_path):
    """The headless path end to end: input | reconstruction, one capsule red on both panels (drawn
    on top: this 1-epoch model decodes the same few points from every capsule)."""
    sample = load_session(ae[0]).sample(0)
    capsule = int(np.bincount(sample.explained_by).argmax())  # a capsule that explains input points
    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env["PYTHONPATH"] = os.pathsep.join([str(root), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    out = tmp_path / "view.png"
    proc = subprocess.run([sys.executable, "-m", "pointabstract.cli", "view", str(ae[0]), "--capsule",
                           str(capsule), "--png", str(out), "--width", "400", "--height", "200"],
                          cwd=root, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"capsule {capsule}: 16 points" in proc.stdout
    img = np.asarray(Image.open(out))[..., :3].astype(int)
    assert img.shape == (200, 400, 3)
    red = (np.abs(img - np.round(np.array(HIGHLIGHT) * 255)) <= 1).all(-1)
    assert red[:, :200].sum() > 0 and red[:, 200:].sum() > 0  # on the input and on the reconstruction
    backend = png_backend(out)
    assert backend in ("offscreen", "legacy", "software") and f"drawn by the {backend} renderer" in proc.stdout


def test_eval_scores_the_retrieval_pool_once_for_the_figure_and_the_page(o3d, ae, tmp_path, capsys,
                                                                          monkeypatch):
    """The engine's evaluation scores the pool; the capsule figure's caption and viewer.html share
    one session, so the pool is scored twice in all, not three times."""
    from pointabstract.engine.tasks.reconstruction_pool import RetrievalPool

    calls = []
    score = RetrievalPool.score
    monkeypatch.setattr(RetrievalPool, "score", lambda self, *a, **k: calls.append(1) or score(self, *a, **k))
    code, _, err = _run(capsys, "eval", ae[0], "--out", tmp_path / "report", main=main_cli.main)
    assert code == 0, err
    assert (tmp_path / "report" / "capsules.png").is_file() and (tmp_path / "report" / "viewer.html").is_file()
    page = (tmp_path / "report" / "viewer.html").read_text()
    caption = (tmp_path / "report" / "report.md").read_text()
    assert "retrieval" in page and "retrieval" in caption
    assert len(calls) == 2
