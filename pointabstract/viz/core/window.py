"""The Open3D window of ``pointabstract view``: key callbacks, scripted key presses, screenshots.

:func:`run_viewer` opens a legacy Open3D window (``VisualizerWithKeyCallback``) on any viewer
state (:mod:`pointabstract.viz.tasks` describes what a state offers) and runs until it is closed;
``keys`` replays key presses one per frame and then closes the window (scripted runs under Xvfb).
Without a display it raises :class:`NoDisplayError` saying to use ``--png``.
"""

from __future__ import annotations

import os
from pathlib import Path

from .colors import GREY
from .render import Camera, scene_points

__all__ = ["NO_DISPLAY", "WINDOW_KEYS", "NoDisplayError", "has_display", "key_help", "run_viewer"]

# the keys the window handles itself for every state; each state's KEYMAP ends with them
WINDOW_KEYS = {
    "S": (ord("S"), "save a screenshot"),
    "H": (ord("H"), "print this key map"),
}

NO_DISPLAY = ("no display (DISPLAY is not set): render the scene to a file with --png OUT.png, "
              "or run under a virtual display: xvfb-run -a pointabstract view ...")


class NoDisplayError(RuntimeError):
    """No display to open a window on."""


def has_display() -> bool:
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def key_help(keymap: dict) -> str:
    """A state's key map (token -> (key code, what it does)) as printable lines."""
    lines = ["keys:"] + [f"  {key:>5}  {doc}" for key, (_, doc) in keymap.items()]
    return "\n".join(lines + ["  Q/Esc  quit   (mouse: drag rotates, wheel zooms)"])


def run_viewer(state, *, keys: list[str] | None = None, screenshot_dir: str | Path = ".",
               width: int = 1280, height: int = 720, printer=print) -> list[Path]:
    """Open the window and run until it is closed (or until the scripted ``keys`` are done).

    Args:
        state: what to show: a state of :data:`pointabstract.viz.tasks.STATES` (or the
            part-segmentation view's).
        keys: scripted run: tokens of the state's ``KEYMAP`` pressed one per frame, then the window closes.
        screenshot_dir: where ``S`` saves PNGs.
        width, height: window size in pixels.
        printer: where status lines and the key map go.

    Returns:
        The screenshots saved.
    """
    import open3d as o3d

    if not has_display():
        raise NoDisplayError(NO_DISPLAY)
    keymap = state.KEYMAP
    unknown = [k for k in keys or [] if k not in keymap]
    if unknown:
        raise ValueError(f"keys {unknown} are not in the key map {list(keymap)}")
    vis = o3d.visualization.VisualizerWithKeyCallback()
    if not vis.create_window(window_name=f"pointabstract view: {state.TITLE}", width=width, height=height):
        raise NoDisplayError(f"could not open a window on DISPLAY={os.environ.get('DISPLAY')!r}; "
                             "try --png OUT.png")
    window = _Window(o3d, vis, state, Path(screenshot_dir), printer, scripted=keys is not None)
    for token, (code, _) in keymap.items():
        vis.register_key_callback(code, lambda _vis, t=token: window.apply(t))
    if keys is not None:
        pending = list(keys)  # one key per frame, then close
        vis.register_animation_callback(lambda _v: window.apply(pending.pop(0)) if pending
                                        else window.close())
    printer(key_help(keymap))
    printer(state.status())
    window.show(reset=True)
    vis.run()
    vis.destroy_window()
    return window.saved


class _Window:
    """The key handlers of one open window (each returns whether the scene must be redrawn)."""

    def __init__(self, o3d, vis, state, screenshot_dir: Path, printer, *, scripted: bool):
        self.o3d, self.vis, self.state, self.dir, self.printer = o3d, vis, state, screenshot_dir, printer
        self.scripted = scripted
        self.saved: list[Path] = []

    def show(self, reset: bool) -> None:
        drawables = self.state.scene().geometries
        self.vis.clear_geometries()
        for d in drawables:
            self.vis.add_geometry(d["geometry"], reset_bounding_box=reset)
        opt = self.vis.get_render_option()
        opt.point_size, opt.light_on = 7.0, False  # unlit: the exact palette colours
        if reset:  # the same fitted three-quarter view as the PNGs
            _fit_view(self.o3d, self.vis, drawables)

    def apply(self, key: str) -> bool:
        state = self.state
        if key == "H":
            self.printer(key_help(state.KEYMAP))
            return False
        if key == "S":
            self.screenshot()
            return False
        if key == "P":
            picked = _pick(self.o3d, state, auto_close=self.scripted)
            if picked is None:
                self.printer("no point picked (shift+click a point, then press Q)")
                return False
            self.printer(state.set_query(picked))
        else:
            self.printer(state.press(key))
        self.show(reset=key in ("right", "left", "V"))
        return True

    def screenshot(self) -> None:
        out = self.dir / self.state.screenshot_name(len(self.saved) + 1)
        out.parent.mkdir(parents=True, exist_ok=True)
        self.vis.capture_screen_image(str(out), do_render=True)
        self.saved.append(out)
        self.printer(f"saved {out}")

    def close(self) -> bool:
        self.vis.close()
        return False


def _fit_view(o3d, vis, drawables) -> None:
    control = vis.get_view_control()
    params = control.convert_to_pinhole_camera_parameters()
    w, h = params.intrinsic.width, params.intrinsic.height
    intrinsic, extrinsic = Camera().matrices(scene_points(drawables), w, h)
    params.intrinsic = o3d.camera.PinholeCameraIntrinsic(w, h, intrinsic)
    params.extrinsic = extrinsic
    control.convert_from_pinhole_camera_parameters(params, allow_arbitrary=True)


def _pick(o3d, state, *, auto_close: bool) -> int | None:
    """A second window on the feature panel's points; returns the last shift+clicked index."""
    pos, _ = state.points()
    cloud = o3d.geometry.PointCloud(o3d.utility.Vector3dVector(pos.double().numpy()))
    cloud.paint_uniform_color(GREY)
    editor = o3d.visualization.VisualizerWithEditing()
    editor.create_window(window_name="pick the query: shift+click a point, then Q", width=900, height=700)
    editor.add_geometry(cloud)
    if auto_close:  # scripted runs: show one frame and close
        editor.register_animation_callback(lambda v: v.close() or False)
    editor.run()
    editor.destroy_window()
    picked = editor.get_picked_points()
    return int(picked[-1]) if picked else None
