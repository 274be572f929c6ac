"""Evaluate a checkpoint and write a report: metrics.json, report.md and its plots."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from pathlib import Path

import torch

from .report import write_report
from .restored import Restored, restore
from .trainer import ShardSampler, make_loader

__all__ = ["default_eval_dir", "evaluate_checkpoint"]

# a figure section: (restored run, report folder) -> (markdown, metrics to merge)
Section = Callable[[Restored, Path], tuple[str, dict]]


def default_eval_dir(checkpoint: str | Path) -> Path:
    """Where ``eval`` writes by default: ``<run>/eval_<checkpoint stem>/``, so an evaluation
    never overwrites the training run's own metrics.json / report.md."""
    path = Path(checkpoint)
    return path.parent / f"eval_{path.stem}"


def evaluate_checkpoint(path: str | Path, *, data_root: str | None = None, out_dir: str | Path | None = None,
                        votes: int | None = None, device: str = "cpu", workers: int | None = None,
                        sections: Sequence[Section] = ()) -> dict:
    """Rebuild the model saved in ``path``, evaluate it on its test split, write the report.

    Args:
        path: a checkpoint written by the trainer (``last.pt`` / ``best.pt``).
        data_root: dataset root to evaluate on (default: the one it was trained on).
        out_dir: where metrics.json / report.md / plots go (default: :func:`default_eval_dir`).
        votes: classification only: test-time augmentation copies (default: the run's ``task.votes``).
        device: torch device.
        workers: DataLoader workers (default: the run's).
        sections: callables adding figure sections (markdown + metrics) to the report; the
            engine never draws them itself (e.g. the viewer's neighbourhood figure).

    Returns:
        The task's metrics plus where they came from (checkpoint, epoch, model, data root).
    """
    overrides = {}
    if workers is not None:
        overrides["data.workers"] = workers
    if votes is not None:
        if isinstance(votes, bool) or not isinstance(votes, int) or votes < 1:
            raise ValueError(f"votes must be a positive integer, got {votes!r}")
        overrides["task.votes"] = votes
    run = restore(path, data_root=data_root, device=device, overrides=overrides)
    cfg = run.config
    loader = make_loader(run.dataset, ShardSampler(len(run.dataset)), cfg.data.eval_batch_size,
                         cfg.data.workers)
    metrics = run.task.evaluate(run.model, loader, torch.device(device), autocast=contextlib.nullcontext)
    metrics.update({"checkpoint": str(path), "epoch": run.checkpoint["epoch"], "model": cfg.model,
                    "task": cfg.task, "data_root": cfg.data.root})
    out = Path(out_dir) if out_dir is not None else default_eval_dir(path)
    out.mkdir(parents=True, exist_ok=True)
    extra = []
    for section in sections:
        text, more = section(run, out)
        extra.append(text)
        metrics.update(more)
    write_report(metrics, out, task=run.task, curves=Path(path).parent / "curves.png", sections=extra)
    return metrics
