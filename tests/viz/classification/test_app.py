import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from pointabstract.ops import knn_naive
from pointabstract.viz.classification.app import KEYMAP, ViewerState, key_help
from pointabstract.viz.core.colors import HIGHLIGHT, QUERY, class_palette, part_palette

ROOT = Path(__file__).resolve().parents[3]


def test_keys_change_query_block_k_sample_colouring_and_layout(o3d, session):
    state = ViewerState(session, index=0, k=40)
    assert state.block == 3 and state.k == 6  # the paper's block; K clamped to its 6 points ...
    assert "K = 40 is more than block 3's 6 points: using K = 6" in state.status()  # ... and said so
    first = state.query
    state.press("N")
    assert state.query != first and state.query == state.order[1]
    state.press("B")
    assert state.query == first
    old_pos = state.points()[0][state.query]
    state.press("]")  # block 3 -> 0 (wraps); the query moves to the nearest point of the new block
    assert state.block == 0 and state.k == 40  # the wished K fits block 0's 48 points
    pos = state.points()[0]
    assert state.query == int(((pos - old_pos) ** 2).sum(1).argmin())
    state.press(",")
    assert state.k == 35
    state.press("right")
    assert state.index == 1 and state.sample.index == 1 and state.block == 0
    state.press("left")
    state.press("left")
    assert state.index == 11  # wraps around the split
    assert state.coloring == "neighbours"
    state.press("C")
    assert state.coloring == "predicted"
    state.press("C")
    state.press("C")  # "part" is skipped: this dataset has no part labels
    assert state.coloring == "distance"
    state.press("V")
    assert state.layout == "feature"
    with pytest.raises(ValueError, match="key must be one of"):
        state.press("Z")


def test_the_scene_shown_is_the_knn_of_the_blocks_features(o3d, session):
    state = ViewerState(session, index=1, block=1, k=5, coloring="predicted")
    state.set_query(7)
    scene = state.scene()
    pos, feats = state.points()
    expect = knn_naive(feats[None, 7:8], feats[None], 5)[1][0, 0]
    assert sorted(scene.feature_idx) == sorted(expect.tolist())
    colors = scene.colors["feature"]
    assert np.allclose(colors[scene.feature_idx], HIGHLIGHT)
    others = np.delete(colors, scene.feature_idx, 0)
    assert np.allclose(others, class_palette(3)[state.sample.pred])  # coloured by the predicted class
    assert [d["name"] for d in scene.geometries][0] == "feature/context"  # 24 of 48 points: the cloud behind
    with pytest.raises(ValueError, match=r"query must be an int in \[0, 23\], got 24"):
        state.set_query(24)


def test_default_k_and_part_colouring(o3d, session):
    state = ViewerState(session, index=0)
    assert state.k == 2  # the paper's 40 of 128, in proportion for block 3's 6 points
    state.press("[")
    state.press("[")
    assert state.block == 1 and state.k == 8  # 24 points
    state.sample.part = np.arange(48) % 4 + 12  # as if ShapeNetPart: Chair parts 12-15
    state.press("C")
    state.press("C")
    state.press("C")
    assert state.coloring == "part"
    colors = state.scene().colors["feature"]
    expect = part_palette()[state.sample.labels_at(1, state.sample.part)]
    keep = np.setdiff1d(np.arange(24), state.scene().feature_idx)
    assert np.allclose(colors[keep], expect[keep])


def test_key_help_lists_every_key():
    text = key_help()
    assert all(key in text for key in KEYMAP) and "Q/Esc" in text


def test_viewer_app_under_xvfb_takes_scripted_keys_saves_a_screenshot_and_exits(o3d, tiny_run, tmp_path,
                                                                               xvfb_display):
    env = {**os.environ, "DISPLAY": xvfb_display}
    cmd = [sys.executable, "viz/viewer.py", str(tiny_run[0]), "--k", "3", "--keys", "N . C S P V H",
           "--screenshot-dir", str(tmp_path), "--width", "320", "--height", "240"]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    out = proc.stdout
    assert "keys:" in out and "scripted run done (7 keys, 1 screenshots)" in out
    assert "query" in out and "K = 6 | " in out and "colouring predicted" in out
    assert "no point picked" in out  # P opened the picking window, which the script closed
    shots = list(tmp_path.glob("view01_sample0_block3_query*_k6_predicted.png"))
    assert len(shots) == 1, list(tmp_path.iterdir())
    img = np.asarray(Image.open(shots[0]))[..., :3]
    assert img.shape == (240, 320, 3)
    pixels = set(map(tuple, img.reshape(-1, 3)))
    assert tuple(round(v * 255) for v in HIGHLIGHT) in pixels and tuple(round(v * 255) for v in QUERY) in pixels
