"""The run manifest, ``<log.out_dir>/.pointabstract-run.json``: the names in a run folder that
``train`` wrote there (its config, logs, checkpoints, report and figures, the split it trained
on), recorded before each is first written. A later ``train`` into the folder replaces only
those; a file of the same name that no run of its own wrote (your notes called ``report.md``,
the preset being trained saved as ``config.yaml``) is refused unless ``--overwrite`` names it
(:func:`~pointabstract.engine.run_dir.claim_run_folder`). :func:`record_split` writes the split a
run trains on (``split.json``) beside it."""

from __future__ import annotations

import json
import logging
import os
import shutil
from collections.abc import Iterable
from pathlib import Path

__all__ = ["RUN_MANIFEST", "foreign_run_files", "read_run_manifest", "record_run_files", "record_split",
           "remove_run_files"]

_log = logging.getLogger(__name__)  # notes: pointabstract/_log.py

RUN_MANIFEST = ".pointabstract-run.json"


def read_run_manifest(out: str | Path) -> set[str] | None:
    """The names a run of its own wrote into ``out``, or None (no manifest, or not one of ours)."""
    try:
        record = json.loads((Path(out) / RUN_MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    files = record.get("files") if isinstance(record, dict) else None
    return set(files) if isinstance(files, list) and all(isinstance(f, str) for f in files) else None


def record_run_files(out: str | Path, names: Iterable[str]) -> None:
    """Add ``names`` to the manifest of ``out`` (written atomically; unchanged names write nothing).
    Call it before writing a file, so a kill mid-write never leaves a file the manifest misses."""
    out = Path(out)
    known = read_run_manifest(out) or set()
    if known.issuperset(names):
        return
    record = {"tool": "pointabstract train", "files": sorted(known | set(names))}
    tmp = out / f".{RUN_MANIFEST}.tmp-{os.getpid()}"
    tmp.write_text(json.dumps(record, indent=1))
    os.replace(tmp, out / RUN_MANIFEST)


def foreign_run_files(out: str | Path, names: Iterable[str]) -> list[str]:
    """Those of ``names`` present in ``out`` that no run of its own wrote there (all of them when
    the folder has no manifest), in the order given."""
    own = read_run_manifest(out) or set()
    return [name for name in names if (Path(out) / name).exists() and name not in own]


def remove_run_files(out: str | Path, names: Iterable[str]) -> list[str]:
    """Delete ``names`` (files or folders) from ``out`` and forget them in its manifest; returns
    those that existed."""
    out = Path(out)
    removed = [name for name in names if (out / name).exists() or (out / name).is_symlink()]
    for name in removed:
        target = out / name
        shutil.rmtree(target) if target.is_dir() and not target.is_symlink() else target.unlink()
    known = read_run_manifest(out)
    if known is not None and known & set(removed):
        (out / RUN_MANIFEST).unlink()
        record_run_files(out, known - set(removed))
    return removed


def record_split(out: str | Path, dataset, *, resumed: bool) -> None:
    """Keep the split a run trains on: write ``dataset.split_record`` (a dataset that makes its
    split from the files found, ``data.dataset=folder``) to ``out/split.json`` when the folder has
    none, or say in one line how many files found now the recorded split leaves out (rank 0).
    Datasets with fixed splits (ModelNet, ShapeNet) have no record: nothing is written."""
    record, path = getattr(dataset, "split_record", None), Path(out) / "split.json"
    if record is None:
        return
    new = getattr(dataset, "new_files", [])
    if new:
        _log.warning(f"note: {len(new)} shape file(s) under {dataset.root} are not in the split this run "
                     f"trained on ({path}): left out of train and test (train a new run to use them)")
    if path.is_file():
        return
    if resumed:
        _log.warning(f"note: {out} held no split.json (a run of an earlier version): the split made now from "
                     f"the files under {dataset.root} is recorded there and kept")
    record_run_files(out, ["split.json"])
    tmp = path.with_name(f".split.json.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(record, indent=1))
    os.replace(tmp, path)
