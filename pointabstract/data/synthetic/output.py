"""The output folder of ``data synth``: it never destroys what it did not write.

A generated set carries a manifest (:data:`MANIFEST`: the options and every file written, with
its size). ``data synth --out DIR`` writes only into

- a folder that does not exist or is empty, or
- a folder holding nothing but an earlier set of its own (its manifest lists every file there),
  which ``overwrite=True`` replaces; without it the earlier set is kept and the run refused.

Anything else (a file the manifest does not list, a folder without a manifest: a user's real
dataset) is refused, with one line, before any work. A set without a manifest counts as one of
its own (written by a version before manifests) only when it proves it: besides the layout's
exact file names and a level's class list (which a user's conversion of ShapeNetPart can have
too), its first training shape must be, bit for bit, the shape this generator draws there for
the default options (seed 0). Any other set without a manifest is the user's and is never
touched; ``--overwrite`` replacing a set says which one it replaced (:func:`describe_set`).

Before any work the free space of the target's file system is checked against the set's size
(:func:`expected_bytes`, known from the counts); a disk that fills while writing anyway (another
process writing) is one ``OSError`` line naming the folder and the size, and the staging folder
is removed. HDF5 files are built in memory and written by one plain file write
(:func:`write_h5`), so a full disk never reaches the HDF5 library mid-file.

Generation is atomic: everything is written into a temporary folder beside the target (same
file system), the manifest last, then swapped in by two renames. An interrupt (Ctrl-C, a kill,
an error) leaves the previous set as it was and no partial set; the temporary folders of a
process that died are removed (or, if it died between the two renames, the previous set is
put back) by the next run.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["MANIFEST", "claim_output", "describe_set", "expected_bytes", "is_complete", "read_manifest",
           "staged_output", "write_h5"]

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
    """A set written before manifests, proved: only the layout's own file names, a class list that
    is exactly one of the synthetic levels', and a first training shape equal, bit for bit, to the
    one this generator draws for the default options (seed 0, rotation up or so3, every hard
    nuisance on). A user's set with the same names (a ShapeNetPart-as-classification conversion
    lists the 16 categories in this order) fails the last test and is never replaced.
    Compatibility shim, removed in 0.2.0 (docs/development.md#compatibility-shims)."""
    from .generator import level_classes

    if not files or not all(_LEGACY.match(name) for name in files):
        return False
    try:
        listed = tuple((root / "modelnet40_ply_hdf5_2048" / "shape_names.txt").read_text().split())
    except (OSError, UnicodeDecodeError):
        return False
    level = next((name for name in ("easy", "hard") if listed == level_classes(name)), None)
    return level is not None and _first_shape_regenerates(root, level)


def _first_shape_regenerates(root: Path, level: str) -> bool:
    """Whether the first shape of ``ply_data_train0.h5`` is the one the generator draws there with
    seed 0 (rotation up or so3): no dataset but its own has those float32 bytes."""
    import h5py

    from .generator import _make
    from .nuisances import Nuisances

    try:
        with h5py.File(root / "modelnet40_ply_hdf5_2048" / "ply_data_train0.h5", "r") as f:
            first = f["data"][0]
    except (OSError, KeyError, ValueError, TypeError, IndexError):
        return False
    if first.dtype != "float32" or first.ndim != 2 or first.shape[1] != 3 or len(first) < 2:
        return False
    for rotation in ("up", "so3"):
        try:
            pos = _make((level, 0, 0, 0, len(first), Nuisances(), rotation))[0]
        except ValueError:  # a size the generator refuses: not one of its sets
            return False
        if pos.shape == first.shape and pos.tobytes() == first.tobytes():
            return True
    return False


def describe_set(root: str | Path) -> str:
    """What a set of its own in ``root`` is, for the line saying it was replaced: ``level easy,
    seed 1, 48 shapes, 12 files`` (or ``written before manifests, 12 files``)."""
    root = Path(root)
    manifest = read_manifest(root)
    count = len(_files(root)) if root.is_dir() else 0
    if manifest is None:
        return f"written before manifests, {count} files"
    from .generator import LEVELS, level_classes

    level = manifest.get("level")
    per_class = manifest.get("train_per_class", 0) + manifest.get("test_per_class", 0)
    shapes = f"{per_class * len(level_classes(level))} shapes, " if level in LEVELS else ""
    return f"level {level}, seed {manifest.get('seed')}, {shapes}{count} files"


def expected_bytes(shapes: int, num_points: int) -> int:
    """About what a set of ``shapes`` clouds of ``num_points`` points takes on disk, never less:
    each shape is written twice (classification: data and normal float32, an int32 label; part
    set: the same and int32 part ids), plus HDF5 headers and the list files (64 KiB a file)."""
    per_shape = (3 + 3) * 4 * num_points + 4 + (3 + 3 + 1) * 4 * num_points + 4
    files = 2 * (shapes // 2048 + 1) + 3 + 8
    return shapes * per_shape + files * 65536


def _mb(size: int) -> str:
    return f"{size / 1e9:.1f} GB" if size >= 1e9 else f"{size / 1e6:.1f} MB"


def _no_space(message: str) -> OSError:
    """An OSError with errno ENOSPC whose text is ``message`` alone (no ``[Errno 28]`` prefix)."""
    err = OSError(message)
    err.errno = errno.ENOSPC
    return err


def _check_free_space(root: Path, needed: int) -> None:
    """Refuse, before any work, a set that cannot fit on ``root``'s file system."""
    place = root.parent
    while not place.exists() and place != place.parent:
        place = place.parent
    free = shutil.disk_usage(place).free
    if free < needed:
        raise _no_space(f"--out {root}: the set needs about {_mb(needed)} and {place} has {_mb(free)} free: "
                        "free some space, make a smaller set (--train-per-class, --test-per-class, "
                        "--num-points) or give another --out; nothing was written")


def write_h5(path: str | Path, **arrays) -> None:
    """Write ``arrays`` as the datasets of one HDF5 file: the file is built in memory (no
    timestamps, so the same arrays give the same bytes) and written by one plain write, so a
    full disk is an OSError from that write, never a failure inside the HDF5 library."""
    import h5py

    with h5py.File(f"{path}.image", "w", driver="core", backing_store=False) as f:
        for key, value in arrays.items():
            f.create_dataset(key, data=value, track_times=False)
        f.flush()
        image = f.id.get_file_image()
    with open(path, "wb") as out:
        out.write(image)


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


def claim_output(root: str | Path, *, overwrite: bool = False, needed: int = 0) -> str:
    """Check, before any work, that a set may be written to ``root`` (and, with ``needed``, that
    its file system has that many bytes free).

    Returns:
        ``"new"`` (missing or empty folder) or ``"replace"`` (an earlier set of its own, with
        ``overwrite``).

    Raises:
        NotADirectoryError: ``root`` is a file.
        FileExistsError: ``root`` holds a file ``data synth`` did not write (nothing is touched,
            ``overwrite`` or not), or an earlier set of its own and ``overwrite`` is False.
        OSError: (ENOSPC) fewer than ``needed`` bytes free.
    """
    root = Path(root)
    _tidy_staging(root)
    if root.exists() and not root.is_dir():
        raise NotADirectoryError(f"{root} is a file, not a folder (--out must be a folder)")
    files = _files(root) if root.is_dir() else []
    manifest = read_manifest(root) if files else None
    foreign = _foreign(root, files, manifest) if files else []
    if foreign:
        unproved = (" (a set without data synth's manifest counts as its own only when its first shape "
                    "is the one this version draws with seed 0; delete an older set yourself)"
                    if manifest is None and all(_LEGACY.match(name) for name in files) else "")
        raise FileExistsError(
            f"{root} holds {len(foreign)} file(s) that data synth did not write (e.g. {root / foreign[0]}): "
            f"refused, nothing there is touched{unproved}; give a new or empty folder as --out (the "
            "default is datasets/synthetic)")
    if needed:
        _check_free_space(root, needed)
    if not files:
        return "new"
    if not overwrite:
        what = (f"level {manifest.get('level')}, seed {manifest.get('seed')}" if manifest is not None
                else "written by an earlier version before manifests")
        raise FileExistsError(f"{root} already holds a synthetic set ({what}); pass --overwrite to replace "
                              "it (only its own files), or give another --out")
    return "replace"


@contextmanager
def staged_output(root: str | Path, options: dict, *, needed: int = 0) -> Iterator[Path]:
    """A temporary folder beside ``root`` to write a set into; on leaving the block normally,
    the manifest (``options`` and the files written, with sizes) is written last and the folder
    swapped in for ``root``. On any exception or interrupt the temporary folder is removed and
    ``root`` is left as it was; a full disk (ENOSPC, EDQUOT) becomes one OSError line naming
    ``root`` and the ``needed`` size."""
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
    except OSError as err:
        if err.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        size = f" (the set needs about {_mb(needed)})" if needed else ""
        raise _no_space(f"no space left on the device of --out {root} while writing the set{size}: the "
                        f"partial set was removed and {root} is as it was; free some space or give another "
                        "--out") from None
    finally:
        shutil.rmtree(new, ignore_errors=True)
    shutil.rmtree(old, ignore_errors=True)
