"""The tasks the shared trainer can run, one file each, merged here explicitly.

Each task implements the protocol in :mod:`.base`; ``TASKS[name]`` is its class.
"""

from __future__ import annotations

from .base import MissingDatasetError, Task
from .classification import ClassificationSettings, ClassificationTask
from .part_segmentation import PartSegmentationSettings, PartSegmentationTask
from .reconstruction import ReconstructionSettings, ReconstructionTask

__all__ = ["TASKS", "ClassificationSettings", "ClassificationTask", "MissingDatasetError",
           "PartSegmentationSettings", "PartSegmentationTask", "ReconstructionSettings", "ReconstructionTask",
           "Task", "task_class"]

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
