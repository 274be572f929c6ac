"""Training engine shared by every task: configs, loop, tasks, checkpoints, restore, reports.

Names are loaded on first use (:mod:`pointabstract._lazy`): loading a model for prediction
(:mod:`.checkpoint`, :mod:`.config`, :mod:`.restored`) does not import the trainer's tqdm or the
reports' matplotlib."""

from .._lazy import lazy_exports

_EXPORTS = {
    "atomic_save": "checkpoint", "load_checkpoint": "checkpoint", "DataConfig": "config",
    "LogConfig": "config", "OptimConfig": "config", "RunConfig": "config", "load_config": "config",
    "to_flat": "config", "default_eval_dir": "evaluate", "evaluate_checkpoint": "evaluate",
    "ConfusionMatrix": "metrics", "write_report": "report", "Restored": "restored", "restore": "restored",
    "TASKS": "tasks", "MissingDatasetError": "tasks", "Task": "tasks", "build_task": "tasks",
    "task_class": "tasks", "train": "trainer",
}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
