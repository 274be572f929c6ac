import time

import numpy as np
import pytest

from pointabstract.viz.core import backends as B
from pointabstract.viz.core import render as R
from pointabstract.viz.core.render import Renderer
from tests.fixtures import cloud
from tests.viz._stand_ins import crashes as _crashes
from tests.viz._stand_ins import stuck_after_ready as _stuck_after_ready
from tests.viz._stand_ins import stuck_at_start as _stuck_at_start


def _scene():
    from pointabstract.viz.classification.scenes import neighbourhood_scene

    pos, feats = cloud(1, 40, 3, seed=1)[0], cloud(1, 40, 4, seed=2)[0]
    return neighbourhood_scene(pos, feats, 0, k=5, layout="feature").geometries


@pytest.fixture
def fresh(monkeypatch):
    """No backend given up by earlier tests in this process."""
    monkeypatch.setattr(B, "_GIVEN_UP", {})


def _fake_native(targets, calls):
    def open_backend(name, width, height, *, timeout_s, start_timeout_s):
        calls.append(name)
        if name == "software":
            return B.SoftwareBackend(width, height)
        backend = B.WorkerBackend(name, width, height, timeout_s=timeout_s, start_timeout_s=start_timeout_s,
                                  target=targets[name])
        backend.start()
        return backend
    return open_backend


def test_a_stuck_backend_is_killed_within_seconds_and_the_next_one_draws(o3d, fresh, monkeypatch):
    calls = []
    monkeypatch.setattr(R, "open_backend", _fake_native({"offscreen": _stuck_after_ready, "legacy": _crashes},
                                                        calls))
    monkeypatch.setenv("DISPLAY", ":99")  # no Xvfb retry in this test
    start = time.perf_counter()
    with Renderer(64, 48, timeout_s=1.0, start_timeout_s=30.0) as renderer:
        image = renderer.render(_scene())
        assert renderer.last_backend == "software" and calls == ["offscreen", "legacy", "software"]
        assert renderer.fallbacks[0] == "offscreen: took longer than 1 s to draw the frame (stuck; worker killed)"
        renderer.render(_scene())  # later renders go straight to the backend that works
        assert calls[-1] == "software" and renderer.backends_used == ["software", "software"]
    assert image.shape == (48, 64, 3) and (image == [219, 20, 20]).all(-1).any()
    assert time.perf_counter() - start < 45
    assert B.backend_chain("auto") == ["software"]  # given up for the rest of the process


def test_a_backend_stuck_at_start_is_killed(o3d):
    backend = B.WorkerBackend("offscreen", 8, 8, timeout_s=1, start_timeout_s=2, target=_stuck_at_start)
    with pytest.raises(B.RenderError, match=r"could not start: took longer than 2 s to start and draw a warm-up"):
        backend.start()
    assert backend.proc is None  # killed and forgotten


def test_a_crashing_worker_is_reported_and_skipped(o3d, fresh, monkeypatch):
    calls = []
    monkeypatch.setattr(R, "open_backend", _fake_native({"offscreen": _crashes, "legacy": _crashes}, calls))
    monkeypatch.setenv("DISPLAY", ":99")
    with Renderer(64, 48, start_timeout_s=30.0) as renderer:
        renderer.render(_scene())
    assert renderer.fallbacks == ["offscreen: could not start: the render worker exited with code 3",
                                  "legacy: could not start: the render worker exited with code 3"]


def test_an_explicit_backend_does_not_fall_back(o3d, fresh, monkeypatch):
    monkeypatch.setattr(R, "open_backend", _fake_native({"offscreen": _crashes}, []))
    with pytest.raises(B.RenderError, match=r"(?s)no rendering backend could draw here.*offscreen: could not "
                                            r"start.*backend='software'"):
        Renderer(64, 48, backend="offscreen").render(_scene())
    assert B.backend_chain("auto") == list(B.BACKENDS)  # an explicit failure is not remembered


def test_backend_chain_and_argument_errors(fresh):
    assert B.backend_chain() == ["offscreen", "legacy", "software"]
    assert B.backend_chain("legacy") == ["legacy"]
    B.give_up("software", "never")
    assert "software" in B.backend_chain()
    with pytest.raises(ValueError, match=r"backend must be 'auto' or one of \['offscreen', 'legacy', 'software'\], "
                                         r"got 'vulkan'"):
        B.backend_chain("vulkan")
    with pytest.raises(ValueError, match="timeout_s must be a positive finite number, got 0.0"):
        B.WorkerBackend("offscreen", 8, 8, timeout_s=0, start_timeout_s=1)
    with pytest.raises(ValueError, match=r"name must be one of \['offscreen', 'legacy'\], got 'software'"):
        B.WorkerBackend("software", 8, 8, timeout_s=1, start_timeout_s=1)


def test_real_native_backend_starts_and_draws_exact_colours(o3d, fresh):
    """The default worker: its warm-up frame and a render, on whatever native backend works here."""
    for name in ("offscreen", "legacy"):
        try:
            backend = B.open_backend(name, 64, 48, timeout_s=30.0, start_timeout_s=120.0)
        except B.RenderError:
            continue
        try:
            intrinsic, extrinsic = R.Camera().matrices(R.scene_points(_scene()), 64, 48)
            image = backend.render(R._plain(R._drawables(_scene())), intrinsic, extrinsic, np.ones(3))
        finally:
            backend.close()
        assert backend.start_seconds is not None and image.shape == (48, 64, 3)
        assert (image == [219, 20, 20]).all(-1).any()
        return
    pytest.skip("no native Open3D backend works here")
