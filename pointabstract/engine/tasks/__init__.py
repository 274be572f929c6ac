"""The tasks the shared trainer can run, one file each, merged here explicitly.

Each task implements the protocol in :mod:`.base`; ``TASKS[name]`` is its class and
:func:`build_task` the one way to build the task of a run config (trainer, ``restore``, predictor).
"""

from __future__ import annotations

from collections.abc import Iterable

from .base import MissingDatasetError, Task, missing_dataset, missing_dataset_hint
from .classification import ClassificationSettings, ClassificationTask
from .part_segmentation import PartSegmentationSettings, PartSegmentationTask
from .reconstruction import ReconstructionSettings, ReconstructionTask

__all__ = ["TASKS", "ClassificationSettings", "ClassificationTask", "MissingDatasetError",
           "PartSegmentationSettings", "PartSegmentationTask", "ReconstructionSettings", "ReconstructionTask",
           "Task", "build_task", "check_eval_options", "check_figures", "default_dataset", "missing_dataset",
           "missing_dataset_hint", "task_class"]

TASKS: dict[str, type] = {
    "classification": ClassificationTask,
    "reconstruction": ReconstructionTask,
    "part_segmentation": PartSegmentationTask,
}


def task_class(name: str) -> type:
    """The task class registered as ``name``; ValueError listing the choices otherwise."""
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; choose from {sorted(TASKS)}")
    return TASKS[name]


def build_task(cfg) -> Task:
    """The task of run config ``cfg`` (a :class:`~pointabstract.engine.config.RunConfig`), built
    from what a task reads: ``cfg.data``, ``cfg.seed`` and the ``task.*`` settings."""
    return task_class(cfg.task)(cfg.data, seed=cfg.seed, settings=cfg.task_config())


def default_dataset(task: str) -> str:
    """The ``data.dataset`` a run of ``task`` started from a model name reads (its first ``datasets``)."""
    return task_class(task).datasets[0]


def check_eval_options(task: str, options: Iterable[str], *, where: str) -> None:
    """ValueError naming the option, the task and ``where`` (a checkpoint) for the first of
    ``options`` that is not one of the task's ``eval_options``."""
    takes = tuple(task_class(task).eval_options)
    for option in options:
        if option not in takes:
            raise ValueError(f"{option} does not apply to {where}, a '{task}' checkpoint (eval options of "
                             f"the '{task}' task: {', '.join(takes) or 'none'})")


def check_figures(task: str, figures: Iterable[str], *, where: str) -> None:
    """ValueError naming the figure section, the task and ``where`` for the first of ``figures``
    that the task's eval report does not carry (not one of its ``figures``)."""
    takes = tuple(task_class(task).figures)
    for figure in figures:
        if figure not in takes:
            raise ValueError(f"the {figure} figure does not apply to {where}, a '{task}' checkpoint (figures "
                             f"of the '{task}' task's report: {', '.join(takes) or 'none'})")
