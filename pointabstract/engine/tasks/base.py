"""The contract between the shared training loop and a task (classification, reconstruction,
part segmentation, ...): everything the loop, ``restore`` and the CLI may ask of a task.

The trainer knows nothing else about a task. To add one, write a class with these members in
its own file under ``engine/tasks/`` and list it in ``engine/tasks/__init__.py::TASKS``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

import torch

__all__ = ["MissingDatasetError", "Task", "missing_dataset"]

# where `data synth` writes by default; a hint may suggest generating there, never into a user's root
_GENERATED = {"datasets/synthetic": "", "datasets/synthetic-hard": " --level hard"}


class MissingDatasetError(FileNotFoundError):
    """The configured dataset root holds no layout the task's loaders know."""


def missing_dataset(err: Exception, root: str) -> MissingDatasetError:
    """``err`` (a loader's "no layout found") with the one hint every task gives: generate the
    built-in data in its own folder. When ``root`` is one of those folders the command writes
    there; for any other root (likely a user's own data folder) it never suggests writing into it."""
    level = _GENERATED.get(Path(root).as_posix().rstrip("/"))
    if level is not None:
        hint = f"For the built-in synthetic data run: pointabstract data synth{level} --out {root}"
    else:
        hint = ("For the built-in synthetic data instead: pointabstract data synth (writes "
                "datasets/synthetic), then train with data.root=datasets/synthetic")
    return MissingDatasetError(f"{err}\n{hint}")


class Task(Protocol):
    """What every task provides.

    Class attributes:
        name: the registry name, the value of the run's ``task`` key and of ``ModelSpec.task``.
        settings: the dataclass of this task's ``task.*`` config keys (validated like
            ``model.*``); an instance is passed to ``__init__`` as ``cfg.task_config``.
        metric: the key of :meth:`evaluate`'s result that picks ``best.pt``.
        mode: ``"max"`` (accuracy, mIoU) or ``"min"`` (Chamfer distance) for ``metric``.

    The constructor takes the whole :class:`~pointabstract.engine.config.RunConfig`.
    """

    name: str
    settings: type
    metric: str
    mode: str

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

    def summary(self, metrics: dict) -> str:
        """One line for the CLI, e.g. ``test overall accuracy 0.983 (mean class 0.981)``."""

    def report(self, metrics: dict, out: Path) -> list[str]:
        """The task's report.md section as markdown lines; may write its plots under ``out``."""

    def curves(self) -> dict[str, list[str]]:
        """Which logged keys ``plot_curves`` draws together: ``{panel title: [keys]}``."""


_ = Any
