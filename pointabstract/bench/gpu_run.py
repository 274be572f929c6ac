"""Child processes of ``pointabstract bench gpu``: one command under a time cap, its output
appended to a log, and the numba kernels compiled in parallel processes.

A command that outlives its cap is killed with the processes it started (it runs in a session of
its own, ended by its process-group id), so a hung section cannot hold the others up.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["last_line", "run_command", "run_kernels"]


def last_line(text: str) -> str:
    """The last non-blank line of ``text`` (shortened to 300 characters), or ``"no output"``."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else "no output"


def _start(cmd: list[str], log: Path, env: dict, cwd: Path | None) -> subprocess.Popen:
    with open(log, "a") as f:
        f.write(f"$ {' '.join(cmd)}\n")
        f.flush()
        return subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=env, cwd=cwd,
                                start_new_session=True)


def _stop(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the group this command leads (start_new_session)
    except ProcessLookupError:
        pass
    proc.wait()


def run_command(cmd: list[str], log: Path, cap_s: float, env: dict, *, cwd: Path | None = None,
                ok_codes: tuple[int, ...] = (0,)) -> str:
    """Run ``cmd`` with stdout and stderr appended to ``log``, for at most ``cap_s`` seconds.

    Returns ``""`` when it exited with one of ``ok_codes``, else one line: ``"timeout after N s
    (last output: ...)"`` or ``"exit code C: <its last output line>"``.
    """
    offset = log.stat().st_size if log.exists() else 0
    proc = _start(cmd, log, env, cwd)
    try:
        code = proc.wait(timeout=cap_s)
    except subprocess.TimeoutExpired:
        _stop(proc)
        return f"timeout after {cap_s:.0f} s (last output: {last_line(_since(log, offset))})"
    if code in ok_codes:
        return ""
    return f"exit code {code}: {last_line(_since(log, offset))}"


def _since(log: Path, offset: int) -> str:
    with open(log, errors="replace") as f:
        f.seek(offset)
        return f.read()


def run_kernels(log: Path, cap_s: float, env: dict) -> dict:
    """Compile the numba kernels, one process per group of ``ops.kernels.warm.GROUPS`` and pass
    (parallel / serial drivers) side by side; a section result (``status``, ``summary``).
    Skipped when numba does not import."""
    import importlib.util

    from ..ops.kernels.warm import GROUPS, PASSES

    if importlib.util.find_spec("numba") is None:
        return {"status": "skipped", "summary": "skipped: numba not importable (the ops use torch)"}
    start = time.monotonic()
    jobs = [f"{group}:{which}" for group in GROUPS for which in PASSES]
    procs = {name: _start([sys.executable, "-m", "pointabstract.ops.kernels.warm", name], log, env, None)
             for name in jobs}
    errors = []
    for name, proc in procs.items():
        try:
            code = proc.wait(timeout=max(0.1, cap_s - (time.monotonic() - start)))
        except subprocess.TimeoutExpired:
            _stop(proc)
            errors.append(f"{name}: timeout after {cap_s:.0f} s")
            continue
        if code != 0:
            errors.append(f"{name}: exit code {code}")
    if errors:
        return {"status": "FAILED", "summary": "; ".join(errors) + " (see bench.log)"}
    return {"status": "ok", "summary": f"{len(jobs)} processes compiled the kernels side by side "
                                       f"({len(GROUPS)} groups x {' / '.join(PASSES)} drivers) in "
                                       f"{time.monotonic() - start:.1f} s"}
