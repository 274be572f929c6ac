"""Offscreen rendering of scenes to images and PNG files, with no display and no GPU.

:class:`Renderer` draws drawables (see :mod:`..classification.scenes`) through a :class:`Camera` with the
first backend of :mod:`.backends` that works here (``backend="auto"``: Open3D's Filament
renderer, then the legacy visualiser over EGL / Xvfb, then a numpy software splatter), giving
up a stuck or failing backend within seconds. Side-by-side layouts are drawn as separate
panels and joined (:meth:`Renderer.render_panels`). Each PNG records which backend drew it in
its metadata (:func:`png_backend`).
"""

from __future__ import annotations

import logging
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ... import _validate as V
from .backends import BACKENDS, RenderError, backend_chain, give_up, open_backend, start_xvfb
from .colors import BACKGROUND, ScalarLegend, legend_image

__all__ = ["BACKENDS", "Camera", "PNG_BACKEND_KEY", "RenderError", "Renderer", "legend_width",
           "png_backend", "render_panels_png", "render_png", "save_png", "scene_points", "start_xvfb"]

_log = logging.getLogger(__name__)  # notes: pointabstract/_log.py

PNG_BACKEND_KEY = "pointabstract:backend"  # PNG text chunk naming the backend(s) that drew the image


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

    @classmethod
    def facing(cls, points, *, tilt: float = 0.35, **kwargs) -> Camera:
        """A camera that shows the two largest extents of ``points`` (P, 3).

        It looks along the points' direction of least spread (smallest principal axis), tilted
        by ``tilt`` towards the other two axes so depth stays visible, from the side of the
        default view; ``up`` is world y unless that is nearly the viewing direction (then the
        largest axis). ``kwargs`` go to the constructor (``fov``, ``zoom``, ``center``).
        """
        pts = np.asarray(points, dtype=float).reshape(-1, 3)
        if len(pts) < 3 or not np.isfinite(pts).all():
            raise ValueError(f"points must be (P, 3) finite with P >= 3, got shape {pts.shape}")
        V.check_float("tilt", tilt, low=0.0)
        _, vectors = np.linalg.eigh(np.cov((pts - pts.mean(0)).T))  # columns by ascending spread
        signs = [1.0 if v @ np.array(cls.direction) >= 0 else -1.0 for v in vectors.T]
        axes = vectors.T * np.array(signs)[:, None]  # smallest, middle, largest; towards the default eye
        direction = axes[0] + tilt * (axes[1] + axes[2])
        direction /= np.linalg.norm(direction)
        up = np.array([0.0, 1.0, 0.0])
        if abs(direction @ up) > 0.8:  # looking (nearly) down or up: y would roll the image
            up = axes[2]
        return cls(direction=tuple(map(float, direction)), up=tuple(map(float, up)), **kwargs)

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
    """A reusable offscreen renderer (starting a native backend costs ~1-3 s; a render ~0.1-1 s).

    Args:
        width, height: image size in pixels.
        backend: ``"auto"`` (the fallback chain of :mod:`.backends`), or ``"offscreen"``,
            ``"legacy"`` or ``"software"`` alone (no fallback: its failure is a RenderError).
        background: RGB background in [0, 1].
        timeout_s: longest one render may take before its backend is given up.
        start_timeout_s: longest a native backend may take to start and draw a warm-up frame.

    Attributes:
        backends_used: the backend that drew each image so far, in order.
        fallbacks: ``"name: why"`` for every backend given up by this renderer.
    """

    def __init__(self, width: int = 800, height: int = 600, *, backend: str = "auto", background=BACKGROUND,
                 timeout_s: float = 10.0, start_timeout_s: float = 60.0):
        V.check_int_in("width", width, 16, 8192)
        V.check_int_in("height", height, 16, 8192)
        V.check_positive("timeout_s", timeout_s)
        V.check_positive("start_timeout_s", start_timeout_s)
        self.width, self.height = width, height
        self.background = np.asarray(background, dtype=float)
        self.chain, self.explicit = backend_chain(backend), backend != "auto"
        self.timeout_s, self.start_timeout_s = float(timeout_s), float(start_timeout_s)
        self.backends_used: list[str] = []
        self.fallbacks: list[str] = []
        self._impl = None  # (backend name, width, started backend)
        self._xvfb_tried = False

    @property
    def last_backend(self) -> str | None:
        return self.backends_used[-1] if self.backends_used else None

    def render(self, geometries, *, camera: Camera | None = None,
               legend: ScalarLegend | None = None) -> np.ndarray:
        """Render drawables (see :mod:`..classification.scenes`) or plain Open3D geometries.

        Returns:
            (height, width, 3) uint8 RGB; with ``legend`` its colour bar fills the right edge.
        """
        return self.render_panels([geometries], camera=camera, legend=legend)

    def render_panels(self, panels, *, camera: Camera | None = None,
                      legend: ScalarLegend | None = None) -> np.ndarray:
        """Render each panel (a list of drawables) on its own, side by side, left to right.

        Each panel gets ``width / len(panels)`` pixels (the legend's bar first takes its share)
        and its own fitted camera; fewer geometries per frame is also what keeps Filament's
        Vulkan backend out of the livelock described in :mod:`.backends`.

        Returns:
            (height, width, 3) uint8 RGB.
        """
        if isinstance(panels, dict) or not isinstance(panels, (list, tuple)) or not panels:
            raise ValueError(f"panels must be a non-empty list of drawable lists, got "
                             f"{type(panels).__name__}")
        bar = legend_image(legend, width=legend_width(self.width), height=self.height) if legend else None
        free = self.width - (0 if bar is None else bar.shape[1])
        widths = [free // len(panels) + (1 if i < free % len(panels) else 0) for i in range(len(panels))]
        if min(widths) < 16:
            raise ValueError(f"width {self.width} leaves panels narrower than 16 pixels for "
                             f"{len(panels)} panels")
        images = []
        for geometries, width in zip(panels, widths):
            drawables = _drawables(geometries)
            intrinsic, extrinsic = (camera or Camera()).matrices(scene_points(drawables), width, self.height)
            images.append(self._draw(_plain(drawables), intrinsic, extrinsic, width))
        return np.concatenate(images + ([] if bar is None else [bar]), axis=1)

    def _draw(self, items, intrinsic, extrinsic, width: int) -> np.ndarray:
        while True:
            if not self.chain:
                raise RenderError("no rendering backend could draw here:\n  " + "\n  ".join(self.fallbacks)
                                  + "\nInstall the Debian packages mesa-vulkan-drivers, libegl1 and libgl1 "
                                    "(Open3D's CPU rendering) or xvfb, or use backend='software'.")
            name = self.chain[0]
            try:
                if self._impl is None or self._impl[:2] != (name, width):
                    self.close()
                    started = open_backend(name, width, self.height, timeout_s=self.timeout_s,
                                           start_timeout_s=self.start_timeout_s)
                    self._impl = (name, width, started)
                image = self._impl[2].render(items, intrinsic, extrinsic, self.background)
            except RenderError as err:
                self.close()
                self._fall_back(name, str(err))
                continue
            self.backends_used.append(name)
            return image

    def _fall_back(self, name: str, why: str) -> None:
        """Give up ``name`` (after one try under a fresh Xvfb for the legacy visualiser)."""
        no_display = not os.environ.get("DISPLAY")
        if name == "legacy" and no_display and not self._xvfb_tried and shutil.which("Xvfb"):
            self._xvfb_tried = True
            try:
                start_xvfb()
                self.fallbacks.append(f"legacy (headless EGL): {why}; retrying under Xvfb")
                return
            except RenderError as err:
                why = f"{why}; {err}"
        self.fallbacks.append(f"{name}: {why}")
        self.chain.pop(0)
        if not self.explicit:
            give_up(name, why)
            nxt = f"; drawing with {self.chain[0]}" if self.chain else ""
            _log.warning(f"note: {name} renderer given up ({why}){nxt}")

    def close(self) -> None:
        if self._impl is not None:
            self._impl[2].close()
            self._impl = None

    def __enter__(self) -> Renderer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def legend_width(width: int) -> int:
    """Pixels of the colour bar right of panels ``width`` pixels wide in all: 110, a quarter at most."""
    return min(110, width // 4)


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
        backend: ``"auto"`` or one of :data:`BACKENDS`.
        background: RGB in [0, 1].

    Returns:
        The path written; :func:`png_backend` reads back which backend drew it.
    """
    return render_panels_png([geometries], path, width=width, height=height, camera=camera, legend=legend,
                             backend=backend, background=background)


def render_panels_png(panels, path: str | Path, *, width: int = 800, height: int = 600,
                      camera: Camera | None = None, legend: ScalarLegend | None = None,
                      backend: str = "auto", background=BACKGROUND) -> Path:
    """:func:`render_png` of several panels drawn separately and joined left to right
    (:meth:`Renderer.render_panels`); ``panels`` is a list of drawable lists."""
    with Renderer(width, height, backend=backend, background=background) as renderer:
        image = renderer.render_panels(panels, camera=camera, legend=legend)
    return save_png(image, path, backends=renderer.backends_used, fallbacks=renderer.fallbacks)


def save_png(image: np.ndarray, path: str | Path, *, backends, fallbacks=()) -> Path:
    """Write (H, W, 3) uint8 ``image`` with the backends that drew it (and why others were
    given up) in its PNG text metadata; the folder is created."""
    from PIL import Image
    from PIL.PngImagePlugin import PngInfo

    info = PngInfo()
    info.add_text(PNG_BACKEND_KEY, ",".join(dict.fromkeys(backends)) or "none")
    if fallbacks:
        info.add_text("pointabstract:fallbacks", " | ".join(fallbacks))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(image).save(path, pnginfo=info)
    return path


def png_backend(path: str | Path) -> str | None:
    """The backend(s) recorded in a PNG written here (comma-separated), None if it has none."""
    from PIL import Image

    with Image.open(path) as image:
        return image.text.get(PNG_BACKEND_KEY) if hasattr(image, "text") else None


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
