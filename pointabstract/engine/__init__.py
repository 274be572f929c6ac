"""Training engine shared by every task: configs, loop, checkpoints, metrics, reports."""

from .checkpoint import atomic_save, load_checkpoint
from .config import DataConfig, LogConfig, OptimConfig, RunConfig, load_config, to_flat
from .evaluate import evaluate_checkpoint, write_report
from .metrics import ConfusionMatrix
from .trainer import train

__all__ = ["ConfusionMatrix", "DataConfig", "LogConfig", "OptimConfig", "RunConfig", "atomic_save",
           "evaluate_checkpoint", "load_checkpoint", "load_config", "to_flat", "train", "write_report"]
