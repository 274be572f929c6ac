"""Shared test settings: hypothesis profile, real-data location, small helpers."""

from __future__ import annotations

import logging
import os

import pointabstract  # noqa: F401  (first: sets OMP_WAIT_POLICY before torch loads OpenMP)
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# Compiled kernels make the first call slow: no per-example deadline.
settings.register_profile("default", deadline=None, max_examples=40,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

REALDATA = Path(__file__).resolve().parents[1].parent / "shared" / "realdata"


@pytest.fixture
def realdata() -> Path:
    """``../shared/realdata`` beside the project; tests using it skip when it is absent."""
    if not REALDATA.is_dir():
        pytest.skip(f"real-data subsets not found at {REALDATA}")
    return REALDATA


@pytest.fixture(autouse=True)
def _no_compile_notice(monkeypatch):
    """The CLI's one-time "compiling pointabstract kernels" line depends on the numba cache of
    this checkout (kernels the suite never calls stay uncompiled), so tests that read stderr
    would depend on it; the notice itself is tested in tests/test_cli.py."""
    from pointabstract import cli

    monkeypatch.setattr(cli, "KERNEL_COMMANDS", ())


@pytest.fixture(scope="session")
def _shape_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("pointabstract-cache")


@pytest.fixture(autouse=True)
def _cache_outside_home(_shape_cache, monkeypatch):
    """data.dataset=folder samples into $POINTABSTRACT_CACHE (default ~/.cache/pointabstract):
    tests write into a temporary folder instead, never into the user's cache."""
    if "POINTABSTRACT_CACHE" not in os.environ:
        monkeypatch.setenv("POINTABSTRACT_CACHE", str(_shape_cache))


@pytest.fixture
def notes(caplog):
    """The library's notes (``logging`` records of "pointabstract", pointabstract/_log.py) read as
    capsys reads output: ``notes()`` is their messages, one per line, since the last call."""
    caplog.set_level(logging.INFO, logger="pointabstract")

    def read() -> str:
        text = "".join(record.getMessage() + "\n" for record in caplog.records
                       if record.name.startswith("pointabstract"))
        caplog.clear()
        return text

    return read
