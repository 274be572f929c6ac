"""Benchmark records (the markdown / JSON files under ``runs/bench/`` or ``--out``): written
atomically, and never by a run that measured nothing.

A record is the result of a run that may have taken hours; a user compares the next run with
it. So a benchmark that measured nothing (options that select nothing, every run failed)
refuses with one line and leaves the previous record as it was, and every write goes to a
temporary file beside the record, renamed over it at the end: an interrupt (Ctrl-C, a kill,
a full disk) leaves the previous record whole. Benchmarks also check their options before
any work (see each ``main``), so an empty selection is refused in seconds, not after hours.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from .. import _validate as V

__all__ = ["check_at_least", "kept", "write_records"]


def kept(paths) -> str:
    """``"a.md is left as it was"`` / ``"a.md and a.json are left as they were"``."""
    names = [str(p) for p in paths]
    if len(names) == 1:
        return f"{names[0]} is left as it was"
    return f"{', '.join(names[:-1])} and {names[-1]} are left as they were"


def check_at_least(option: str, value, low: int, note: str = "") -> None:
    """``value`` an int >= ``low``, in the package's wording (:func:`~pointabstract._validate.check_int`):
    ``--seeds must be a positive int (training runs per routing), got 0``, ``--workers must be an
    int >= 0, got -1``."""
    V.check_int(option, value, low=low, note=f" ({note})" if note else "")


def write_records(texts: Mapping[str | Path, str], *, measured: int, what: str,
                  reason: str = "") -> list[Path]:
    """Write every ``{path: text}`` atomically, or nothing when ``measured`` is 0.

    All the texts are written to temporary files (``.<name>.tmp-<pid>`` beside each path, the
    pattern the run-folder clean-up knows) before the first is renamed over its record, so an
    interrupt leaves the previous records whole and no temporary behind.

    Args:
        texts: record path -> its full text; missing folders are created.
        measured: how many results the run measured (rows of its table).
        what: the benchmark, for the message (``"bench capsules"``).
        reason: why nothing was measured, when known (shown in the message).

    Returns:
        the paths written, in the order given.

    Raises:
        ValueError: ``measured`` is 0 (nothing is written, not even a folder).
        IsADirectoryError: a record path is a folder.
        PermissionError: a record is read-only (the user protected it; nothing is written).
    """
    paths = [Path(p) for p in texts]
    if measured < 1:
        raise ValueError(f"{what} measured nothing{f' ({reason})' if reason else ''}, so nothing is written "
                         f"({kept(paths)})")
    for path in paths:
        if path.is_dir():
            raise IsADirectoryError(f"{path} is a folder, not a record file")
        if path.exists() and not os.access(path, os.W_OK):  # a rename would bypass the protection
            raise PermissionError(f"{path} is read-only, so nothing is written ({kept(paths)})")
    temporaries = []
    try:
        for path, text in zip(paths, texts.values()):
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
            temporaries.append(tmp)
            with open(tmp, "w") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
        for tmp, path in zip(temporaries, paths):
            os.replace(tmp, path)
    finally:
        for tmp in temporaries:
            if tmp.exists():
                tmp.unlink()
    return paths
