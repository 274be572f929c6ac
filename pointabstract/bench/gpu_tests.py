"""The test half of ``pointabstract bench gpu``: which tests are CUDA tests, the device they run
on, the pytest command that runs them and what its JUnit report says.

The CUDA tests carry the ``cuda`` marker (registered in pyproject.toml) and run on
:func:`device_under_test`: CUDA, or the CPU when ``$POINTABSTRACT_TEST_DEVICE=cpu`` (what the
check's CPU dry run sets, so the tests' own code is exercised before a GPU is at hand; they then
compare the CPU with itself). Without either they are collected and skipped.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

__all__ = ["DEVICE_ENV", "collect_command", "count_collected", "cuda_test_files", "device_under_test",
           "pytest_command", "read_junit"]

DEVICE_ENV = "POINTABSTRACT_TEST_DEVICE"
_MARK = re.compile(r"pytest\.mark\.cuda\b")


def device_under_test():
    """The torch device the ``cuda``-marked tests run on: ``$POINTABSTRACT_TEST_DEVICE`` (``cpu``
    or ``cuda[:i]``), else ``cuda``; None when that is CUDA and torch sees no GPU (tests skip)."""
    import torch

    name = os.environ.get(DEVICE_ENV, "cuda")
    if re.fullmatch(r"cpu|cuda(:\d+)?", name) is None:
        raise ValueError(f"${DEVICE_ENV} must be cpu, cuda or cuda:N, got {name!r}")
    if name.startswith("cuda") and not torch.cuda.is_available():
        return None
    device = torch.device(name)
    if device.type == "cuda" and device.index is None:  # tensors report cuda:0, never bare "cuda"
        device = torch.device("cuda", torch.cuda.current_device())
    return device


def host_syncs(call) -> list[str]:
    """The file:line of every host synchronisation torch reports (``set_sync_debug_mode("warn")``)
    while ``call()`` runs on a CUDA device (the cuda tests count them)."""
    import torch

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            call()
        finally:
            torch.cuda.set_sync_debug_mode("default")
    return [f"{w.filename}:{w.lineno}" for w in caught if "synchroniz" in str(w.message).lower()]


def cuda_test_files(tests: Path) -> list[Path]:
    """The test modules under ``tests`` that use the ``cuda`` marker, sorted (pytest then imports
    only these, not the whole suite: seconds instead of a minute)."""
    return sorted(p for p in Path(tests).rglob("test_*.py") if _MARK.search(p.read_text(encoding="utf-8")))


def pytest_command(files: list[Path], *, junit: Path, timeout_s: float,
                   extra: list[str] | None = None) -> list[str]:
    """``python -m pytest`` running the ``cuda``-marked tests of ``files`` (slow ones included),
    with a JUnit report at ``junit``; each test stopped after ``timeout_s`` where pytest-timeout
    is installed."""
    import importlib.util

    timeout = [f"--timeout={max(1, int(timeout_s))}"] if importlib.util.find_spec("pytest_timeout") else []
    return [sys.executable, "-m", "pytest", "-m", "cuda", "-q", "-rfEs", "-p", "no:cacheprovider",
            f"--junitxml={junit}", *timeout, *(extra or []), *map(str, files)]


def collect_command(files: list[Path]) -> list[str]:
    """``python -m pytest --collect-only`` of the ``cuda``-marked tests of ``files``."""
    return [sys.executable, "-m", "pytest", "-m", "cuda", "-q", "--collect-only", "-p", "no:cacheprovider",
            *map(str, files)]


def count_collected(files: list[Path], *, cwd: Path | None = None, timeout_s: float = 300) -> tuple[int, str]:
    """(number of ``cuda``-marked tests pytest collects from ``files``, its last output line);
    -1 when collection failed."""
    proc = subprocess.run(collect_command(files), capture_output=True, text=True, cwd=cwd, timeout=timeout_s)
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    last = lines[-1] if lines else (proc.stderr.strip().splitlines() or ["no output"])[-1]
    found = re.match(r"(\d+)(?:/\d+)? tests? collected", last)
    if proc.returncode != 0 or found is None:
        return -1, last
    return int(found.group(1)), last


def read_junit(path: Path) -> dict:
    """Counts of a pytest JUnit report and the failures: ``{"passed", "failed", "errors",
    "skipped", "failures": ["test id: first line of the message", ...]}``."""
    root = ET.parse(path).getroot()
    counts = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
    failures = []
    for case in root.iter("testcase"):
        outcome = next((child for child in case if child.tag in ("failure", "error", "skipped")), None)
        key = {"failure": "failed", "error": "errors", "skipped": "skipped", None: "passed"}[
            None if outcome is None else outcome.tag]
        counts[key] += 1
        if key in ("failed", "errors"):
            name = f"{case.get('classname', '')}::{case.get('name', '')}"
            message = (outcome.get("message") or outcome.text or "").strip().splitlines() or [""]
            failures.append(f"{name}: {message[0][:200]}")
    return {**counts, "failures": failures}
