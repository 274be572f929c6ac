import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from pointabstract.viz.classification.scenes import neighbourhood_scene
from pointabstract.viz.core import render as R
from pointabstract.viz.core.colors import HIGHLIGHT, QUERY, ScalarLegend
from pointabstract.viz.core.render import Camera, png_backend, render_panels_png, render_png
from tests.fixtures import cloud

ROOT = Path(__file__).resolve().parents[3]
RED, BLUE = tuple(round(v * 255) for v in HIGHLIGHT), tuple(round(v * 255) for v in QUERY)


def _scene(layout="side_by_side"):
    pos, feats = cloud(1, 60, 3, seed=7)[0], cloud(1, 60, 8, seed=8)[0]
    return neighbourhood_scene(pos, feats, 3, k=8, layout=layout)


def _count(img, rgb, tol=1):
    return int(np.all(np.abs(img.astype(int) - rgb) <= tol, axis=-1).sum())


def test_render_png_writes_the_requested_size_with_the_highlight_colour_in_its_pixels(o3d, tmp_path):
    out = render_png(_scene().geometries, tmp_path / "sub" / "scene.png", width=320, height=160)
    img = np.asarray(Image.open(out))
    assert out.stat().st_size > 0 and img.shape == (160, 320, 3)
    assert _count(img, RED) >= 8 * 2 * 4  # 8 neighbours per panel, each several pixels, exact colour
    assert _count(img, BLUE) >= 10  # the query markers
    assert _count(img, (255, 255, 255), tol=0) > img.shape[0] * img.shape[1] // 2  # white background
    red_cols = np.flatnonzero(np.all(img == RED, axis=-1).any(0))
    assert red_cols.min() < 160 <= red_cols.max()  # highlights in both panels, left and right


def test_legend_fills_the_right_edge_at_the_same_total_size(o3d, tmp_path):
    legend = ScalarLegend("viridis", 0.0, 2.0, "distance")
    out = render_png(_scene("feature").geometries, tmp_path / "l.png", width=300, height=200, legend=legend)
    img = np.asarray(Image.open(out))
    assert img.shape == (200, 300, 3)
    bar = img[:, -75:]
    assert len(np.unique(bar.reshape(-1, 3), axis=0)) > 30  # the colour bar's gradient


def test_legacy_backend_under_xvfb_draws_the_same_scene(o3d, tmp_path):
    """The fallback: the legacy visualiser on a virtual X server, in a fresh process (one process
    cannot mix Open3D's two renderers)."""
    if shutil.which("Xvfb") is None:
        pytest.skip("Xvfb is not installed (Debian package xvfb)")
    code = ("import os, sys, numpy as np\n"
            "from pointabstract.viz.core.render import start_xvfb, render_png\n"
            "os.environ.pop('DISPLAY', None); start_xvfb()\n"
            "from tests.viz.core.test_render import _scene\n"
            f"render_png(_scene().geometries, {str(tmp_path / 'legacy.png')!r}, width=320, height=160, "
            "backend='legacy')\n")
    env = {k: v for k, v in os.environ.items() if k != "DISPLAY"}
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    legacy = np.asarray(Image.open(tmp_path / "legacy.png"))
    offscreen = np.asarray(Image.open(render_png(_scene().geometries, tmp_path / "o.png", width=320, height=160)))
    assert legacy.shape == offscreen.shape == (160, 320, 3)
    assert _count(legacy, RED) >= 64 and _count(legacy, BLUE) >= 10
    # same camera: the red highlights sit in the same place (centroids within a few pixels)
    centre = [np.argwhere(_count_mask(img, RED)).mean(0) for img in (legacy, offscreen)]
    assert np.abs(centre[0] - centre[1]).max() < 6


def _count_mask(img, rgb, tol=1):
    return np.all(np.abs(img.astype(int) - rgb) <= tol, axis=-1)


def test_camera_frames_every_point():
    pts = cloud(1, 200, 3, seed=3)[0].double().numpy() * [3.0, 1.0, 0.5] + 10
    intrinsic, extrinsic = Camera().matrices(pts, 320, 200)
    cam = (extrinsic[:3, :3] @ pts.T).T + extrinsic[:3, 3]
    assert (cam[:, 2] > 0).all()  # in front of the camera
    uv = (intrinsic @ cam.T).T
    uv = uv[:, :2] / uv[:, 2:]
    assert (uv[:, 0] >= 0).all() and (uv[:, 0] <= 320).all() and (uv[:, 1] >= 0).all() and (uv[:, 1] <= 200).all()
    assert uv[:, 0].max() - uv[:, 0].min() > 200  # and fills the frame (no tiny scene in the middle)
    with pytest.raises(ValueError, match="must not be parallel"):
        Camera(direction=(0, 1, 0)).matrices(pts, 10, 10)


def test_render_input_errors(o3d):
    with pytest.raises(ValueError, match=r"width must be an int in \[16, 8192\], got 0"):
        R.Renderer(0, 100, backend="offscreen")
    with pytest.raises(ValueError, match="backend must be 'auto' or one of"):
        R.Renderer(100, 100, backend="vulkan")
    with pytest.raises(ValueError, match="timeout_s must be a positive finite number, got -1.0"):
        R.Renderer(100, 100, timeout_s=-1)
    with pytest.raises(TypeError, match=r"geometries\[0\] must be an Open3D geometry"):
        R.scene_points([np.zeros((3, 3))])
    with pytest.raises(ValueError, match="geometries must hold at least one geometry"):
        R.scene_points([])
    with pytest.raises(ValueError, match="geometries are empty"):
        R.scene_points([o3d.geometry.PointCloud()])


def test_png_records_the_backend_and_software_draws_what_the_native_renderer_draws(o3d, tmp_path):
    native = render_png(_scene().geometries, tmp_path / "n.png", width=320, height=160)
    soft = render_png(_scene().geometries, tmp_path / "s.png", width=320, height=160, backend="software")
    assert png_backend(soft) == "software" and png_backend(native) in ("offscreen", "legacy", "software")
    a, b = np.asarray(Image.open(native)), np.asarray(Image.open(soft))
    assert _count(b, RED) >= 64 and _count(b, BLUE) >= 10
    # same camera, same geometry: the red highlights span the same box (occlusions differ by a pixel or two)
    boxes = [np.concatenate([np.argwhere(_count_mask(img, RED)).min(0), np.argwhere(_count_mask(img, RED)).max(0)])
             for img in (a, b)]
    assert np.abs(boxes[0] - boxes[1]).max() <= 2


def test_panels_are_drawn_separately_and_joined_left_to_right(o3d, tmp_path):
    panels = [_scene("feature").geometries, _scene("xyz").geometries]
    legend = ScalarLegend("viridis", 0.0, 1.0, "x")
    out = render_panels_png(panels, tmp_path / "p.png", width=331, height=120, backend="software", legend=legend)
    img = np.asarray(Image.open(out))
    assert img.shape == (120, 331, 3)
    bar = min(110, 331 // 4)
    left, right = img[:, :(331 - bar) // 2 + 1], img[:, (331 - bar) // 2 + 1:331 - bar]
    assert _count(left, RED) >= 8 * 4 and _count(right, RED) >= 8 * 4  # each panel its own neighbours
    with pytest.raises(ValueError, match="panels must be a non-empty list of drawable lists"):
        R.Renderer(100, 100, backend="software").render_panels([])
    with pytest.raises(ValueError, match="leaves panels narrower than 16 pixels for 7 panels"):
        R.Renderer(100, 100, backend="software").render_panels([panels[0]] * 7)


def test_camera_facing_looks_along_the_smallest_extent():
    rng = np.random.default_rng(0)
    pts = rng.uniform(-1, 1, (500, 3)) * [3.0, 1.0, 0.1]  # a flat plate in x-y
    cam = Camera.facing(pts, tilt=0.0)
    assert abs(abs(cam.direction[2]) - 1) < 1e-3 and cam.up == (0.0, 1.0, 0.0)
    flat_y = rng.uniform(-1, 1, (500, 3)) * [3.0, 0.1, 1.0]  # a table top: seen from above, x up
    cam = Camera.facing(flat_y)
    assert abs(cam.direction[1]) > 0.8 and abs(abs(cam.up[0]) - 1) < 1e-3
    with pytest.raises(ValueError, match="points must be"):
        Camera.facing(np.zeros((2, 3)))
