"""Offscreen rendering of scenes to images and PNG files, with no display and no GPU.

Backends, tried in this order by ``backend="auto"``:

- ``"offscreen"``: Open3D's Filament ``OffscreenRenderer``. On a machine without a GPU it
  renders on the CPU through Mesa (Vulkan llvmpipe from Debian's ``mesa-vulkan-drivers``, or
  EGL from ``libegl1``). Post-processing is switched off so pixels hold the exact colours.
- ``"legacy"``: the legacy ``open3d.visualization.Visualizer`` in a hidden window: headless
  EGL when there is no display, GLX on ``$DISPLAY`` otherwise; when both fail and ``DISPLAY``
  is unset, a virtual X server (``Xvfb``, Debian package ``xvfb``) is started for it.

A native renderer that finds no usable driver may abort the whole process instead of raising,
so ``"auto"`` first checks each backend once per process in a short-lived subprocess, and
every rendering then happens in a worker process (:mod:`._worker`) that is killed when stuck.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .colors import BACKGROUND, ScalarLegend, legend_image

__all__ = ["BACKENDS", "Camera", "RenderError", "Renderer", "render_png", "resolve_backend", "scene_points",
           "start_xvfb"]

BACKENDS = ("offscreen", "legacy")
_PROBED: dict[str, str | None] = {}  # backend -> None when it works, else why not
_XVFB: list[subprocess.Popen] = []


class RenderError(RuntimeError):
    """No rendering backend works here; the message names what is missing."""


@dataclass(frozen=True)
class Camera:
    """A pinhole camera fitted to the scene's points.

    ``direction`` points from the scene's centre towards the eye (the default looks at a y-up
    ModelNet shape from front-right, slightly above); the distance is chosen so every point of
    every geometry fits the image at ``zoom = 1`` (larger zooms in).
    """

    direction: tuple[float, float, float] = (0.45, 0.4, 1.0)
    up: tuple[float, float, float] = (0.0, 1.0, 0.0)
    fov: float = 10.0  # vertical field of view, degrees (narrow: side-by-side copies look alike)
    zoom: float = 1.0
    center: tuple[float, float, float] | None = None  # look-at point (default: the box centre)

    @property
    def right(self) -> np.ndarray:
        """(3,) unit vector pointing to the right of the image (scenes put side-by-side panels along it)."""
        d = np.asarray(self.direction, float)
        right = np.cross(-d / np.linalg.norm(d), np.asarray(self.up, float))
        if np.linalg.norm(right) < 1e-9:
            raise ValueError(f"camera up {self.up} must not be parallel to direction {self.direction}")
        return right / np.linalg.norm(right)

    def matrices(self, points: np.ndarray, width: int, height: int) -> tuple[np.ndarray, np.ndarray]:
        """points: (P, 3) to fit -> intrinsic (3, 3), extrinsic (4, 4) world->camera."""
        d = np.asarray(self.direction, float)
        d = d / np.linalg.norm(d)
        right = self.right
        up = np.cross(right, -d)
        center = (points.min(0) + points.max(0)) / 2 if self.center is None else \
            np.asarray(self.center, float)
        rel = points - center  # (P, 3)
        tan_v = np.tan(np.radians(self.fov) / 2)
        tan_h = tan_v * width / height
        # the nearest eye distance at which every point lies inside both fields of view
        dist = max(float(np.max(rel @ d + np.abs(rel @ right) / tan_h)),
                   float(np.max(rel @ d + np.abs(rel @ up) / tan_v)), 1e-3) * 1.06 / self.zoom
        eye = center + dist * d
        rot = np.stack([right, -up, -d])  # camera x right, y down, z forward
        extrinsic = np.eye(4)
        extrinsic[:3, :3], extrinsic[:3, 3] = rot, -rot @ eye
        f = (height / 2) / tan_v
        intrinsic = np.array([[f, 0, width / 2 - 0.5], [0, f, height / 2 - 0.5], [0, 0, 1]])
        return intrinsic, extrinsic


class Renderer:
    """A reusable offscreen renderer (creating one costs ~1-2 s; rendering with it ~0.1 s).

    The native renderer runs in a worker process of its own: Mesa's CPU rasteriser was seen
    to livelock inside Filament now and then (one of its threads spinning, the caller waiting
    forever, also at interpreter exit), so a render that takes longer than ``timeout_s`` kills
    the worker and is retried once in a fresh one before :class:`RenderError` is raised.

    Args:
        width, height: image size in pixels.
        backend: ``"auto"`` (see the module docstring), ``"offscreen"`` or ``"legacy"``.
        background: RGB background in [0, 1].
        timeout_s: longest a single render may take.
    """

    def __init__(self, width: int = 800, height: int = 600, *, backend: str = "auto", background=BACKGROUND,
                 timeout_s: float = 120.0):
        for name, value in (("width", width), ("height", height)):
            if isinstance(value, bool) or not isinstance(value, int) or not 16 <= value <= 8192:
                raise ValueError(f"{name} must be an int in [16, 8192], got {value!r}")
        self.width, self.height = width, height
        self.background = np.asarray(background, dtype=float)
        self.backend = resolve_backend(backend)
        self.timeout_s = timeout_s
        self._impl = None

    def render(self, geometries, *, camera: Camera | None = None,
               legend: ScalarLegend | None = None) -> np.ndarray:
        """Render drawables (see :mod:`.scenes`) or plain Open3D geometries.

        Returns:
            (height, width, 3) uint8 RGB; with ``legend`` its colour bar fills the right edge.
        """
        drawables = _drawables(geometries)
        bar = legend_image(legend, width=min(110, self.width // 4), height=self.height) if legend else None
        width = self.width - (0 if bar is None else bar.shape[1])
        intrinsic, extrinsic = (camera or Camera()).matrices(scene_points(drawables), width, self.height)
        if self._impl is None or self._impl[0] != width:
            self.close()
            self._impl = (width, _Isolated(self.backend, width, self.height, self.timeout_s))
        image = self._impl[1].render(drawables, intrinsic, extrinsic, self.background)
        return image if bar is None else np.concatenate([image, bar], axis=1)

    def close(self) -> None:
        if self._impl is not None:
            self._impl[1].close()
            self._impl = None

    def __enter__(self) -> Renderer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def render_png(geometries, path: str | Path, *, width: int = 800, height: int = 600,
               camera: Camera | None = None, legend: ScalarLegend | None = None,
               backend: str = "auto", background=BACKGROUND) -> Path:
    """Render a scene offscreen and write it as a ``width`` x ``height`` RGB PNG.

    Args:
        geometries: drawables (``{"geometry", "point_size"?, "name"?}``) or Open3D geometries.
        path: output file; its folder is created.
        width, height: image size in pixels.
        camera: a :class:`Camera` (default: fitted three-quarter view of a y-up shape).
        legend: a scalar colouring's legend, drawn as a colour bar on the right.
        backend: ``"auto"``, ``"offscreen"`` or ``"legacy"``.
        background: RGB in [0, 1].

    Returns:
        The path written. Raises :class:`RenderError` when no backend works here.
    """
    from PIL import Image

    with Renderer(width, height, backend=backend, background=background) as renderer:
        image = renderer.render(geometries, camera=camera, legend=legend)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(image).save(path)
    return path


def resolve_backend(backend: str = "auto") -> str:
    """The backend to use: an explicit name as is, or the first that works (checked once)."""
    if backend in BACKENDS:
        _require_open3d()
        return backend
    if backend != "auto":
        raise ValueError(f"backend must be 'auto' or one of {list(BACKENDS)}, got {backend!r}")
    _require_open3d()
    reasons = []
    for name in BACKENDS:
        why = _probe(name)
        if why is None:
            return name
        reasons.append(f"{name}: {why}")
    if not os.environ.get("DISPLAY"):
        try:
            start_xvfb()
        except RenderError as err:
            reasons.append(str(err))
        else:
            _PROBED.pop("legacy", None)
            why = _probe("legacy")
            if why is None:
                return "legacy"
            reasons.append(f"legacy under Xvfb: {why}")
    raise RenderError("no offscreen rendering backend works on this machine:\n  " + "\n  ".join(reasons)
                      + "\nInstall the Debian packages mesa-vulkan-drivers, libegl1 and libgl1 "
                        "(Open3D's CPU rendering) or xvfb (virtual display for the legacy visualiser).")


def start_xvfb(*, screen: str = "1920x1080x24") -> str:
    """Start a virtual X server for this process (stopped at exit); sets and returns ``DISPLAY``."""
    exe = shutil.which("Xvfb")
    if exe is None:
        raise RenderError("Xvfb not found (Debian package xvfb)")
    read, write = os.pipe()
    proc = subprocess.Popen([exe, "-displayfd", str(write), "-screen", "0", screen, "-nolisten", "tcp"],
                            pass_fds=(write,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(write)
    with os.fdopen(read) as f:
        number = f.readline().strip()
    if not number.isdigit():
        proc.kill()
        raise RenderError(f"Xvfb did not start (exit code {proc.poll()})")
    _XVFB.append(proc)
    if len(_XVFB) == 1:
        atexit.register(_stop_xvfb)
    os.environ["DISPLAY"] = f":{number}"
    return os.environ["DISPLAY"]


def _stop_xvfb() -> None:
    while _XVFB:
        proc = _XVFB.pop()
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()


def _require_open3d() -> None:
    try:
        import open3d  # noqa: F401
    except ImportError as err:  # also raised when its shared libraries (libGL, libusb) are missing
        raise RenderError(f"open3d cannot be imported ({err}); install pointabstract[viz] and the "
                          "Debian packages libgl1 libusb-1.0-0 libgomp1") from None


_PROBE_SCENE = ("import numpy as np, open3d as o3d\n"
                "cloud = o3d.geometry.PointCloud(o3d.utility.Vector3dVector(np.random.rand(50, 3)))\n"
                "cloud.paint_uniform_color([1.0, 0.0, 0.0])\n")
_PROBE_CODE = {  # open3d only (no torch import): each renders a red cloud and checks the pixels
    "offscreen": _PROBE_SCENE + (
        "from open3d.visualization import rendering\n"
        "r = rendering.OffscreenRenderer(32, 32)\n"
        "m = rendering.MaterialRecord(); m.shader = 'defaultUnlit'; m.point_size = 5.0\n"
        "r.scene.add_geometry('c', cloud, m)\n"
        "r.setup_camera(60.0, [0.5, 0.5, 0.5], [0.5, 0.5, 3.0], [0.0, 1.0, 0.0])\n"
        "r.scene.view.set_post_processing(False)\n"
        "img = np.asarray(r.render_to_image())\n"),
    "legacy": _PROBE_SCENE + (
        "vis = o3d.visualization.Visualizer()\n"
        "assert vis.create_window(width=32, height=32, visible=False), 'no window, no EGL'\n"
        "vis.add_geometry(cloud); vis.get_render_option().point_size = 5.0\n"
        "img = (np.asarray(vis.capture_screen_float_buffer(do_render=True)) * 255).round()\n"),
}
_PROBE_CHECK = ("assert (img[..., :3] == [255, 0, 0]).all(-1).any(), 'no red pixel rendered'\n"
                "print('render-ok')\n")


def _probe(name: str) -> str | None:
    """Render a tiny scene with ``name`` in a subprocess: None if it worked, else the reason."""
    if name not in _PROBED:
        try:
            out = subprocess.run([sys.executable, "-c", _PROBE_CODE[name] + _PROBE_CHECK],
                                 capture_output=True, text=True, timeout=120)
            ok = out.returncode == 0 and "render-ok" in out.stdout
            lines = (out.stdout + out.stderr).strip().splitlines() or [f"exit code {out.returncode}"]
            _PROBED[name] = None if ok else lines[-1]
        except subprocess.TimeoutExpired:
            _PROBED[name] = "timed out after 120 s"
    return _PROBED[name]


def _drawables(geometries) -> list[dict]:
    if geometries is None or isinstance(geometries, dict) or not hasattr(geometries, "__iter__"):
        geometries = [geometries]
    out = []
    for i, g in enumerate(geometries):
        d = dict(g) if isinstance(g, dict) else {"geometry": g}
        if not hasattr(d.get("geometry"), "get_axis_aligned_bounding_box"):
            raise TypeError(f"geometries[{i}] must be an Open3D geometry or a dict with one under "
                            f"'geometry', got {type(d.get('geometry', g)).__name__}")
        d.setdefault("name", f"g{i}")
        d["name"] = f"{i}:{d['name']}"
        d.setdefault("point_size", 5.0)
        out.append(d)
    if not out:
        raise ValueError("geometries must hold at least one geometry")
    return out


def scene_points(geometries) -> np.ndarray:
    """(P, 3) every point / vertex of drawables or Open3D geometries (what a camera must frame)."""
    arrays = []
    for d in _drawables(geometries):
        g = d["geometry"]
        pts = getattr(g, "points", None) if hasattr(g, "points") else getattr(g, "vertices", None)
        if pts is None:  # other geometries: their bounding box corners
            box = g.get_axis_aligned_bounding_box()
            pts = np.asarray(box.get_box_points())
        arrays.append(np.asarray(pts, dtype=float).reshape(-1, 3))
    points = np.concatenate(arrays)
    if len(points) == 0 or not np.isfinite(points).all():
        raise ValueError("geometries are empty or hold non-finite coordinates")
    return points


def _plain(drawables: list[dict]) -> list[dict]:
    """Drawables as numpy arrays (what crosses the process boundary)."""
    out = []
    for d in drawables:
        g = d["geometry"]
        item = {"name": d["name"], "point_size": float(d["point_size"])}
        if hasattr(g, "triangles"):
            item.update(kind="mesh", vertices=np.asarray(g.vertices), triangles=np.asarray(g.triangles),
                        colors=np.asarray(g.vertex_colors))
        elif hasattr(g, "points"):
            item.update(kind="points", points=np.asarray(g.points), colors=np.asarray(g.colors))
        else:
            raise TypeError(f"cannot render a {type(g).__name__}: point clouds and triangle meshes only")
        out.append(item)
    return out


class _Isolated:
    """A renderer in a worker process; a stuck render is killed and retried once."""

    def __init__(self, backend: str, width: int, height: int, timeout_s: float):
        self.args, self.timeout_s = (backend, width, height), timeout_s
        self.proc = self.conn = None

    def _start(self) -> None:
        import multiprocessing as mp

        from ._worker import worker

        ctx = mp.get_context("spawn")  # a fresh interpreter: no inherited threads or GL state
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=worker, args=(child, *self.args), daemon=True)
        self.proc.start()
        child.close()

    def render(self, drawables, intrinsic, extrinsic, background) -> np.ndarray:
        request = (_plain(drawables), intrinsic, extrinsic, np.asarray(background, float))
        for _attempt in range(2):
            if self.proc is None or not self.proc.is_alive():
                self._start()
            self.conn.send(request)
            if self.conn.poll(self.timeout_s):
                try:
                    status, value = self.conn.recv()
                except EOFError:  # the worker died (e.g. the driver aborted)
                    status, value = "error", f"the render worker exited with code {self.proc.exitcode}"
                if status == "ok":
                    return value
                self.close()
                raise RenderError(f"{self.args[0]} rendering failed: {value}")
            self.close()  # stuck: kill and try once more in a fresh worker
        raise RenderError(f"{self.args[0]} rendering took longer than {self.timeout_s:.0f} s twice")

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
        if self.proc is not None:
            self.proc.join(5)
            if self.proc.is_alive():
                self.proc.kill()
                self.proc.join(5)
        self.proc = self.conn = None


