"""The split of a folder of shapes (``data.dataset=folder``): made once by a seeded rule (or taken
from the layout's split folders or lists), recorded with the run that trains on it, and reused
exactly by ``eval`` and ``--resume``.

The seeded rule (no split folders or lists): within each class the files are ordered by the sha1
of ``"<seed>:<path relative to ROOT>"`` and the first ``test_fraction * n`` (rounded half up) go
to test, at least one and at most n - 1 when the class has two files or more (a class of one file
trains only).

A record (:func:`split_record`, written by the trainer to ``<log.out_dir>/split.json``) lists the
class names and each split's paths relative to ROOT. :func:`reuse_split` gives back exactly
those files with their recorded labels; a file found now that the record does not list (added
since) is left out of both splits and returned, so the caller can say how many; a recorded file
that is gone is an error naming it (the run's test set can no longer be scored exactly).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ... import _validate as V

__all__ = ["read_split_record", "reuse_split", "split_of", "split_record"]

SPLITS = ("train", "test")


def _rank(seed: int, name: str) -> str:
    return hashlib.sha1(f"{seed}:{name}".encode()).hexdigest()


def _test_count(n: int, test_fraction: float) -> int:
    """Test files of a class of n: test_fraction * n rounded half up, in [1, n - 1] (0 when n = 1)."""
    return min(max(int(test_fraction * n + 0.5), 1), n - 1) if n > 1 else 0


def split_of(layout, root: Path, *, seed: int, test_fraction: float) -> dict[str, list]:
    """``{"train": [(file, label)], "test": [...]}`` of a :class:`~.folder.FolderLayout`: its own
    split, or the seeded, stratified one for a ``"seeded split"`` layout (rule in the module
    docstring)."""
    if layout.kind != "seeded split":
        return layout.files
    V.check_float("data.test_fraction", test_fraction, low=0.0, high=1.0, low_open=True, high_open=True)
    out = {"train": [], "test": []}
    for label in range(len(layout.classes)):
        members = [f for f, lab in layout.files["all"] if lab == label]
        members.sort(key=lambda f: _rank(seed, f.relative_to(root).as_posix()))
        n_test = _test_count(len(members), test_fraction)
        out["test"] += [(f, label) for f in members[:n_test]]
        out["train"] += [(f, label) for f in members[n_test:]]
    return {s: sorted(v) for s, v in out.items()}


def split_record(root: Path, splits: dict, classes: tuple[str, ...], *, kind: str, seed: int,
                 test_fraction: float) -> dict:
    """The record of a split, as the run writes it to ``split.json``: ``root``, ``layout``,
    ``seed``, ``test_fraction``, the ``rule``, ``classes`` (label = index) and each split's paths
    relative to ROOT."""
    rule = ("per class, files ordered by sha1('<seed>:<relative path>'), the first test_fraction * n "
            "rounded half up (at least 1, at most n - 1) are test" if kind == "seeded split"
            else f"as given by the {kind} (seed and test_fraction unused)")
    return {"root": str(Path(root).resolve()), "layout": kind, "seed": seed, "test_fraction": test_fraction,
            "rule": rule, "classes": list(classes),
            **{s: [f.relative_to(root).as_posix() for f, _ in splits[s]] for s in SPLITS}}


def read_split_record(path: str | Path) -> dict:
    """The split a run recorded in ``path``; a ValueError naming the file when it is not one."""
    path = Path(path)
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise ValueError(f"{path}: the run's split cannot be read ({err})") from None
    ok = isinstance(record, dict) and all(
        isinstance(record.get(key), list) and all(isinstance(v, str) for v in record[key])
        for key in ("classes", *SPLITS))
    if not ok:
        raise ValueError(f"{path}: not a split recorded by a run (it needs 'classes', 'train' and 'test' "
                         "lists of names)")
    return record


def _found(layout, root: Path) -> dict[str, tuple[Path, str]]:
    """Every shape file of the layout now, ``{relative path: (file, class name)}``; for split lists,
    also the files listed in neither list."""
    from .folder import _labelled, _shape_files

    if layout.kind == "seeded split":
        files = layout.files["all"]
    elif layout.kind == "split lists":
        files = _labelled({c: _shape_files(root / c) for c in layout.classes}, list(layout.classes))
    else:
        files = layout.files["train"] + layout.files["test"]
    return {f.relative_to(root).as_posix(): (f, layout.classes[label]) for f, label in files}


def reuse_split(layout, root: Path, record: dict, *, where: str | Path) -> tuple[dict, list[Path]]:
    """The recorded split of the files under ``root`` now.

    Args:
        layout: the :class:`~.folder.FolderLayout` found under ``root`` now.
        record: a run's split (:func:`read_split_record`); labels index ``record["classes"]``.
        where: the record's file, named in errors.

    Returns:
        ``({"train": [(file, label)], "test": [...]}, new files)``: exactly the recorded files, and
        the shape files found now that the record does not list (left out of both splits).

    Raises:
        ValueError: a recorded file is gone or now lies in a class folder the record does not name.
    """
    found = _found(layout, root)
    classes = record["classes"]
    splits = {}
    for split in SPLITS:
        rows = []
        for name in record[split]:
            if name not in found:
                raise ValueError(f"{where}: the {split} file {name!r} of the run's split is no longer under "
                                 f"{root}: the run's split cannot be reused exactly; put the file back, or "
                                 "train a new run (another log.out_dir) to make a new split")
            path, class_name = found[name]
            if class_name not in classes:
                raise ValueError(f"{where}: {name!r} lies in class folder {class_name!r}, which the run's "
                                 f"split does not name (classes {classes})")
            rows.append((path, classes.index(class_name)))
        splits[split] = sorted(rows)
    listed = set(record["train"]) | set(record["test"])
    return splits, sorted(path for name, (path, _) in found.items() if name not in listed)
