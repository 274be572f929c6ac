"""ruff over the code base, when it is installed (it is in the dev extra)."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_is_clean():
    beside = Path(sys.executable).parent / "ruff"  # the venv's own ruff first
    ruff = str(beside) if beside.exists() else shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff not installed")
    result = subprocess.run([ruff, "check", "pointabstract", "tests", "tools"], cwd=ROOT,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
