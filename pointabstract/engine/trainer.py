"""The training loop shared by every task: one epoch, evaluate, log, checkpoint, repeat."""

from __future__ import annotations

import contextlib
import math
import random
import sys
import time
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from ..models import build_model
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
from .sync_bn import convert_sync_batchnorm
from .tasks import build_task
from .tasks.preflight import check_before_training

__all__ = ["ShardSampler", "TrainingDivergedError", "build_optimizer", "make_loader", "train"]


class ShardSampler(torch.utils.data.Sampler):
    """Indices of one process's shard: a seeded shuffle per epoch (training) or the plain
    order (evaluation), split round-robin over processes without padding or duplicates.

    With ``batch_size`` (the global training batch, a multiple of ``world_size``), consecutive
    per-process batches of ``batch_size / world_size`` together hold exactly the global batches
    of a one-process run; a last global batch with fewer samples than processes (which would
    leave a process without a batch) is dropped, which never happens with one process."""

    def __init__(self, n: int, *, rank: int = 0, world_size: int = 1, shuffle: bool = False,
                 seed: int = 0, batch_size: int | None = None):
        self.n, self.rank, self.world, self.shuffle, self.seed = n, rank, world_size, shuffle, seed
        self.epoch = 0
        tail = n % batch_size if batch_size else 0
        self.used = n - tail if 0 < tail < world_size else n

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __iter__(self):
        if self.shuffle:
            g = torch.Generator().manual_seed(self.seed * 1_000_003 + self.epoch)
            order = torch.randperm(self.n, generator=g).tolist()
        else:
            order = list(range(self.n))
        return iter(order[: self.used][self.rank :: self.world])

    def __len__(self) -> int:
        return len(range(self.rank, self.used, self.world))


def build_optimizer(cfg: RunConfig, model: torch.nn.Module, *, epochs: int | None = None):
    """Adam + step decay (the paper: 1e-3, x0.7 every 20 epochs) or AdamW + cosine over
    ``epochs`` (default ``optim.epochs``; the trainer passes the epochs a step budget leaves)."""
    o = cfg.optim
    if o.optimizer == "adam":
        opt = torch.optim.Adam(model.parameters(), lr=o.lr, weight_decay=o.weight_decay)
    elif o.optimizer == "adamw":
        opt = torch.optim.AdamW(model.parameters(), lr=o.lr, weight_decay=o.weight_decay)
    else:
        raise ValueError(f"optim.optimizer must be 'adam' or 'adamw', got {o.optimizer!r}")
    return opt, _build_schedule(opt, cfg, cfg.optim.epochs if epochs is None else epochs)


def _build_schedule(opt: torch.optim.Optimizer, cfg: RunConfig, epochs: int):
    o = cfg.optim
    if o.schedule == "step":
        return torch.optim.lr_scheduler.StepLR(opt, step_size=o.step_size, gamma=o.gamma)
    if o.schedule == "cosine":
        return torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(1, epochs))
    raise ValueError(f"optim.schedule must be 'step' or 'cosine', got {o.schedule!r}")


def _seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def make_loader(ds, sampler, batch_size: int, workers: int, *, generator: torch.Generator | None = None):
    """A DataLoader over ``ds`` with our collate (ragged batches get ``lengths``).

    Each pass over a DataLoader draws its workers' base seed from ``generator``, or from the
    global torch RNG when it is None (what training draws dropout from): evaluation loaders get
    a generator of their own, so that how often a run evaluates does not change its training."""
    from ..data import collate

    return torch.utils.data.DataLoader(ds, batch_size=batch_size, sampler=sampler, num_workers=workers,
                                       collate_fn=collate, persistent_workers=False, generator=generator,
                                       multiprocessing_context="fork" if workers else None)


class TrainingDivergedError(ValueError):
    """The training loss became NaN or Inf (or the weights did): the run stopped, and the last
    checkpoint written (if any) is the last good one."""


def train(cfg: RunConfig, *, resume: bool = False, max_epochs: int | None = None,
          allow_config_change: bool = False, overwrite: bool = False) -> dict:
    """Train ``cfg.model`` on ``cfg.task``; returns the last evaluation's metrics.

    The loop knows only the :class:`~pointabstract.engine.tasks.base.Task` protocol: the task
    gives datasets, the loss of a batch, metrics and which metric picks ``best.pt``.

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
            the resumed epoch; ``optim.epochs`` below the epochs already done is refused.
        max_epochs: stop after this many epochs of this call (simulates an interruption).
        allow_config_change: on ``resume``, accept a config that differs from the checkpoint's
            in keys outside :data:`~pointabstract.engine.run_dir.FREE_TO_CHANGE`; the changes
            are appended to ``out_dir/config_changes.yaml``.
        overwrite: without ``resume``, replace a run already in ``out_dir`` (its checkpoints,
            logs and report; see :func:`~pointabstract.engine.run_dir.claim_run_folder`). Without
            it, training into a folder that holds a checkpoint is refused.

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
        return _train(cfg, ctx, resume, max_epochs, allow_config_change, overwrite)
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


def _train(cfg: RunConfig, ctx: DistContext, resume: bool, max_epochs: int | None,
           allow_config_change: bool, overwrite: bool) -> dict:
    out = Path(cfg.log.out_dir)
    if cfg.data.batch_size % ctx.world_size:
        raise ValueError(f"data.batch_size ({cfg.data.batch_size}) is the global batch and must divide "
                         f"evenly over the {ctx.world_size} processes")
    if ctx.is_main:
        remove_stale_temporaries(out)
    if not resume:
        claim_for_rank(out, overwrite=overwrite, is_main=ctx.is_main)
    ckpt, changes = _resume_from(cfg, out, allow_config_change) if resume else (None, {})
    _seed_everything(cfg.seed)
    task = build_task(cfg)
    train_ds, test_ds = task.dataset("train", train=True), task.dataset("test", train=False)
    check_before_training(cfg, task, train_ds, test_ds, world_size=ctx.world_size)  # data, batches of one
    model = build_model(cfg.model, **{**cfg.model_args, **task.model_args()}).to(ctx.device)
    core = model
    if ctx.distributed:
        if cfg.sync_bn:
            convert_sync_batchnorm(core)
        model = torch.nn.parallel.DistributedDataParallel(
            model, device_ids=[ctx.device.index] if ctx.device.type == "cuda" else None)
    d, world = cfg.data, ctx.world_size
    train_sampler = ShardSampler(len(train_ds), rank=ctx.rank, world_size=world, shuffle=True, seed=cfg.seed,
                                 batch_size=d.batch_size)
    train_loader = make_loader(train_ds, train_sampler, d.batch_size // world, d.workers)
    test_loader = make_loader(test_ds, ShardSampler(len(test_ds), rank=ctx.rank, world_size=world),
                              d.eval_batch_size, d.workers, generator=torch.Generator().manual_seed(cfg.seed))
    epochs = run_epochs(cfg, len(train_loader))
    opt, sched = build_optimizer(cfg, core, epochs=epochs)
    sign = 1.0 if task.mode == "max" else -1.0  # best.pt keeps the largest sign * metric
    start, step, best, best_epoch = 0, 0, -math.inf, 0
    if ckpt is not None:
        task.check_restore(ckpt.get("task_state", {}), str(out / "last.pt"))
        where = f"{out / 'last.pt'} does not fit the '{cfg.model}' model of this config"
        load_weights(core, ckpt["model"], where)
        try:
            opt.load_state_dict(ckpt["optimizer"])
            sched.load_state_dict(ckpt["scheduler"])
        except (ValueError, KeyError, RuntimeError) as err:
            raise ValueError(f"{where}: optimizer state: {' '.join(str(err).split())}") from None
        if any(key.startswith("optim.") for key in changes):
            _replay_schedule(opt, sched, cfg, ckpt["epoch"], epochs)
        start, step, best, best_epoch = ckpt["epoch"], ckpt["step"], ckpt["best_metric"], ckpt["best_epoch"]
        set_rng_state(ckpt["rng"])
    autocast = (lambda: torch.autocast("cuda", dtype=torch.bfloat16)) \
        if cfg.amp and ctx.device.type == "cuda" else contextlib.nullcontext
    log = RunLog(out, cfg, resume, start, changes, epochs=epochs) if ctx.is_main else None
    if ctx.is_main and ckpt is not None:
        log.repair_best(ckpt)
    metrics: dict = dict(ckpt["metrics"]) if ckpt is not None else {}
    stop = epochs if max_epochs is None else min(epochs, start + max_epochs)
    for epoch in range(start, stop):
        train_ds.set_epoch(epoch)
        train_sampler.set_epoch(epoch)
        stats, step = _train_epoch(task, model, train_loader, opt, cfg, ctx, autocast, (epoch, epochs), step)
        sched.step()
        row = {"epoch": epoch + 1, "step": step, **stats, "lr": opt.param_groups[0]["lr"]}
        if (epoch + 1) % cfg.log.eval_every == 0 or epoch + 1 == epochs:
            try:
                metrics = task.evaluate(core, test_loader, ctx.device, autocast=autocast)
            except ValueError as err:
                raise _diverged(err, f"while evaluating epoch {epoch + 1}", cfg) from err
            row.update({f"test_{k}": v for k, v in metrics.items()
                        if isinstance(v, (int, float)) and not isinstance(v, bool)})
            if sign * metrics[task.metric] > best:
                best, best_epoch = sign * metrics[task.metric], epoch + 1
        if ctx.is_main:
            state = {"model": core.state_dict(), "optimizer": opt.state_dict(),
                     "scheduler": sched.state_dict(),
                     "epoch": epoch + 1, "step": step, "rng": rng_state(), "config": to_flat(cfg),
                     "model_name": cfg.model, "task": cfg.task, "task_state": task.state(),
                     "data_root_resolved": str(Path(cfg.data.root).resolve()),
                     "best_metric": best, "best_epoch": best_epoch, "metrics": metrics}
            log.epoch(row, state, is_best=best_epoch == epoch + 1)
        ctx.barrier()
    if ctx.is_main and stop == epochs:
        log.finish(metrics, task, epoch=stop)
    return metrics


def run_epochs(cfg: RunConfig, steps_per_epoch: int) -> int:
    """How many epochs a run trains: ``optim.epochs``, or fewer when ``optim.max_steps`` ends it
    earlier (the last of them then stops mid-epoch). The cosine schedule spans these epochs."""
    if cfg.optim.max_steps <= 0 or steps_per_epoch <= 0:
        return cfg.optim.epochs
    return min(cfg.optim.epochs, math.ceil(cfg.optim.max_steps / steps_per_epoch))


def _replay_schedule(opt, sched, cfg: RunConfig, epochs_done: int, epochs: int) -> None:
    """After resuming with changed ``optim.*`` settings, set the scheduler and the learning rate
    to what a run started with ``cfg`` has after ``epochs_done`` epochs (its schedule replayed on
    a probe optimizer: the same floating-point steps as the uninterrupted run), and the weight
    decay to ``cfg``'s. The optimizer's moments are kept."""
    probe_opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=cfg.optim.lr)
    probe = _build_schedule(probe_opt, cfg, epochs)
    for _ in range(epochs_done):
        probe_opt.step()  # no gradients: changes nothing, keeps the scheduler's order check quiet
        probe.step()
    state = probe.state_dict()
    state["base_lrs"] = [cfg.optim.lr for _ in opt.param_groups]
    state["_last_lr"] = [probe_opt.param_groups[0]["lr"] for _ in opt.param_groups]
    sched.load_state_dict(state)
    for group in opt.param_groups:
        group["lr"], group["initial_lr"] = probe_opt.param_groups[0]["lr"], cfg.optim.lr
        group["weight_decay"] = cfg.optim.weight_decay


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


def _train_epoch(task, model, loader, opt, cfg, ctx, autocast, epochs, step):
    """One pass over ``loader`` (or up to ``optim.max_steps``); ``epochs`` is (this epoch, of how many)."""
    epoch, total = epochs
    model.train()
    params = [p for p in model.parameters() if p.numel()]
    sums: dict[str, float] = {"loss": 0.0}
    seen, started = 0, time.perf_counter()
    bar = tqdm(loader, desc=f"epoch {epoch + 1}/{total}", leave=False,
               disable=not (ctx.is_main and cfg.log.progress and sys.stderr.isatty()))
    for batch in bar:
        if cfg.optim.max_steps and step >= cfg.optim.max_steps:  # the step budget ends the run mid-epoch
            break
        try:
            with autocast():
                loss, stats = task.step(model, batch, ctx.device)
        except ValueError as err:  # an op refusing NaN/Inf activations: say what happened
            if not torch.isfinite(batch["pos"]).all():
                raise ValueError(f"the training batch at epoch {epoch + 1} step {step + 1} holds NaN/Inf "
                                 f"points ({err})") from None
            raise _diverged(err, f"at epoch {epoch + 1} step {step + 1}", cfg) from err
        n = len(batch["pos"])
        # (samples here, any non-finite loss) summed over processes: the loss of each process is
        # weighted by its share of the global batch (DDP averages gradients over processes)
        flags = torch.stack([torch.tensor(float(n), device=loss.device),
                             (~torch.isfinite(loss.detach())).any().float()])  # on the device: NCCL
        if ctx.distributed:
            torch.distributed.all_reduce(flags)
        if flags[1] > 0:
            raise TrainingDivergedError(f"loss became NaN/Inf at epoch {epoch + 1} step {step + 1} "
                                        f"(optim.lr {cfg.optim.lr:g}); {_last_good(Path(cfg.log.out_dir))}")
        weighted = loss * (ctx.world_size * n / float(flags[0])) if ctx.distributed else loss
        opt.zero_grad(set_to_none=True)
        weighted.backward()
        if cfg.optim.grad_clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.optim.grad_clip)
        opt.step()
        step += 1
        # the weights can overflow while the loss is still finite: never carry them to a checkpoint
        if not torch.isfinite(torch.stack([p.detach().abs().amax().float() for p in params])).all():
            raise TrainingDivergedError(f"the weights became NaN/Inf at epoch {epoch + 1} step {step} (loss "
                                        f"{loss.item():.4g} before the step, optim.lr {cfg.optim.lr:g}); "
                                        f"{_last_good(Path(cfg.log.out_dir))}")
        for key, value in {"loss": loss.item(), **stats}.items():
            sums[key] = sums.get(key, 0.0) + float(value) * n
        seen += n
        rate = seen / max(1e-9, time.perf_counter() - started)
        bar.set_postfix(loss=f"{loss.item():.3f}", samples_per_s=f"{rate:.0f}")
    elapsed = time.perf_counter() - started
    keys = sorted(sums)
    totals = torch.tensor([sums[k] for k in keys] + [float(seen)], dtype=torch.float64, device=ctx.device)
    if ctx.distributed:  # statistics of the global batch, not of rank 0's shard
        torch.distributed.all_reduce(totals)
    seen_all = float(totals[-1])
    means = {f"train_{key}": float(total) / max(1.0, seen_all) for key, total in zip(keys, totals[:-1])}
    return {**means, "samples_per_s": seen_all / max(1e-9, elapsed), "epoch_s": elapsed}, step
