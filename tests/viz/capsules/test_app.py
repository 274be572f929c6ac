import os
import subprocess
import sys
from argparse import Namespace
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from pointabstract.viz import load_session
from pointabstract.viz.capsules.app import KEYMAP, CapsuleViewerState
from pointabstract.viz.classification.app import key_help
from pointabstract.viz.core.colors import HIGHLIGHT
from pointabstract.viz.tasks import STATES, viewer_state
from tests.viz._capsule_runs import tiny_ae_run

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def ae(tmp_path_factory):
    return load_session(tiny_ae_run(tmp_path_factory)[0])


def test_keys_cycle_capsules_by_part_samples_colourings_and_layouts(ae):
    state = CapsuleViewerState(ae, index=2)
    order = state.sample.capsule_order()
    assert state.capsule == order[0] and state.coloring == "capsule" and state.layout == "side_by_side"
    state.press("N")
    assert state.capsule == order[1]
    state.press("B")
    state.press("B")  # wraps to the last capsule of the order
    assert state.capsule == order[-1]
    state.press("C")
    assert state.coloring == "capsules"
    state.press("N")  # showing a capsule switches back to the one-capsule colouring
    assert state.coloring == "capsule" and state.capsule == order[0]
    state.press("C")
    state.press("C")
    assert state.coloring == "parts" and "capsules by majority part: " in state.status()
    state.press("C")
    assert state.coloring == "capsule"
    state.sample.part = None  # as on data without part labels: "parts" is skipped
    state.press("C")
    state.press("C")
    assert state.coloring == "capsule"
    state.press("V")
    assert state.layout == "input"
    state.press("right")
    assert state.index == 3 and state.sample.index == 3
    state.press("left")
    state.press("left")
    state.press("left")
    state.press("left")
    assert state.index == 15  # wraps around the 16-shape split
    with pytest.raises(ValueError, match="key must be one of"):
        state.press("P")  # picking a query point is the classification viewer's


def test_status_scenes_and_screenshot_names(o3d, ae):
    state = CapsuleViewerState(ae, index=1, capsule=2)
    s = state.sample
    assert state.status() == (f"sample {s.title} | part purity {s.purity:.3f} | {s.describe_capsule(2)} | "
                              "colouring capsule | layout side_by_side")
    scenes = state.panel_scenes()
    assert [[d["name"] for d in sc.geometries][0] for sc in scenes] == ["input", "reconstruction"]
    assert [d["name"] for d in scenes[1].geometries] == ["reconstruction", "reconstruction/capsule"]
    colors = scenes[1].colors["reconstruction"]
    assert np.allclose(colors[s.capsule_index == 2], HIGHLIGHT)
    assert not np.isclose(colors[s.capsule_index != 2], HIGHLIGHT).all(1).any()
    cam = state.panel_camera()
    assert np.array_equal(cam.matrices(s.pos.numpy(), 80, 60)[1], cam.matrices(s.points.numpy(), 80, 60)[1])
    assert [d["name"] for d in state.scene().geometries][-2:] == ["reconstruction", "reconstruction/capsule"]
    assert state.screenshot_name(3) == "view03_sample1_capsule2_side_by_side.png"
    state.press("C")
    assert state.screenshot_name(4) == "view04_sample1_capsules_side_by_side.png"
    assert "next capsule" in key_help(KEYMAP) and "pick" not in key_help(KEYMAP)


def test_state_from_cli_arguments_and_errors(ae, session):
    args = Namespace(index=4, capsule=1, color="capsules", layout="reconstruction", block=None, k=None, query=None)
    state = viewer_state(ae, args)
    assert isinstance(state, CapsuleViewerState) and (state.index, state.capsule, state.coloring,
                                                      state.layout) == (4, 1, "capsules", "reconstruction")
    default = viewer_state(session, Namespace(index=0, block=None, k=None, query=None, color=None, layout=None))
    assert isinstance(default, STATES["classification"]) and default.coloring == "neighbours"
    with pytest.raises(ValueError, match=r"coloring must be one of \['capsule', 'capsules', 'parts'\] for an "
                                         r"autoencoder, got 'neighbours'"):
        CapsuleViewerState(ae, coloring="neighbours")
    with pytest.raises(ValueError, match=r"layout must be one of .* for an autoencoder, got 'xyz'"):
        CapsuleViewerState(ae, layout="xyz")
    with pytest.raises(ValueError, match=r"capsule must be an int in \[0, 3\]"):
        CapsuleViewerState(ae, capsule=4)
    with pytest.raises(ValueError, match=r"index must be an int in \[0, 15\] .*, got 16"):
        CapsuleViewerState(ae, index=16)


@pytest.mark.slow
def test_capsule_window_under_xvfb_takes_scripted_keys_and_saves_a_screenshot(o3d, tmp_path_factory, tmp_path,
                                                                           xvfb_display):
    ckpt = tiny_ae_run(tmp_path_factory)[0]
    env = {**os.environ, "DISPLAY": xvfb_display}
    cmd = [sys.executable, "viz/viewer.py", str(ckpt), "--capsule", "1", "--keys", "N B S C H",
           "--screenshot-dir", str(tmp_path), "--width", "320", "--height", "240"]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "scripted run done (5 keys, 1 screenshots)" in proc.stdout and "colouring capsules" in proc.stdout
    shots = list(tmp_path.glob("view01_sample0_capsule1_side_by_side.png"))
    assert len(shots) == 1, list(tmp_path.iterdir())
    img = np.asarray(Image.open(shots[0]))[..., :3]
    assert tuple(round(v * 255) for v in HIGHLIGHT) in set(map(tuple, img.reshape(-1, 3)))
