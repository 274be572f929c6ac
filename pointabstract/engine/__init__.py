"""Training engine shared by every task: configs, loop, tasks, checkpoints, restore, reports."""

from .checkpoint import atomic_save, load_checkpoint
from .config import DataConfig, LogConfig, OptimConfig, RunConfig, load_config, to_flat
from .evaluate import default_eval_dir, evaluate_checkpoint
from .metrics import ConfusionMatrix
from .report import write_report
from .restored import Restored, restore
from .tasks import TASKS, MissingDatasetError, Task, build_task, task_class
from .trainer import train

__all__ = ["TASKS", "ConfusionMatrix", "DataConfig", "LogConfig", "MissingDatasetError", "OptimConfig",
           "Restored", "RunConfig", "Task", "atomic_save", "build_task", "default_eval_dir",
           "evaluate_checkpoint", "load_checkpoint", "load_config", "restore", "task_class", "to_flat",
           "train", "write_report"]
