"""Rendering backends, tried in order until one draws: a stuck or broken one is given up fast.

- ``"offscreen"``: Open3D's Filament ``OffscreenRenderer``. Without a GPU it runs on Mesa's
  CPU drivers (Vulkan llvmpipe from Debian's ``mesa-vulkan-drivers``, or EGL). Exact colours,
  one point size per geometry.
- ``"legacy"``: the legacy ``open3d.visualization.Visualizer`` in a hidden window: headless
  EGL when there is no display, GLX on ``$DISPLAY`` otherwise; when that fails and ``DISPLAY``
  is unset, a virtual X server (``Xvfb``, Debian package ``xvfb``) is started for it once.
- ``"software"``: :mod:`.software`, numpy only. Always works; the last resort.

Why a chain and short time limits: Filament's Vulkan backend over llvmpipe was seen to
*livelock* on some scenes (llvmpipe's rasteriser threads spin at full CPU, the frame never
completes; in a watched worker process a 6-geometry side-by-side scene never finished while
the same arrays rendered in 4-9 s in a plain ``python`` process, and in the worker too once
it had drawn a small warm-up frame first: it cannot be predicted from the scene alone). A
render here takes 0.1-3 s once the renderer is warm, so each native backend runs in a worker
process (:mod:`._worker`) that must start (and draw a warm-up frame) within
``start_timeout_s`` and answer each render within ``timeout_s`` (seconds); otherwise it is
killed and the *next* backend draws, never the same one again in this process.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess

import numpy as np

from ... import _validate as V
from .software import splat

__all__ = ["BACKENDS", "RenderError", "SoftwareBackend", "WorkerBackend", "backend_chain", "open_backend",
           "start_xvfb"]

BACKENDS = ("offscreen", "legacy", "software")
_GIVEN_UP: dict[str, str] = {}  # backend -> why "auto" skips it for the rest of this process
_XVFB: list[subprocess.Popen] = []


class RenderError(RuntimeError):
    """No rendering backend could draw (or the one asked for failed); the message says why."""


def backend_chain(backend: str = "auto") -> list[str]:
    """The backends to try, in order: ``"auto"`` gives every backend not given up in this
    process (the software splatter always stays); a name gives that backend alone."""
    if backend in BACKENDS:
        return [backend]
    if backend != "auto":
        raise ValueError(f"backend must be 'auto' or one of {list(BACKENDS)}, got {backend!r}")
    return [name for name in BACKENDS if name not in _GIVEN_UP or name == "software"]


def give_up(name: str, why: str) -> None:
    """Remember for this process that ``auto`` should skip native backend ``name``."""
    if name != "software":
        _GIVEN_UP[name] = why


def open_backend(name: str, width: int, height: int, *, timeout_s: float, start_timeout_s: float):
    """A started backend with ``render(items, intrinsic, extrinsic, background) -> (H, W, 3) uint8``."""
    if name == "software":
        return SoftwareBackend(width, height)
    backend = WorkerBackend(name, width, height, timeout_s=timeout_s, start_timeout_s=start_timeout_s)
    backend.start()
    return backend


class SoftwareBackend:
    """The numpy splatter behind the backend interface (in this process: it cannot hang)."""

    name = "software"

    def __init__(self, width: int, height: int):
        self.width, self.height = width, height

    def render(self, items, intrinsic, extrinsic, background) -> np.ndarray:
        return splat(items, intrinsic, extrinsic, background, self.width, self.height)

    def close(self) -> None:
        pass


class WorkerBackend:
    """A native Open3D renderer in a worker process, killed when it does not answer in time."""

    def __init__(self, name: str, width: int, height: int, *, timeout_s: float, start_timeout_s: float,
                 target=None):
        """``target``: the worker function (default :func:`._worker.worker`; tests pass stand-ins)."""
        V.check_choice("name", name, ("offscreen", "legacy"))
        V.check_positive("timeout_s", timeout_s)
        V.check_positive("start_timeout_s", start_timeout_s)
        self.name, self.width, self.height = name, width, height
        self.timeout_s, self.start_timeout_s = float(timeout_s), float(start_timeout_s)
        self.proc = self.conn = None
        self.target = target
        self.start_seconds: float | None = None  # start-up and warm-up frame, as the worker timed it

    def start(self) -> None:
        """Spawn the worker and wait for its warm-up frame; RenderError when it fails or stalls."""
        try:
            import open3d  # noqa: F401  (fail here, with the reason, rather than in the worker)
        except (ImportError, OSError) as err:
            raise RenderError(f"open3d cannot be imported ({err}); install pointabstract[viz] and the "
                              "Debian packages libgl1 libegl1 libusb-1.0-0 libgomp1") from None
        import multiprocessing as mp

        from ._worker import worker

        ctx = mp.get_context("spawn")  # a fresh interpreter: no inherited threads or GL state
        self.conn, child = ctx.Pipe()
        args = (child, self.name, self.width, self.height)
        self.proc = ctx.Process(target=self.target or worker, args=args, daemon=True)
        self.proc.start()
        child.close()
        try:
            status, value = self._receive(self.start_timeout_s, "to start and draw a warm-up frame")
        except RenderError as err:
            raise RenderError(f"could not start: {err}") from None
        if status != "ready":
            self.close()
            raise RenderError(f"could not start: {value}")
        self.start_seconds = float(value)

    def render(self, items, intrinsic, extrinsic, background) -> np.ndarray:
        self.conn.send((items, intrinsic, extrinsic, np.asarray(background, float)))
        status, value = self._receive(self.timeout_s, "to draw the frame")
        if status != "ok":
            self.close()
            raise RenderError(f"failed: {value}")
        return value

    def _receive(self, timeout: float, what: str):
        if not self.conn.poll(timeout):
            self.close()  # stuck (a livelocked driver never returns): kill it
            raise RenderError(f"took longer than {timeout:g} s {what} (stuck; worker killed)")
        try:
            return self.conn.recv()
        except EOFError:  # the worker died, e.g. a driver aborted the process
            self.proc.join(5)
            code = self.proc.exitcode
            self.close()
            raise RenderError(f"the render worker exited with code {code}") from None

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
        if self.proc is not None:
            self.proc.join(1)
            if self.proc.is_alive():
                self.proc.kill()
                self.proc.join(5)
        self.proc = self.conn = None


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
