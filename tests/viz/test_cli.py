import numpy as np
import pytest
import torch
from PIL import Image

from pointabstract.viz import cli
from tests.fixtures import check_png


def _run(capsys, *argv):
    code = cli.main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def _one_error_line(err: str, match: str) -> None:
    assert err.startswith("error: ") and err.strip().count("\n") == 0, err
    assert match in err, err


def test_png_renders_the_scene_without_a_display(o3d, tiny_run, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("DISPLAY", raising=False)
    code, out, err = _run(capsys, tiny_run[0], "--index", 2, "--k", 3, "--color", "distance",
                          "--png", tmp_path / "v.png", "--width", 320, "--height", 200)
    assert code == 0, err
    assert Image.open(tmp_path / "v.png").size == (320, 200)
    assert "sample #2: predicted" in out and "block 3 (6 points) | K = 3" in out and "wrote" in out


def test_png_panels_are_titled_within_the_requested_size(o3d, tiny_run, tmp_path, capsys, monkeypatch,
                                                          compose_calls):
    monkeypatch.delenv("DISPLAY", raising=False)
    calls = compose_calls
    code, out, err = _run(capsys, tiny_run[0], "--index", 2, "--block", 1, "--k", 5, "--png", tmp_path / "v.png",
                          "--width", 640, "--height", 360)
    assert code == 0, err
    check_png(tmp_path / "v.png", (640, 360), out)
    ((images, titles, labels), kwargs), = calls
    assert titles[0][0].startswith("feature-space neighbours (K = 5, block 1, 24 points)")
    assert titles[0][1].startswith("3D neighbours (K = 5, block 1, 24 points)") and len(images[0]) == 2
    assert labels == ["#2: predicted " + out.split("#2: predicted ")[1].split(" | ")[0]]  # the sample's title
    assert kwargs["title"].endswith(" (last.pt)") and kwargs["title"].startswith("centroid_transformer")
    calls.clear()
    code, _, err = _run(capsys, tiny_run[0], "--color", "distance", "--layout", "xyz", "--png", tmp_path / "d.png")
    assert code == 0, err
    assert Image.open(tmp_path / "d.png").size == (1280, 720)
    ((images, titles, _), _), = calls
    assert len(images[0]) == 2 and titles[0][1] == ""  # the 3D panel, then the distance colour bar
    assert "colour: 3D distance to the query" in titles[0][0]


@pytest.mark.parametrize("extra,match", [
    (["--index", "12"], "index must be an int in [0, 11] (the test split"),
    (["--index", "-1"], "index must be an int in [0, 11] (the test split"),
    (["--block", "4"], "block must be an int in [-4, 3] for this model, got 4"),
    (["--split", "val"], "split must be one of"),
    (["--k", "0"], "k must be a positive int or None, got 0"),
    (["--query", "6"], "query must be an int in [0, 5], got 6"),
    (["--color", "part"], "coloring 'part' needs per-point part labels, which this dataset does not have"),
    (["--keys", "N Z"], "keys ['Z'] are not in the key map"),
])
def test_bad_arguments_exit_2_with_one_line(tiny_run, tmp_path, capsys, extra, match):
    png = [] if extra[0] == "--keys" else ["--png", tmp_path / "v.png"]  # keys: checked before the display
    code, _, err = _run(capsys, tiny_run[0], *png, *extra)
    assert code == 2
    _one_error_line(err, match)


def test_figure_option_writes_the_report_figure(o3d, tiny_run, tmp_path, capsys):
    code, out, err = _run(capsys, tiny_run[0], "--figure", tmp_path / "n.png", "--index", 10, "--block", 1)
    assert code == 0, err
    assert (tmp_path / "n.png").is_file() and "wrote" in out  # samples 10 and 11: the split ends there
    code, _, err = _run(capsys, tiny_run[0], "--figure", tmp_path / "n.png", "--k", 7)
    assert code == 2
    _one_error_line(err, "k must be an int in [1, 6]")


def test_bad_checkpoints_exit_2(tiny_run, tmp_path, capsys):
    code, _, err = _run(capsys, tmp_path / "missing.pt", "--png", tmp_path / "v.png")
    assert code == 2
    _one_error_line(err, "missing.pt does not exist")
    (tmp_path / "junk.pt").write_bytes(b"\x00garbage")
    code, _, err = _run(capsys, tmp_path / "junk.pt", "--png", tmp_path / "v.png")
    assert code == 2
    _one_error_line(err, "junk.pt is not a readable checkpoint")
    ckpt = torch.load(tiny_run[0], weights_only=False)  # weights of another version of the model
    key = sorted(ckpt["model"])[0]
    ckpt["model"]["old.weight"] = ckpt["model"].pop(key)
    torch.save(ckpt, tmp_path / "old.pt")
    code, _, err = _run(capsys, tmp_path / "old.pt", "--png", tmp_path / "v.png")
    assert code == 2
    _one_error_line(err, f"1 missing weights (e.g. {key!r}), 1 unexpected weights (e.g. 'old.weight')")


def test_a_model_without_features_exits_2(tiny_run, tmp_path, capsys, monkeypatch):
    from pointabstract.engine import restored as restore_module

    real_build = restore_module.build_model

    def build_without_features(name, **cfg):  # the same weights, a forward with no return_features
        model = real_build(name, **cfg)
        model.forward = lambda pos, *, features=None: {"logits": torch.zeros(pos.shape[0], 3)}
        return model

    monkeypatch.setattr(restore_module, "build_model", build_without_features)
    code, _, err = _run(capsys, tiny_run[0], "--png", tmp_path / "v.png")
    assert code == 2
    _one_error_line(err, "cannot return per-block features")


def test_no_display_and_no_png_says_so_and_suggests_png(tiny_run, capsys, monkeypatch):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    code, _, err = _run(capsys, tiny_run[0])
    assert code == 2
    _one_error_line(err, "no display (DISPLAY is not set): render the scene to a file with --png OUT.png")


def test_add_parser_plugs_into_a_main_cli(tiny_run):
    import argparse

    main = argparse.ArgumentParser(prog="pointabstract")
    sub = main.add_subparsers(dest="command", required=True)
    cli.add_parser(sub)
    args = main.parse_args(["view", str(tiny_run[0]), "--index", "3", "--k", "7", "--png", "o.png"])
    assert args.func is cli.run and args.index == 3 and args.k == 7 and str(args.png) == "o.png"
    assert np.isclose(args.height / args.width, 720 / 1280)


def test_view_png_in_a_fresh_process_without_display_finishes_fast_and_draws_the_highlights(o3d, demo_run,
                                                                                              tmp_path):
    """Regression: `pointabstract view CKPT --png` at the default 1280 x 720 without DISPLAY
    used to hang for 4 minutes (Filament over llvmpipe livelocked on the 6-geometry side-by-side
    scene; 120 s timeout, then the same backend again). Now: panels drawn separately, a stuck
    backend given up in seconds, and the PNG says which backend drew it."""
    import os
    import subprocess
    import sys
    import time
    from pathlib import Path

    from pointabstract.viz.core.colors import HIGHLIGHT, QUERY
    from pointabstract.viz.core.render import png_backend

    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env["PYTHONPATH"] = os.pathsep.join([str(root), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    out = tmp_path / "view.png"
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pointabstract.cli", "view", str(demo_run[0]), "--png", str(out)],
                          cwd=root, env=env, capture_output=True, text=True, timeout=120)
    seconds = time.perf_counter() - start
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert seconds < 45, f"took {seconds:.1f} s"
    img = np.asarray(Image.open(out))[..., :3]
    assert img.shape == (720, 1280, 3)
    for color in (HIGHLIGHT, QUERY):
        rgb = np.array([round(v * 255) for v in color])
        mask = (np.abs(img.astype(int) - rgb) <= 1).all(-1)
        assert mask[:, :640].sum() > 20 and mask[:, 640:].sum() > 20  # in both panels
    backend = png_backend(out)
    assert backend in ("offscreen", "legacy", "software") and f"drawn by the {backend} renderer" in proc.stdout


def test_png_replaces_only_its_own_pictures_unless_overwrite(o3d, tiny_run, tmp_path, capsys, monkeypatch):
    """A PNG of the user's under the --png name is refused before loading; --overwrite replaces it
    and says so; the picture written then is the viewer's own, replaced by the next run without a word."""
    monkeypatch.delenv("DISPLAY", raising=False)
    (tmp_path / "v.png").write_text("a picture of mine")
    small = ["--width", 160, "--height", 100]
    code, _, err = _run(capsys, tiny_run[0], "--png", tmp_path / "v.png", *small)
    assert code == 2
    _one_error_line(err, "a file that pointabstract view did not write is there")
    assert (tmp_path / "v.png").read_text() == "a picture of mine"
    code, out, err = _run(capsys, tiny_run[0], "--png", tmp_path / "v.png", "--overwrite", *small)
    assert code == 0, err
    assert f"replacing {tmp_path / 'v.png'}, a file pointabstract view did not write (--overwrite)" in out
    code, out, err = _run(capsys, tiny_run[0], "--png", tmp_path / "v.png", *small)
    assert code == 0 and "replacing" not in out, err
