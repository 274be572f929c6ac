"""The output folder of ``data synth``: it never destroys what it did not write.

A generated set carries a manifest (:data:`MANIFEST`: the options and every file written, with
its size). ``data synth --out DIR`` writes only into

- a folder that does not exist or is empty, or
- a folder holding nothing but an earlier set of its own (its manifest lists every file there),
  which ``overwrite=True`` replaces; without it the earlier set is kept and the run refused.

Anything else (a file the manifest does not list, a folder without a manifest: a user's real
dataset) is refused, with one line, before any work. An earlier set written by a version
without manifests is recognised by its exact file names and class list (no real dataset has
them) and treated as its own.

Generation is atomic: everything is written into a temporary folder beside the target (same
file system), the manifest last, then swapped in by two renames. An interrupt (Ctrl-C, a kill,
an error) leaves the previous set as it was and no partial set; the temporary folders of a
process that died are removed (or, if it died between the two renames, the previous set is
put back) by the next run.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["MANIFEST", "claim_output", "is_complete", "read_manifest", "staged_output"]

MANIFEST = ".pointabstract-synth.json"
_STAGING = re.compile(r"^\.(?P<name>.+)\.synth-(?P<kind>new|old)-(?P<pid>\d+)$")
# the files of a set written before manifests existed (<dir>/<file>, numbered files as a pattern)
_LEGACY = re.compile(r"^(modelnet40_ply_hdf5_2048/(ply_data_(train|test)\d+\.h5|shape_names\.txt|"
                     r"(train|test)_files\.txt)|shapenet_part_seg_hdf5_data/(ply_data_(train|val|test)\d+\.h5|"
                     r"all_object_categories\.txt|(train|val|test)_hdf5_file_list\.txt))$")


def _files(root: Path) -> list[str]:
    """Every file under ``root`` as a sorted list of '/'-joined relative paths."""
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if not p.is_dir())


def read_manifest(root: str | Path) -> dict | None:
    """The manifest of the set in ``root``, or None (no manifest, or not one of ours)."""
    path = Path(root) / MANIFEST
    try:
        manifest = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return manifest if isinstance(manifest, dict) and isinstance(manifest.get("files"), dict) else None


def is_complete(root: str | Path) -> bool:
    """Whether ``root`` holds a whole generated set: its manifest and every file it lists, at
    the size it lists."""
    root = Path(root)
    manifest = read_manifest(root)
    if manifest is None:
        return False
    return all((root / name).is_file() and (root / name).stat().st_size == size
               for name, size in manifest["files"].items())


def _legacy_set(root: Path, files: list[str]) -> bool:
    """A set written before manifests: only the layout's own file names, and a class list that
    is exactly one of the synthetic levels' (never a real ModelNet40 or ShapeNetPart folder).
    Compatibility shim, removed in 0.2.0 (docs/development.md#compatibility-shims)."""
    from .generator import LEVELS, level_classes

    if not files or not all(_LEGACY.match(name) for name in files):
        return False
    names = root / "modelnet40_ply_hdf5_2048" / "shape_names.txt"
    try:
        listed = tuple(names.read_text().split())
    except OSError:
        return False
    return any(listed == level_classes(level) for level in LEVELS)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _tidy_staging(root: Path) -> None:
    """Remove what a dead process left beside ``root``: a half-written new set is deleted; an
    earlier set moved aside is put back when ``root`` is missing (it died between the two
    renames of the swap), else deleted."""
    if not root.parent.is_dir():
        return
    for path in sorted(root.parent.iterdir()):
        match = _STAGING.match(path.name)
        if not match or match["name"] != root.name or _alive(int(match["pid"])):
            continue
        if match["kind"] == "old" and not root.exists():
            os.replace(path, root)
        else:
            shutil.rmtree(path, ignore_errors=True)


def _foreign(root: Path, files: list[str], manifest: dict | None) -> list[str]:
    """The files of ``root`` that data synth did not write (none for a set of an earlier version)."""
    own = set(manifest["files"]) | {MANIFEST} if manifest is not None else set()
    foreign = [name for name in files if name not in own]
    return [] if foreign and manifest is None and _legacy_set(root, files) else foreign


def claim_output(root: str | Path, *, overwrite: bool = False) -> str:
    """Check, before any work, that a set may be written to ``root``.

    Returns:
        ``"new"`` (missing or empty folder) or ``"replace"`` (an earlier set of its own, with
        ``overwrite``).

    Raises:
        NotADirectoryError: ``root`` is a file.
        FileExistsError: ``root`` holds a file ``data synth`` did not write (nothing is touched,
            ``overwrite`` or not), or an earlier set of its own and ``overwrite`` is False.
    """
    root = Path(root)
    _tidy_staging(root)
    if root.exists() and not root.is_dir():
        raise NotADirectoryError(f"{root} is a file, not a folder (--out must be a folder)")
    files = _files(root) if root.is_dir() else []
    if not files:
        return "new"
    manifest = read_manifest(root)
    foreign = _foreign(root, files, manifest)
    if foreign:
        raise FileExistsError(
            f"{root} holds {len(foreign)} file(s) that data synth did not write (e.g. {root / foreign[0]}): "
            "refused, nothing there is touched; give a new or empty folder as --out (the default is "
            "datasets/synthetic)")
    if not overwrite:
        what = (f"level {manifest.get('level')}, seed {manifest.get('seed')}" if manifest is not None
                else "written by an earlier version")
        raise FileExistsError(f"{root} already holds a synthetic set ({what}); pass --overwrite to replace "
                              "it (only its own files), or give another --out")
    return "replace"


@contextmanager
def staged_output(root: str | Path, options: dict) -> Iterator[Path]:
    """A temporary folder beside ``root`` to write a set into; on leaving the block normally,
    the manifest (``options`` and the files written, with sizes) is written last and the folder
    swapped in for ``root``. On an exception or interrupt the temporary folder is removed and
    ``root`` is left as it was."""
    root = Path(root)
    root.parent.mkdir(parents=True, exist_ok=True)
    new = root.parent / f".{root.name}.synth-new-{os.getpid()}"
    old = root.parent / f".{root.name}.synth-old-{os.getpid()}"
    shutil.rmtree(new, ignore_errors=True)
    new.mkdir()
    try:
        yield new
        files = {name: (new / name).stat().st_size for name in _files(new)}
        (new / MANIFEST).write_text(json.dumps({**options, "files": files}, indent=1, sort_keys=True))
        if root.exists():  # checked again: a file put into root while generating is never deleted
            current = _files(root)
            foreign = _foreign(root, current, read_manifest(root)) if current else []
            if foreign:
                raise FileExistsError(f"{root / foreign[0]} appeared while the set was generated: the new "
                                      f"set is not swapped in and nothing in {root} is touched")
            os.replace(root, old)
        os.replace(new, root)
    finally:
        shutil.rmtree(new, ignore_errors=True)
    shutil.rmtree(old, ignore_errors=True)
