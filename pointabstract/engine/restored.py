"""One way back from a checkpoint to a model, its task and its data: used by ``eval``, the
viewer and the benchmarks alike."""

from __future__ import annotations

import logging
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from ..models import build_model, upgrade_state_dict
from .checkpoint import check_finite_weights
from .config import RunConfig, load_config, upgrade_flat
from .distributed import check_device
from .pretrained import load_model_source
from .tasks import build_task, check_eval_options, check_figures

__all__ = ["Restored", "load_weights", "restore", "trained_data_root"]

_log = logging.getLogger(__name__)  # notes: pointabstract/_log.py


@dataclass
class Restored:
    """A trained model with its task and one dataset split, ready to evaluate or show."""

    model: nn.Module  # on ``device``, in eval mode, weights loaded
    task: object  # the run's task (see engine/tasks/base.py), its dataset already opened
    config: RunConfig  # the checkpoint's config with the caller's overrides
    dataset: torch.utils.data.Dataset  # the ``split`` of ``config.data.root``, never augmented
    checkpoint: dict  # the raw checkpoint (epoch, metrics, ...)
    path: Path
    split: str = "test"
    device: torch.device = torch.device("cpu")


def restore(path: str | Path, *, data_root: str | Path | None = None, split: str = "test",
            device: str | torch.device = "cpu", overrides: dict | None = None,
            options: dict | None = None, figures: Collection[str] = ()) -> Restored:
    """Rebuild the model saved in ``path`` and open its dataset split.

    Args:
        path: a checkpoint written by the trainer (``last.pt`` / ``best.pt``) or a folder it was
            exported to (``pointabstract export``, :mod:`.pretrained`).
        data_root: dataset root (default: the one it was trained on, found from any working
            folder; see :func:`trained_data_root`).
        split: a split of the task's dataset (``"test"``, ``"train"``, ...); never augmented here.
        device: torch device of the model.
        overrides: further flat config keys (e.g. ``{"data.workers": 0}``).
        options: eval options, settings of the run's task changed for this restore (e.g.
            ``{"votes": 3}``); each must be one of the task's ``eval_options``.
        figures: figure sections the caller was asked to draw for this run (e.g.
            ``["neighbourhoods"]``); each must be one of the task's ``figures``.

    Raises:
        FileNotFoundError: no such checkpoint.
        MissingDatasetError: no dataset layout at the root.
        ValueError: not a pointabstract checkpoint, a config this version cannot read, an
            override or option that does not apply (naming it), data or weights that do not fit it.
    """
    ckpt = load_model_source(path)
    check_finite_weights(ckpt["model"], str(path))
    dev = check_device(device)
    flat = upgrade_flat(dict(ckpt["config"]))
    flat["data.root"] = str(data_root) if data_root is not None else trained_data_root(ckpt, path)
    try:
        cfg = load_config(None, flat)
    except ValueError as err:
        raise ValueError(f"{path} was written with a config this version cannot read: {err}") from None
    check_eval_options(cfg.task, options or {}, where=str(path))  # before any data is read
    check_figures(cfg.task, figures, where=str(path))
    if overrides or options:  # the caller's values: their errors name them, not the file
        options = {f"task.{key}": value for key, value in (options or {}).items()}
        cfg = load_config(None, {**flat, **(overrides or {}), **options})
    task = build_task(cfg)
    recorded = Path(path).parent / "split.json"  # the split the run trained on (data.dataset=folder)
    task.split_file = recorded if recorded.is_file() else None
    dataset = task.dataset(split, train=False)
    _split_notes(dataset, recorded, path, split, cfg.seed)
    state = ckpt.get("task_state", {"class_names": ckpt["class_names"]} if "class_names" in ckpt else {})
    task.check_restore(state, str(path))
    model = build_model(cfg.model, **{**cfg.model_args, **task.model_args()})
    load_weights(model, ckpt["model"], f"{path} does not fit a '{cfg.model}' model built from its own "
                                       "config (written by another version of the code?)")
    return Restored(model.to(dev).eval(), task, cfg, dataset, ckpt, Path(path), split, dev)


def _split_notes(dataset, recorded: Path, path, split: str, seed: int) -> None:
    """One note (a warning, pointabstract/_log.py) when the ``split`` of a run's files is not exactly
    the recorded one: files added since training (left out), or no record at all (a run of an
    earlier version)."""
    if getattr(dataset, "split_record", None) is None:  # a dataset with fixed splits
        return
    if dataset.split_file is None:
        _log.warning(f"note: {recorded.parent} holds no split.json (a run of an earlier version): its "
                     f"{split} files were split again by seed {seed}; files added since training may be "
                     "among them")
    elif dataset.new_files:
        _log.warning(f"note: {len(dataset.new_files)} shape file(s) under {dataset.root} are not in the "
                     f"split {path} was trained on ({recorded}): left out of its {split} set")


def trained_data_root(ckpt: dict, path: str | Path) -> str:
    """The dataset root a checkpoint was trained on, found from the current working folder.

    Tried in order: the absolute path stored at training time; the stored relative ``data.root``
    taken from the folder training ran in (worked out from where the checkpoint lies now and
    the relative ``log.out_dir``, so a moved project still finds its data); the relative path
    from the current folder. The first existing folder is used; a note (a warning) says so when it
    is not the stored one. When none exists, the stored value is returned unchanged (the
    dataset's own error then names it).
    """
    stored = str(ckpt["config"].get("data.root", ""))
    if not stored or Path(stored).is_absolute():
        return stored
    candidates = []
    if ckpt.get("data_root_resolved"):
        candidates.append(("the absolute path stored at training", Path(ckpt["data_root_resolved"])))
    out_parts = Path(str(ckpt["config"].get("log.out_dir", ""))).parts
    run = Path(path).resolve().parent
    if out_parts and not Path(*out_parts).is_absolute() and run.parts[-len(out_parts):] == out_parts:
        trained_in = run.parents[len(out_parts) - 1]
        candidates.append((f"relative to the run's project folder {trained_in}", trained_in / stored))
    candidates.append(("relative to the current folder", Path(stored)))
    for i, (how, root) in enumerate(candidates):
        if root.is_dir():
            if i:
                _log.warning(f"note: data.root {stored!r} of {path}: using {root} ({how})")
            return str(root)
    return stored


def load_weights(model: nn.Module, state: dict, context: str) -> None:
    """``load_state_dict`` with a one-line error: what is missing, unexpected or mis-shaped."""
    state = upgrade_state_dict(model, state)  # older parameter names (models/legacy_keys.py, until 0.2.0)
    own = model.state_dict()
    missing, unexpected = sorted(set(own) - set(state)), sorted(set(state) - set(own))
    shapes = sorted(k for k in set(own) & set(state)
                    if hasattr(state[k], "shape") and tuple(state[k].shape) != tuple(own[k].shape))
    problems = [f"{len(names)} {what} weights (e.g. {names[0]!r})"
                for what, names in (("missing", missing), ("unexpected", unexpected),
                                    ("mis-shaped", shapes)) if names]
    if problems:
        raise ValueError(f"{context}: {', '.join(problems)}")
    try:
        model.load_state_dict(state)
    except RuntimeError as err:  # anything else torch refuses, squeezed onto one line
        raise ValueError(f"{context}: {' '.join(str(err).split())}") from None
