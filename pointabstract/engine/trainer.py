"""The training loop shared by every task: one epoch, evaluate, log, checkpoint, repeat, until
``optim.epochs`` or the step budget ``optim.max_steps``; hooks see the :class:`Run` after each epoch."""

from __future__ import annotations

import contextlib
import math
import random
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from ..models import build_model, upgrade_state_dict
from .checkpoint import UnsafeCheckpointError, check_finite_weights, load_checkpoint, rng_state, set_rng_state
from .config import RunConfig, to_flat, upgrade_flat
from .distributed import DistContext, init_distributed
from .restored import load_weights
from .run_dir import (
    FREE_TO_CHANGE,
    RunLock,
    RunLog,
    claim_run_folder,
    config_changes,
    prepare_out_dir,
    remove_stale_temporaries,
)
from .run_manifest import record_split
from .sampler import ShardSampler, make_loader
from .schedule import build_optimizer, replay_schedule, run_epochs, schedule_length
from .sync_bn import convert_sync_batchnorm
from .tasks import build_task
from .tasks.preflight import check_before_training

__all__ = ["EpochEndHook", "Run", "ShardSampler", "TrainingDivergedError", "build_optimizer", "make_loader",
           "run_epochs", "schedule_length", "train"]


def _seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


class TrainingDivergedError(ValueError):
    """The training loss became NaN or Inf (or the weights did): the run stopped, and the last
    checkpoint written (if any) is the last good one."""


EpochEndHook = Callable[["Run"], None]


@dataclass(eq=False)
class Run:
    """The state of one :func:`train` call: what the loop works on, and what epoch-end hooks see.

    ``epoch`` and ``step`` count what is done (epochs finished, optimizer steps taken, resumed
    ones included); ``metrics`` is the last evaluation, ``row`` the last epoch's metrics.jsonl
    line. ``model`` is what trains (the DDP wrapper under torchrun), ``core`` the model itself
    (what is evaluated and saved)."""

    cfg: RunConfig
    ctx: DistContext
    task: object
    model: torch.nn.Module
    core: torch.nn.Module
    opt: torch.optim.Optimizer
    sched: object
    train_ds: object
    train_sampler: ShardSampler
    train_loader: torch.utils.data.DataLoader
    test_loader: torch.utils.data.DataLoader
    epochs: int  # the epochs this run trains (fewer than optim.epochs when optim.max_steps ends it)
    autocast: Callable
    epoch: int = 0
    step: int = 0
    best: float = -math.inf  # sign * task metric of best.pt (sign: +1 for mode "max", -1 for "min")
    best_epoch: int = 0
    metrics: dict = field(default_factory=dict)
    row: dict = field(default_factory=dict)
    log: RunLog | None = None

    @property
    def out(self) -> Path:
        return Path(self.cfg.log.out_dir)

    @property
    def sign(self) -> float:
        return 1.0 if self.task.mode == "max" else -1.0


def train(cfg: RunConfig, *, resume: bool = False, max_epochs: int | None = None,
          allow_config_change: bool = False, overwrite: bool = False,
          on_epoch_end: Sequence[EpochEndHook] = ()) -> dict:
    """Train ``cfg.model`` on ``cfg.task``; returns the last evaluation's metrics.

    The loop knows only the :class:`~pointabstract.engine.tasks.base.Task` protocol: the task
    gives datasets, the loss of a batch, metrics and which metric picks ``best.pt``. It stops
    after ``optim.epochs`` epochs or, with ``optim.max_steps``, after exactly that many
    optimizer steps (mid-epoch; see :func:`~pointabstract.engine.schedule.run_epochs`).

    Under DDP (torchrun) ``data.batch_size`` is the global batch, split evenly over the
    processes; the loss of each process is weighted so that the gradient is that of the global
    batch, ``sync_bn`` takes BatchNorm statistics over the global batch, and logged train
    statistics are over all processes.

    Args:
        cfg: the run configuration; everything is written under ``cfg.log.out_dir``.
        resume: continue from ``out_dir/last.pt`` (error if it is missing, from another model or
            written with a different config); a run whose last epoch is done is finished
            (best.pt, curves, metrics.json, report.md written again). A resumed run continues as
            if it had been started with the current settings: a changed ``optim.epochs`` (or, with
            ``allow_config_change``, lr / schedule) gives the learning rate that schedule has at
            the resumed epoch; ``optim.epochs`` below the epochs already done is refused, and so
            is a larger step budget for a run whose budget ended inside an epoch (a run resumes
            at epoch boundaries only).
        max_epochs: stop after this many epochs of this call (simulates an interruption).
        allow_config_change: on ``resume``, accept a config that differs from the checkpoint's
            in keys outside :data:`~pointabstract.engine.run_dir.FREE_TO_CHANGE`; the changes
            are appended to ``out_dir/config_changes.yaml``.
        overwrite: without ``resume``, replace a run already in ``out_dir`` (its checkpoints,
            logs and report; see :func:`~pointabstract.engine.run_dir.claim_run_folder`). Without
            it, training into a folder that holds a checkpoint is refused.
        on_epoch_end: callables given the :class:`Run` after each epoch of this call, on every
            process, once the epoch is evaluated (when due) and ``last.pt`` written (a hook may
            read it). They must not change the run's state: resuming would not repeat them.

    Raises:
        TrainingDivergedError: the loss or the weights became NaN / Inf.
        ValueError, FileNotFoundError, FileExistsError, PermissionError, NotADirectoryError: user
            errors (found before training starts).
        RunFolderBusyError: another live process is training into ``out_dir``.
    """
    ctx = init_distributed(cfg.device)
    lock = RunLock(cfg.log.out_dir)
    try:
        if ctx.is_main:
            prepare_out_dir(cfg.log.out_dir)
            lock.acquire()
        return _train(cfg, ctx, resume=resume, max_epochs=max_epochs, allow_config_change=allow_config_change,
                      overwrite=overwrite, hooks=tuple(on_epoch_end))
    finally:
        lock.release()
        ctx.close()


def claim_for_rank(out, *, overwrite: bool, is_main: bool) -> None:
    """:func:`claim_run_folder` under several processes: without ``overwrite`` every process
    checks (and fails alike); with it rank 0 alone checks and removes, and the others do not
    look (rank 0 may not have removed the old run yet when they would)."""
    if is_main or not overwrite:
        claim_run_folder(out, overwrite=overwrite)


def _resume_from(cfg: RunConfig, out: Path, allow_config_change: bool) -> tuple[dict, dict]:
    """The checkpoint to resume from and the config changes since it was written."""
    if not (out / "last.pt").is_file():
        raise FileNotFoundError(f"nothing to resume in {out}: no last.pt (start without --resume)")
    try:
        ckpt = load_checkpoint(out / "last.pt")
    except UnsafeCheckpointError:
        raise
    except ValueError as err:
        raise ValueError(f"{err}; {_intact_alternative(out)}") from None
    if ckpt["model_name"] != cfg.model:
        raise ValueError(f"{out / 'last.pt'} holds a '{ckpt['model_name']}' model, "
                         f"the config asks for '{cfg.model}'")
    if cfg.optim.epochs < ckpt["epoch"]:
        raise ValueError(f"optim.epochs {cfg.optim.epochs} is below the {ckpt['epoch']} epochs "
                         f"{out / 'last.pt'} has already trained; resume with optim.epochs >= "
                         f"{ckpt['epoch']}")
    if 0 < cfg.optim.max_steps < ckpt["step"]:
        raise ValueError(f"optim.max_steps {cfg.optim.max_steps} is below the {ckpt['step']} steps "
                         f"{out / 'last.pt'} has already trained; resume with optim.max_steps >= "
                         f"{ckpt['step']} (or 0: no step budget)")
    changes = config_changes(upgrade_flat(dict(ckpt["config"])), to_flat(cfg))
    refused = {k: v for k, v in changes.items() if k not in FREE_TO_CHANGE}
    if refused and not allow_config_change:
        listed = ", ".join(f"{k} {old!r} -> {new!r}" for k, (old, new) in refused.items())
        raise ValueError(f"--resume with a config that differs from the one {out / 'last.pt'} was trained "
                         f"with: {listed}; pass --allow-config-change to continue with it anyway (the "
                         f"change is recorded in config_changes.yaml), or use another log.out_dir")
    check_finite_weights(ckpt["model"], str(out / "last.pt"))
    return ckpt, changes


def _intact_alternative(out: Path) -> str:
    """What the user can resume from when ``out/last.pt`` is damaged."""
    try:
        epoch = load_checkpoint(out / "best.pt")["epoch"]
    except (OSError, ValueError):
        return "no intact checkpoint is left in the folder: start anew with --overwrite"
    return (f"{out / 'best.pt'} (epoch {epoch}) is intact: copy it over last.pt to resume from epoch "
            f"{epoch}, or start anew with --overwrite")


def _train(cfg: RunConfig, ctx: DistContext, *, resume: bool, max_epochs: int | None,
           allow_config_change: bool, overwrite: bool, hooks: tuple[EpochEndHook, ...]) -> dict:
    out = Path(cfg.log.out_dir)
    if cfg.data.batch_size % ctx.world_size:
        raise ValueError(f"data.batch_size ({cfg.data.batch_size}) is the global batch and must divide "
                         f"evenly over the {ctx.world_size} processes")
    if ctx.is_main:
        remove_stale_temporaries(out)
    if not resume:
        claim_for_rank(out, overwrite=overwrite, is_main=ctx.is_main)
    ckpt, changes = _resume_from(cfg, out, allow_config_change) if resume else (None, {})
    recorded = out / "split.json"  # the split a resumed run trained on (data.dataset=folder)
    run = _start_run(cfg, ctx, split_file=recorded if resume and recorded.is_file() else None)
    if ctx.is_main:
        record_split(out, run.train_ds, resumed=resume)
    if ckpt is not None:
        _restore_run(run, ckpt, changes)
    if ctx.is_main:
        run.log = RunLog(out, cfg, resume, run.epoch, changes, epochs=run.epochs)
        if ckpt is not None:
            run.log.repair_best(ckpt)
    stop = run.epochs if max_epochs is None else min(run.epochs, run.epoch + max_epochs)
    while run.epoch < stop:
        _run_epoch(run)
        ctx.barrier()
        for hook in hooks:
            hook(run)
    if ctx.is_main and stop == run.epochs:
        run.log.finish(run.metrics, run.task, epoch=stop)
    return run.metrics


def _start_run(cfg: RunConfig, ctx: DistContext, *, split_file: Path | None = None) -> Run:
    """Seed, then build the task, its data (on the recorded ``split_file`` when given), the model,
    the loaders and the optimizer, always in this order (a resumed run draws what the
    uninterrupted one drew before its RNG is restored)."""
    _seed_everything(cfg.seed)
    task = build_task(cfg)
    task.split_file = split_file
    train_ds, test_ds = task.dataset("train", train=True), task.dataset("test", train=False)
    check_before_training(cfg, task, train_ds, test_ds, world_size=ctx.world_size)  # data, batches of one
    model, core = _build_model(cfg, ctx, task)
    d, world = cfg.data, ctx.world_size
    train_sampler = ShardSampler(len(train_ds), rank=ctx.rank, world_size=world, shuffle=True, seed=cfg.seed,
                                 batch_size=d.batch_size)
    train_loader = make_loader(train_ds, train_sampler, d.batch_size // world, d.workers)
    test_loader = make_loader(test_ds, ShardSampler(len(test_ds), rank=ctx.rank, world_size=world),
                              d.eval_batch_size, d.workers, generator=torch.Generator().manual_seed(cfg.seed))
    epochs = run_epochs(cfg, len(train_loader))
    opt, sched = build_optimizer(cfg, core, epochs=epochs, steps_per_epoch=len(train_loader))
    autocast = (lambda: torch.autocast("cuda", dtype=torch.bfloat16)) \
        if cfg.amp and ctx.device.type == "cuda" else contextlib.nullcontext
    return Run(cfg, ctx, task, model, core, opt, sched, train_ds, train_sampler, train_loader, test_loader,
               epochs, autocast)


def _build_model(cfg: RunConfig, ctx: DistContext, task) -> tuple[torch.nn.Module, torch.nn.Module]:
    """(what trains, the model itself): the model on the run's device, wrapped in DDP (with
    synced BatchNorm when ``sync_bn``) under torchrun."""
    core = build_model(cfg.model, **{**cfg.model_args, **task.model_args()}).to(ctx.device)
    if not ctx.distributed:
        return core, core
    if cfg.sync_bn:
        convert_sync_batchnorm(core)
    ddp = torch.nn.parallel.DistributedDataParallel(
        core, device_ids=[ctx.device.index] if ctx.device.type == "cuda" else None)
    return ddp, core


def _restore_run(run: Run, ckpt: dict, changes: dict) -> None:
    """Load ``ckpt`` (last.pt) into ``run``: weights, optimizer, schedule (replayed when
    ``optim.*`` changed), counters, best metric, last evaluation and RNG states."""
    cfg, last = run.cfg, str(run.out / "last.pt")
    run.task.check_restore(ckpt.get("task_state", {}), last)
    where = f"{last} does not fit the '{cfg.model}' model of this config"
    if upgrade_state_dict(run.core, ckpt["model"]).keys() != ckpt["model"].keys():
        raise ValueError(f"{last} was written with the parameter names of an older pointabstract: eval, "
                         "view and predict read it, but its optimizer state cannot be matched to the "
                         "parameters to resume; start a new run (--overwrite)")
    load_weights(run.core, ckpt["model"], where)
    try:
        run.opt.load_state_dict(ckpt["optimizer"])
        run.sched.load_state_dict(ckpt["scheduler"])
    except (ValueError, KeyError, RuntimeError) as err:
        raise ValueError(f"{where}: optimizer state: {' '.join(str(err).split())}") from None
    _check_not_cut(run, ckpt)
    if any(key.startswith("optim.") for key in changes):
        done = ckpt["epoch"] if cfg.optim.schedule_every == "epoch" else ckpt["step"]
        length = schedule_length(cfg, run.epochs, len(run.train_loader))
        replay_schedule(run.opt, run.sched, cfg, done, length)
    run.epoch, run.step = ckpt["epoch"], ckpt["step"]
    run.best, run.best_epoch = ckpt["best_metric"], ckpt["best_epoch"]
    run.metrics = dict(ckpt["metrics"])
    set_rng_state(ckpt["rng"])


def _check_not_cut(run: Run, ckpt: dict) -> None:
    """Refuse to train on from a checkpoint whose last epoch the step budget cut short: a run
    resumes at an epoch boundary, so more steps would skip the rest of that epoch (and the
    schedule would already have advanced for it): not the run the larger budget describes."""
    done, budget = ckpt["step"], run.cfg.optim.max_steps
    if done < ckpt["epoch"] * len(run.train_loader) and (budget == 0 or budget > done):
        asked = "no step budget" if budget == 0 else f"optim.max_steps {budget}"
        raise ValueError(f"{run.out / 'last.pt'} ended {done} steps in, inside epoch {ckpt['epoch']}, where "
                         f"optim.max_steps {done} stopped it; a run resumes only at an epoch boundary, so "
                         f"{asked} cannot continue it exactly: train the longer run anew (another "
                         f"log.out_dir, or --overwrite)")


def _run_epoch(run: Run) -> None:
    """One epoch: train (up to the step budget), step the schedule, evaluate when due, then rank 0
    logs the epoch's row and writes last.pt (and best.pt)."""
    run.train_ds.set_epoch(run.epoch)
    run.train_sampler.set_epoch(run.epoch)
    stats = _train_epoch(run)
    if run.cfg.optim.schedule_every == "epoch":
        run.sched.step()
    run.epoch += 1
    run.row = {"epoch": run.epoch, "step": run.step, **stats, "lr": run.opt.param_groups[0]["lr"]}
    if run.epoch % run.cfg.log.eval_every == 0 or run.epoch == run.epochs:
        _evaluate(run)
    if run.ctx.is_main:
        run.log.epoch(run.row, _checkpoint(run), is_best=run.best_epoch == run.epoch)


def _evaluate(run: Run) -> None:
    """The task's evaluation after epoch ``run.epoch``: into ``run.metrics``, the row, the best."""
    try:
        run.metrics = run.task.evaluate(run.core, run.test_loader, run.ctx.device, autocast=run.autocast)
    except ValueError as err:
        raise _diverged(err, f"while evaluating epoch {run.epoch}", run.cfg) from err
    run.row.update({f"test_{k}": v for k, v in run.metrics.items()
                    if isinstance(v, (int, float)) and not isinstance(v, bool)})
    if run.sign * run.metrics[run.task.metric] > run.best:
        run.best, run.best_epoch = run.sign * run.metrics[run.task.metric], run.epoch


def _checkpoint(run: Run) -> dict:
    """What last.pt / best.pt hold after the epoch just done (everything a resume needs)."""
    cfg = run.cfg
    return {"model": run.core.state_dict(), "optimizer": run.opt.state_dict(),
            "scheduler": run.sched.state_dict(), "epoch": run.epoch, "step": run.step, "rng": rng_state(),
            "config": to_flat(cfg), "model_name": cfg.model, "task": cfg.task, "task_state": run.task.state(),
            "data_root_resolved": str(Path(cfg.data.root).resolve()),
            "best_metric": run.best, "best_epoch": run.best_epoch, "metrics": run.metrics}


def _diverged(err: ValueError, where: str, cfg: RunConfig) -> Exception:
    """``err`` (an op refusing NaN/Inf values) as a TrainingDivergedError saying what happened;
    other ValueErrors unchanged."""
    if "NaN" not in str(err):
        return err
    return TrainingDivergedError(
        f"the model's activations became NaN/Inf {where} (finite weights grown too large with optim.lr "
        f"{cfg.optim.lr:g}: {err}); {_last_good(Path(cfg.log.out_dir))}")


def _last_good(out: Path) -> str:
    if (out / "last.pt").is_file():
        epoch = load_checkpoint(out / "last.pt")["epoch"]
        return f"the last good checkpoint is {out / 'last.pt'} (epoch {epoch})"
    return "no checkpoint was written before (lower optim.lr or set optim.grad_clip)"


def _train_epoch(run: Run) -> dict:
    """One pass over the training loader, or up to ``optim.max_steps``: the train statistics
    (means over every process's samples), samples per second and seconds."""
    run.model.train()
    params = [p for p in run.model.parameters() if p.numel()]
    sums: dict[str, float] = {"loss": 0.0}
    seen, started = 0, time.perf_counter()
    bar = tqdm(run.train_loader, desc=f"epoch {run.epoch + 1}/{run.epochs}", leave=False,
               disable=not (run.ctx.is_main and run.cfg.log.progress and sys.stderr.isatty()))
    for batch in bar:
        if run.cfg.optim.max_steps and run.step >= run.cfg.optim.max_steps:  # the budget ends it mid-epoch
            break
        loss, stats = _train_step(run, batch, params)
        n = len(batch["pos"])
        value = loss.item()  # the step's one copy of the loss to the host (a GPU sync)
        for key, v in {"loss": value, **stats}.items():
            sums[key] = sums.get(key, 0.0) + float(v) * n
        seen += n
        rate = seen / max(1e-9, time.perf_counter() - started)
        bar.set_postfix(loss=f"{value:.3f}", samples_per_s=f"{rate:.0f}")
    return _epoch_stats(run, sums, seen, time.perf_counter() - started)


def _train_step(run: Run, batch: dict, params: list) -> tuple[torch.Tensor, dict]:
    """One optimizer step on ``batch``; (this process's loss, the task's stats). Stops the run
    (TrainingDivergedError) when the loss on any process, or the weights, become NaN / Inf."""
    cfg, ctx, where = run.cfg, run.ctx, f"at epoch {run.epoch + 1} step {run.step + 1}"
    loss, stats = _loss(run, batch, where)
    n = len(batch["pos"])
    # (samples here, any non-finite loss) summed over processes: the loss of each process is
    # weighted by its share of the global batch (DDP averages gradients over processes)
    flags = torch.stack([torch.tensor(float(n), device=loss.device),
                         (~torch.isfinite(loss.detach())).any().float()])  # on the device: NCCL
    if ctx.distributed:
        torch.distributed.all_reduce(flags)
    if flags[1] > 0:
        raise TrainingDivergedError(f"loss became NaN/Inf {where} (optim.lr {cfg.optim.lr:g}); "
                                    f"{_last_good(run.out)}")
    weighted = loss * (ctx.world_size * n / float(flags[0])) if ctx.distributed else loss
    run.opt.zero_grad(set_to_none=True)
    weighted.backward()
    if cfg.optim.grad_clip:
        torch.nn.utils.clip_grad_norm_(run.model.parameters(), cfg.optim.grad_clip)
    run.opt.step()
    if cfg.optim.schedule_every == "step":
        run.sched.step()
    run.step += 1
    # the weights can overflow while the loss is still finite: never carry them to a checkpoint
    if not torch.isfinite(torch.stack([p.detach().abs().amax().float() for p in params])).all():
        raise TrainingDivergedError(f"the weights became NaN/Inf at epoch {run.epoch + 1} step {run.step} "
                                    f"(loss {loss.item():.4g} before the step, optim.lr {cfg.optim.lr:g}); "
                                    f"{_last_good(run.out)}")
    return loss, stats


def _loss(run: Run, batch: dict, where: str) -> tuple[torch.Tensor, dict]:
    """The task's loss of ``batch``; an op refusing NaN/Inf values says whether the batch or the
    model is to blame."""
    try:
        with run.autocast():
            return run.task.step(run.model, batch, run.ctx.device)
    except ValueError as err:
        if not torch.isfinite(batch["pos"]).all():
            raise ValueError(f"the training batch {where} holds NaN/Inf points ({err})") from None
        raise _diverged(err, where, run.cfg) from err


def _epoch_stats(run: Run, sums: dict[str, float], seen: int, elapsed: float) -> dict:
    """``train_<key>`` means over the samples of every process, samples per second, seconds."""
    keys = sorted(sums)
    totals = torch.tensor([sums[k] for k in keys] + [float(seen)], dtype=torch.float64, device=run.ctx.device)
    if run.ctx.distributed:  # statistics of the global batch, not of rank 0's shard
        torch.distributed.all_reduce(totals)
    seen_all = float(totals[-1])
    means = {f"train_{key}": float(total) / max(1.0, seen_all) for key, total in zip(keys, totals[:-1])}
    return {**means, "samples_per_s": seen_all / max(1e-9, elapsed), "epoch_s": elapsed}
