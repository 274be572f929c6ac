"""Evaluate a checkpoint and write a report: metrics.json, report.md and its plots."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Collection, Mapping
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
                        sections: Mapping[str, Section] | None = None, asked: Collection[str] = ()) -> dict:
    """Rebuild the model saved in ``path``, evaluate it on its test split, write the report.

    Args:
        path: a checkpoint written by the trainer (``last.pt`` / ``best.pt``).
        data_root: dataset root to evaluate on (default: the one it was trained on).
        out_dir: where metrics.json / report.md / plots go (default: :func:`default_eval_dir`).
        votes: test-time augmentation copies (default: the run's ``task.votes``), an eval option
            of the tasks that name it in ``eval_options`` (classification, part segmentation);
            given for another task's checkpoint, a ValueError naming it and the task.
        device: torch device.
        workers: DataLoader workers (default: the run's).
        sections: the figure sections the caller can draw, by name: callables adding markdown
            and metrics to the report (the engine never draws them itself, e.g. the viewer's
            neighbourhood figure). The report gets those the run's task names in its ``figures``,
            in that order; the others are not drawn.
        asked: names of ``sections`` the user asked for (e.g. ``--neighbourhoods``): one that the
            run's task does not name is a ValueError naming it and the task, before any data is read.

    Returns:
        The task's metrics plus where they came from (checkpoint, epoch, model, data root).
    """
    overrides, options = {}, {}
    if workers is not None:
        overrides["data.workers"] = workers
    if votes is not None:
        if isinstance(votes, bool) or not isinstance(votes, int) or votes < 1:
            raise ValueError(f"votes must be a positive integer, got {votes!r}")
        options["votes"] = votes
    if sections is not None and not isinstance(sections, Mapping):
        raise TypeError(f"sections must map figure names to builders ({{name: builder}}), got "
                        f"{type(sections).__name__}")
    sections = dict(sections or {})
    unknown = sorted(set(asked) - set(sections))
    if unknown:
        raise ValueError(f"asked names sections not given: {unknown} (sections: {sorted(sections)})")
    run = restore(path, data_root=data_root, device=device, overrides=overrides, options=options,
                  figures=asked)
    cfg = run.config
    loader = make_loader(run.dataset, ShardSampler(len(run.dataset)), cfg.data.eval_batch_size,
                         cfg.data.workers)
    metrics = run.task.evaluate(run.model, loader, torch.device(device), autocast=contextlib.nullcontext)
    metrics.update({"checkpoint": str(path), "epoch": run.checkpoint["epoch"], "model": cfg.model,
                    "task": cfg.task, "data_root": cfg.data.root})
    out = Path(out_dir) if out_dir is not None else default_eval_dir(path)
    out.mkdir(parents=True, exist_ok=True)
    extra = []
    for name in run.task.figures:
        if name not in sections:
            continue
        text, more = sections[name](run, out)
        extra.append(text)
        metrics.update(more)
    write_report(metrics, out, task=run.task, curves=Path(path).parent / "curves.png", sections=extra)
    return metrics
