"""The protocol a benchmark run was trained under, recorded beside its metrics.

Two runs of one comparison are comparable only when the same code ran with the same thread
count on the same kind of device: the thread count changes the order in which floats are summed
(BLAS and the compiled kernels split their sums by thread), and that moves a 3-seed mean by a
point or two. So every run that ``bench curves`` trains writes ``protocol.json`` into its folder
before it starts::

    {"commit": "1e77c13", "source": "<sha256 of the training code, 16 hex>", "threads": 1,
     "torch": "2.13.0", "device": "cpu"}

and a finished run is reused only when its protocol matches the current one on :data:`MATCHED`.
``source`` hashes the files a training run executes (:data:`TRAINING_CODE`: ops, nn, models,
data, engine, the presets and the package's top-level modules), not the docs, the benchmarks'
reporting, the viewer or the predictor, so a commit that changes only those keeps the runs;
the commit is recorded for the reader (``+changes`` when the training code differs from it).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

__all__ = ["MATCHED", "TRAINING_CODE", "current_protocol", "describe", "differences", "read_protocol",
           "source_hash", "write_protocol"]

PACKAGE = Path(__file__).resolve().parents[1]  # pointabstract/
TRAINING_CODE = ("__init__.py", "_lazy.py", "_openmp.py", "_validate.py", "configs", "data", "engine",
                 "models", "nn", "ops")
MATCHED = ("source", "threads", "torch", "device")  # what must agree for a run to be reused
FILE = "protocol.json"
_SUFFIXES = (".py", ".yaml")


def _training_files(package: Path) -> list[Path]:
    files = []
    for name in TRAINING_CODE:
        path = package / name
        if path.is_file():
            files.append(path)
        elif path.is_dir():
            files += [p for p in path.rglob("*") if p.suffix in _SUFFIXES and p.is_file()
                      and "__pycache__" not in p.parts]
    return sorted(files)


def source_hash(package: Path = PACKAGE) -> str:
    """sha256 (first 16 hex digits) over the relative path and bytes of every ``.py`` / ``.yaml``
    file of the training code (:data:`TRAINING_CODE`) under ``package``."""
    digest = hashlib.sha256()
    for path in _training_files(package):
        digest.update(path.relative_to(package).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _commit(package: Path) -> str:
    """The checkout's short commit, ``+changes`` when the training code differs from it;
    ``unknown`` outside a git checkout."""
    paths = [str(package / name) for name in TRAINING_CODE if (package / name).exists()]
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=package, capture_output=True,
                              text=True, timeout=30, check=True).stdout.strip()
        status = subprocess.run(["git", "status", "--porcelain", "--", *paths], cwd=package,
                                capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head + ("+changes" if any(line.endswith(_SUFFIXES) for line in status.splitlines()) else "")


def _device(device: str) -> str:
    import torch

    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and torch.cuda.is_available():
        return f"{device} ({torch.cuda.get_device_name(torch.device(device))})"
    return device


def current_protocol(threads: int, *, device: str = "auto", package: Path = PACKAGE) -> dict:
    """The protocol of a run trained now with ``threads`` torch threads on ``device``."""
    import torch

    return {"commit": _commit(package), "source": source_hash(package), "threads": int(threads),
            "torch": torch.__version__, "device": _device(device)}


def differences(saved: dict | None, current: dict) -> list[str]:
    """What differs on :data:`MATCHED` (``["threads 2, now 1"]``); ``["no protocol recorded"]``
    for a run written before protocols were recorded; ``[]`` when the run may be reused."""
    if saved is None:
        return ["no protocol recorded"]
    return [f"{key} {saved.get(key)}, now {current[key]}" for key in MATCHED
            if saved.get(key) != current[key]]


def describe(protocol: dict) -> str:
    """One line: ``commit 1e77c13, training code 3f2a..., 1 thread per run, torch 2.13.0, cpu``."""
    threads = protocol.get("threads")
    return (f"commit {protocol.get('commit')}, training code {protocol.get('source')}, {threads} "
            f"thread{'s' if threads != 1 else ''} per run, torch {protocol.get('torch')}, "
            f"{protocol.get('device')}")


def read_protocol(run: Path) -> dict | None:
    """The protocol recorded in ``run``, or None (none recorded, or unreadable)."""
    try:
        data = json.loads((Path(run) / FILE).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_protocol(run: Path, protocol: dict) -> Path:
    """Write ``run/protocol.json`` atomically (temporary file + rename); returns its path."""
    path = Path(run) / FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{FILE}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(protocol, indent=2) + "\n")
    os.replace(tmp, path)
    return path
