"""Evaluate a checkpoint and write a report: metrics.json, report.md and its plots."""

from __future__ import annotations

import contextlib
import json
import shutil
from pathlib import Path

import torch

from ..models import build_model
from .checkpoint import load_checkpoint
from .config import load_config
from .plots import plot_confusion
from .trainer import TASKS, ShardSampler, make_loader

__all__ = ["evaluate_checkpoint", "write_report"]


def evaluate_checkpoint(path: str | Path, *, data_root: str | None = None, out_dir: str | Path | None = None,
                        votes: int | None = None, device: str = "cpu", workers: int | None = None,
                        neighbourhoods: bool = False) -> dict:
    """Rebuild the model saved in ``path``, evaluate it on its test split, write the report.

    Args:
        path: a checkpoint written by the trainer (``last.pt`` / ``best.pt``).
        data_root: dataset root to evaluate on (default: the one it was trained on).
        out_dir: where metrics.json / report.md / confusion.png go (default: beside the checkpoint).
        votes: test-time augmentation copies to average (default: the run's ``votes``).
        device: torch device.
        workers: DataLoader workers (default: the run's).
        neighbourhoods: also render the feature-space vs 3D KNN figure into the report.

    Returns:
        The metrics dict (overall / mean class / per-class accuracy, confusion matrix).
    """
    ckpt = load_checkpoint(path)
    overrides = dict(ckpt["config"])
    if data_root is not None:
        overrides["data.root"] = str(data_root)
    if workers is not None:
        overrides["data.workers"] = workers
    cfg = load_config(None, overrides)
    task = TASKS[cfg.task](cfg)
    test_ds = task.dataset("test", train=False)
    if list(ckpt.get("class_names", task.class_names)) != task.class_names:
        raise ValueError(f"{path} was trained on classes {ckpt['class_names']}, the data at "
                         f"{cfg.data.root} has {task.class_names}")
    model = build_model(cfg.model, **{**cfg.model_args, **task.model_args()})
    try:
        model.load_state_dict(ckpt["model"])
    except RuntimeError as err:
        raise ValueError(f"{path} does not fit a '{cfg.model}' model built from its own config: "
                         f"{err}") from None
    model.to(device)
    loader = make_loader(test_ds, ShardSampler(len(test_ds)), cfg.data.eval_batch_size, cfg.data.workers)
    metrics = task.evaluate(model, loader, torch.device(device), votes=votes or cfg.votes,
                            autocast=contextlib.nullcontext)
    metrics.update({"checkpoint": str(path), "epoch": ckpt["epoch"], "model": cfg.model,
                    "data_root": cfg.data.root, "votes": votes or cfg.votes})
    out = Path(out_dir) if out_dir is not None else Path(path).parent
    extra = ""
    if neighbourhoods:
        from ..viz import RenderError, neighbourhood_section

        try:
            extra = neighbourhood_section(path, out, data_root=cfg.data.root, device=device)
        except RenderError as err:  # a machine without offscreen rendering: report, don't fail
            first = str(err).splitlines()[0]
            print(f"warning: no neighbourhood figure ({first})")
            extra = f"_No neighbourhood figure: {first}_"
    write_report(metrics, out, curves=Path(path).parent / "curves.png", extra=extra)
    return metrics


def write_report(metrics: dict, out: Path, *, curves: Path | None = None, extra: str = "") -> Path:
    """metrics.json, confusion.png and report.md (embedding the plots) under ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2))
    plot_confusion(metrics["confusion"], metrics["class_names"], out / "confusion.png",
                   title=f"{metrics.get('model', '')}: overall accuracy {metrics['overall_accuracy']:.3f}")
    if curves is not None and curves.exists() and curves.resolve() != (out / "curves.png").resolve():
        shutil.copy(curves, out / "curves.png")
    rows = "\n".join(f"| {name} | {'n/a' if acc is None else f'{acc:.3f}'} |"
                     for name, acc in metrics["per_class_accuracy"].items())
    lines = [f"# Evaluation of {metrics.get('model', 'model')}", "",
             f"- checkpoint: `{metrics.get('checkpoint', '')}` (epoch {metrics.get('epoch', '?')})",
             f"- data: `{metrics.get('data_root', '')}`, {metrics['samples']} test shapes, "
             f"{metrics.get('votes', 1)} vote(s)",
             f"- **overall accuracy {metrics['overall_accuracy']:.4f}**, "
             f"mean class accuracy {metrics['mean_class_accuracy']:.4f}", ""]
    if (out / "curves.png").exists():
        lines += ["![training curves](curves.png)", ""]
    lines += ["![confusion matrix](confusion.png)", "", "| class | accuracy |", "|---|---:|", rows, ""]
    if extra:
        lines += [extra, ""]
    (out / "report.md").write_text("\n".join(lines))
    return out / "report.md"
