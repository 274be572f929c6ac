"""The contract between the shared training loop and a task (classification, reconstruction,
part segmentation, ...): everything the loop, ``restore``, ``eval`` and the CLI may ask of a task.

The trainer knows nothing else about a task. To add one, write a class with these members in
its own file under ``engine/tasks/`` and list it in ``engine/tasks/__init__.py::TASKS``; the
functions that score its outputs go in ``engine/metrics/``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

import torch

from ... import _validate as V

__all__ = ["MissingDatasetError", "Task", "check_dataset", "check_same_labels", "check_settings_type",
           "dataset_points", "lengths_arg", "missing_dataset", "missing_dataset_hint"]

# where `data synth` writes by default; a hint may suggest generating there, never into a user's root
_GENERATED = {"datasets/synthetic": "", "datasets/synthetic-hard": " --level hard"}


class MissingDatasetError(FileNotFoundError):
    """The configured dataset root holds no layout the task's loaders know."""


def dataset_points(data) -> int | None:
    """The ``num_points`` a dataset is built with from ``data.num_points``: None (every stored
    point, clouds of their own sizes) for ``"all"``."""
    return None if data.num_points == "all" else data.num_points


def lengths_arg(batch: dict, device) -> dict:
    """``{"lengths": (B,) int64 on device}`` for a padded (ragged) batch, ``{}`` for a full one:
    the keyword a task passes on to the model (docs/models.md#ragged-batches)."""
    lengths = batch.get("lengths")
    return {} if lengths is None else {"lengths": lengths.to(device, non_blocking=True)}


def missing_dataset_hint(root: str | Path) -> str:
    """The one hint for a dataset root that holds no data: generate the built-in data in its own
    folder. When ``root`` is one of those folders the command writes there; for any other root
    (likely a user's own data folder) it never suggests writing into it."""
    level = _GENERATED.get(Path(root).as_posix().rstrip("/"))
    if level is not None:
        return f"For the built-in synthetic data run: pointabstract data synth{level} --out {root}"
    return ("For the built-in synthetic data instead: pointabstract data synth (writes "
            "datasets/synthetic), then train with data.root=datasets/synthetic")


def missing_dataset(err: Exception | str, root: str | Path) -> MissingDatasetError:
    """``err`` (a loader's "no layout found", or a message) followed by :func:`missing_dataset_hint`."""
    return MissingDatasetError(f"{err}\n{missing_dataset_hint(root)}")


def check_dataset(task: str, datasets: tuple[str, ...], dataset: str) -> None:
    """ValueError naming ``data.dataset`` when ``task`` reads no dataset of that name."""
    V.check_choice("data.dataset", dataset, datasets, note=f" for {task}")


def check_same_labels(where: str, kind: str, saved: list[str], current: list[str], data: str) -> None:
    """ValueError when a checkpoint's label names (``saved``, its ``kind``: classes, categories)
    differ from those of the data now loaded (``current``, described by ``data``): the output
    rows would be read against the wrong names, so ``check_restore`` refuses it in one line."""
    if saved != current:
        raise ValueError(f"{where} was trained on {kind} {saved}, {data} {current}")


def check_settings_type(task: type, data, settings):
    """The arguments every task constructor takes, checked: ``data`` a
    :class:`~pointabstract.engine.config.DataConfig`, ``settings`` an instance of ``task.settings``
    (None: its defaults). Returns the settings."""
    from ..config import DataConfig

    if not isinstance(data, DataConfig):
        raise TypeError(f"{task.__name__} takes data: DataConfig (the run's data.* keys), got "
                        f"{type(data).__name__}; build a task from a whole run config with build_task(cfg)")
    if settings is None:
        return task.settings()
    if not isinstance(settings, task.settings):
        raise TypeError(f"{task.__name__} takes settings: {task.settings.__name__}, "
                        f"got {type(settings).__name__}")
    return settings


class Task(Protocol):
    """What every task provides.

    Class attributes:
        name: the registry name, the value of the run's ``task`` key and of ``ModelSpec.task``.
        settings: the dataclass of this task's ``task.*`` config keys (validated like
            ``model.*``).
        metric: the key of :meth:`evaluate`'s result that picks ``best.pt``.
        mode: ``"max"`` (accuracy, mIoU) or ``"min"`` (Chamfer distance) for ``metric``.
        datasets: the ``data.dataset`` names it reads; the first is what a run started from a
            model name reads (``pointabstract train capsule_ae_small_ca``).
        eval_options: the fields of ``settings`` that ``evaluate_checkpoint`` / ``pointabstract
            eval`` may change for one evaluation (e.g. ``("votes",)``); any other option given for
            this task's checkpoints is a ValueError naming the option and the task.
        figures: the names of the figure sections its eval report carries, in order; the caller
            draws them (``evaluate_checkpoint(sections={name: builder})``, the engine never imports
            the viewer), and asking for a section the task does not name is a ValueError.

    Attribute set by the trainer (on ``--resume``) and ``restore`` before :meth:`dataset`:
        split_file: the split a run recorded (its ``split.json``), or None. A dataset whose split
            is made from the files found (``data.dataset=folder``) reuses it exactly instead; it
            offers the split it made as ``split_record`` (the trainer writes it with the run).

    The constructor reads only what a task needs: ``__init__(data, *, seed=0, settings=None)``
    with the run's :class:`~pointabstract.engine.config.DataConfig`, its seed and an instance of
    ``settings`` (None: the defaults); it validates the settings. ``build_task(cfg)``
    (``engine/tasks/__init__.py``) builds the task of a whole run config.
    """

    name: str
    settings: type
    metric: str
    mode: str
    datasets: tuple[str, ...]
    eval_options: tuple[str, ...]
    figures: tuple[str, ...]

    def dataset(self, split: str, *, train: bool) -> torch.utils.data.Dataset:
        """The dataset of ``split`` ("train" / "test"); ``train`` turns on augmentation.
        Raises :class:`MissingDatasetError` when the root holds no known layout."""

    def model_args(self) -> dict:
        """Model config fields fixed by the data (e.g. ``num_classes``); call after ``dataset``."""

    def step(self, model: torch.nn.Module, batch: dict, device: torch.device) -> tuple[torch.Tensor, dict]:
        """One training forward pass: ``(loss, stats)``; ``stats`` maps names to batch-mean floats
        (e.g. ``{"accuracy": 0.8}``), averaged over the epoch (and over DDP processes) by the
        trainer and logged as ``train_<name>``. The loss is logged as ``train_loss``.

        ``loss`` must be the mean over the batch's samples: under DDP the trainer weights it by
        the process's share of the global batch so that the gradient is the global batch's.
        Raise ValueError for bad data; a ValueError mentioning NaN from finite inputs is
        reported as a diverged run."""

    def evaluate(self, model: torch.nn.Module, loader, device: torch.device, *, autocast) -> dict:
        """Metrics over ``loader`` (reduced over processes when distributed; ``model`` is the
        bare module, not the DDP wrapper, and processes may see different batch counts). Must contain
        ``metric`` and ``samples``; every top-level int/float is logged as ``test_<name>``;
        other values (tables, matrices) must be JSON-serialisable."""

    def state(self) -> dict:
        """What a checkpoint must remember to be restored on other data (e.g. class names)."""

    def check_restore(self, state: dict, where: str) -> None:
        """Raise ValueError (naming ``where``) when the data now loaded does not fit ``state``."""

    @staticmethod
    def summary(metrics: dict) -> str:
        """One line for the CLI, e.g. ``test overall accuracy 0.983 (mean class 0.981)``, from the
        metrics alone (the CLI prints it for a finished run without building the task)."""

    def report(self, metrics: dict, out: Path) -> list[str]:
        """The task's report.md section as markdown lines; may write its plots under ``out``."""

    def curves(self) -> dict[str, list[str]]:
        """Which logged keys ``plot_curves`` draws together: ``{panel title: [keys]}``."""

