"""The training loop shared by every task: one epoch, evaluate, log, checkpoint, repeat."""

from __future__ import annotations

import contextlib
import json
import math
import random
import time
from pathlib import Path

import numpy as np
import torch
import yaml
from tqdm import tqdm

from ..models import build_model
from .checkpoint import atomic_save, load_checkpoint, rng_state, set_rng_state
from .classification import ClassificationTask
from .config import RunConfig, to_flat
from .distributed import DistContext, init_distributed
from .plots import plot_confusion, plot_curves

__all__ = ["TASKS", "ShardSampler", "build_optimizer", "make_loader", "train"]

TASKS = {"classification": ClassificationTask}


class ShardSampler(torch.utils.data.Sampler):
    """Indices of one process's shard: a seeded shuffle per epoch (training) or the plain
    order (evaluation), split round-robin over processes without padding or duplicates."""

    def __init__(self, n: int, *, rank: int = 0, world_size: int = 1, shuffle: bool = False,
                 seed: int = 0):
        self.n, self.rank, self.world, self.shuffle, self.seed = n, rank, world_size, shuffle, seed
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __iter__(self):
        if self.shuffle:
            g = torch.Generator().manual_seed(self.seed * 1_000_003 + self.epoch)
            order = torch.randperm(self.n, generator=g).tolist()
        else:
            order = list(range(self.n))
        return iter(order[self.rank :: self.world])

    def __len__(self) -> int:
        return len(range(self.rank, self.n, self.world))


def build_optimizer(cfg: RunConfig, model: torch.nn.Module):
    """Adam + step decay (the paper: 1e-3, x0.7 every 20 epochs) or AdamW + cosine."""
    o = cfg.optim
    if o.optimizer == "adam":
        opt = torch.optim.Adam(model.parameters(), lr=o.lr, weight_decay=o.weight_decay)
    elif o.optimizer == "adamw":
        opt = torch.optim.AdamW(model.parameters(), lr=o.lr, weight_decay=o.weight_decay)
    else:
        raise ValueError(f"optim.optimizer must be 'adam' or 'adamw', got {o.optimizer!r}")
    if o.schedule == "step":
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=o.step_size, gamma=o.gamma)
    elif o.schedule == "cosine":
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(1, o.epochs))
    else:
        raise ValueError(f"optim.schedule must be 'step' or 'cosine', got {o.schedule!r}")
    return opt, sched


def _seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def make_loader(ds, sampler, batch_size: int, workers: int):
    from ..data import collate

    return torch.utils.data.DataLoader(ds, batch_size=batch_size, sampler=sampler, num_workers=workers,
                                       collate_fn=collate, persistent_workers=False,
                                       multiprocessing_context="fork" if workers else None)


def train(cfg: RunConfig, *, resume: bool = False, max_epochs: int | None = None) -> dict:
    """Train ``cfg.model`` on ``cfg.task``; returns the last evaluation's metrics.

    Args:
        cfg: the run configuration; everything is written under ``cfg.log.out_dir``.
        resume: continue from ``out_dir/last.pt`` (error if it is missing or from another model).
        max_epochs: stop after this many epochs of this call (simulates an interruption).
    """
    ctx = init_distributed(cfg.device)
    try:
        return _train(cfg, ctx, resume, max_epochs)
    finally:
        ctx.close()


def _train(cfg: RunConfig, ctx: DistContext, resume: bool, max_epochs: int | None) -> dict:
    out = Path(cfg.log.out_dir)
    _seed_everything(cfg.seed)
    task = TASKS[cfg.task](cfg) if cfg.task in TASKS else None
    if task is None:
        raise ValueError(f"task must be one of {sorted(TASKS)}, got {cfg.task!r}")
    train_ds, test_ds = task.dataset("train", train=True), task.dataset("test", train=False)
    model = build_model(cfg.model, **{**cfg.model_args, **task.model_args()}).to(ctx.device)
    core = model
    if ctx.distributed:
        model = torch.nn.parallel.DistributedDataParallel(
            model, device_ids=[ctx.device.index] if ctx.device.type == "cuda" else None)
    opt, sched = build_optimizer(cfg, core)
    start, step, best, best_epoch = 0, 0, -math.inf, 0
    if resume:
        ckpt = load_checkpoint(out / "last.pt")
        if ckpt["model_name"] != cfg.model:
            raise ValueError(f"{out / 'last.pt'} holds a '{ckpt['model_name']}' model, "
                             f"the config asks for '{cfg.model}'")
        core.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["optimizer"])
        sched.load_state_dict(ckpt["scheduler"])
        start, step, best, best_epoch = ckpt["epoch"], ckpt["step"], ckpt["best_metric"], ckpt["best_epoch"]
        set_rng_state(ckpt["rng"])
    d = cfg.data
    train_sampler = ShardSampler(len(train_ds), rank=ctx.rank, world_size=ctx.world_size, shuffle=True,
                                 seed=cfg.seed)
    train_loader = make_loader(train_ds, train_sampler, d.batch_size, d.workers)
    test_loader = make_loader(test_ds, ShardSampler(len(test_ds), rank=ctx.rank, world_size=ctx.world_size),
                          d.eval_batch_size, d.workers)
    autocast = (lambda: torch.autocast("cuda", dtype=torch.bfloat16)) \
        if cfg.amp and ctx.device.type == "cuda" else contextlib.nullcontext
    log = _RunLog(out, cfg, resume, start) if ctx.is_main else None
    metrics: dict = {}
    stop = cfg.optim.epochs if max_epochs is None else min(cfg.optim.epochs, start + max_epochs)
    for epoch in range(start, stop):
        train_ds.set_epoch(epoch)
        train_sampler.set_epoch(epoch)
        stats, step = _train_epoch(task, model, train_loader, opt, cfg, ctx, autocast, epoch, step)
        sched.step()
        row = {"epoch": epoch + 1, "step": step, **stats, "lr": opt.param_groups[0]["lr"]}
        if (epoch + 1) % cfg.log.eval_every == 0 or epoch + 1 == cfg.optim.epochs:
            metrics = task.evaluate(model, test_loader, ctx.device, votes=cfg.votes, autocast=autocast)
            row.update({f"test_{k}": metrics[k] for k in ("overall_accuracy", "mean_class_accuracy")})
            if metrics[task.metric] > best:
                best, best_epoch = metrics[task.metric], epoch + 1
        if ctx.is_main:
            state = {"model": core.state_dict(), "optimizer": opt.state_dict(),
                     "scheduler": sched.state_dict(),
                     "epoch": epoch + 1, "step": step, "rng": rng_state(), "config": to_flat(cfg),
                     "model_name": cfg.model, "task": cfg.task, "class_names": task.class_names,
                     "best_metric": best, "best_epoch": best_epoch, "metrics": metrics}
            log.epoch(row, state, is_best=best_epoch == epoch + 1 and "test_overall_accuracy" in row)
        ctx.barrier()
    if ctx.is_main:
        log.finish(metrics, task.class_names)
    return metrics


def _train_epoch(task, model, loader, opt, cfg, ctx, autocast, epoch, step):
    model.train()
    total_loss, correct, seen, started = 0.0, 0, 0, time.perf_counter()
    bar = tqdm(loader, desc=f"epoch {epoch + 1}/{cfg.optim.epochs}", leave=False,
               disable=not (ctx.is_main and cfg.log.progress))
    for batch in bar:
        with autocast():
            logits = task.forward(model, batch, ctx.device)
        loss = task.loss(logits, batch)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if cfg.optim.grad_clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.optim.grad_clip)
        opt.step()
        step += 1
        n = len(batch["label"])
        total_loss += loss.item() * n
        correct += int((logits.argmax(-1).cpu() == batch["label"]).sum())
        seen += n
        rate = seen / max(1e-9, time.perf_counter() - started)
        bar.set_postfix(loss=f"{loss.item():.3f}", samples_per_s=f"{rate:.0f}")
    elapsed = time.perf_counter() - started
    return {"train_loss": total_loss / max(1, seen), "train_accuracy": correct / max(1, seen),
            "samples_per_s": seen / max(1e-9, elapsed) * ctx.world_size, "epoch_s": elapsed}, step


class _RunLog:
    """Rank 0's outputs: config.yaml, metrics.jsonl, TensorBoard, checkpoints, plots."""

    def __init__(self, out: Path, cfg: RunConfig, resume: bool, start: int):
        out.mkdir(parents=True, exist_ok=True)
        self.out, self.cfg = out, cfg
        (out / "config.yaml").write_text(yaml.safe_dump(to_flat(cfg), sort_keys=True))
        self.jsonl = out / "metrics.jsonl"
        kept = []
        if resume and self.jsonl.exists():  # drop epochs logged after the checkpoint
            kept = [line for line in self.jsonl.read_text().splitlines()
                    if line.strip() and json.loads(line)["epoch"] <= start]
        self.jsonl.write_text("".join(line + "\n" for line in kept))
        self.tb = None
        if cfg.log.tensorboard:
            from torch.utils.tensorboard import SummaryWriter

            self.tb = SummaryWriter(str(out / "tb"), purge_step=start + 1 if resume else None)

    def epoch(self, row: dict, state: dict, *, is_best: bool) -> None:
        with self.jsonl.open("a") as f:
            f.write(json.dumps(row) + "\n")
        if self.tb is not None:
            for key, value in row.items():
                if key != "epoch" and isinstance(value, (int, float)):
                    self.tb.add_scalar(key, value, row["epoch"])
            self.tb.flush()
        atomic_save(state, self.out / "last.pt")
        if is_best:
            atomic_save(state, self.out / "best.pt")

    def finish(self, metrics: dict, class_names: list[str]) -> None:
        if self.tb is not None:
            self.tb.close()
        plot_curves(self.jsonl, self.out / "curves.png")
        if metrics:
            (self.out / "metrics.json").write_text(json.dumps(metrics, indent=2))
            plot_confusion(metrics["confusion"], class_names, self.out / "confusion.png",
                           title=f"{self.cfg.model}: test overall accuracy {metrics['overall_accuracy']:.3f}")
