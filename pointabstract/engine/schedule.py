"""The optimiser and the learning-rate schedule of a run, and how long the run is: epochs, or
a step budget (``optim.max_steps``) that ends it mid-epoch; the schedule advances once an epoch
or, with ``optim.schedule_every=step``, once an optimizer step."""

from __future__ import annotations

import math

import torch

from .config import RunConfig

__all__ = ["build_optimizer", "build_schedule", "replay_schedule", "run_epochs", "schedule_length"]


def build_optimizer(cfg: RunConfig, model: torch.nn.Module, *, epochs: int | None = None,
                    steps_per_epoch: int = 1):
    """Adam + step decay (the paper: 1e-3, x0.7 every 20 epochs) or AdamW + cosine over
    ``epochs`` (default ``optim.epochs``; the trainer passes the epochs a step budget leaves), or,
    with ``optim.schedule_every=step``, over their ``steps_per_epoch`` steps (see
    :func:`schedule_length`)."""
    o = cfg.optim
    if o.optimizer == "adam":
        opt = torch.optim.Adam(model.parameters(), lr=o.lr, weight_decay=o.weight_decay)
    elif o.optimizer == "adamw":
        opt = torch.optim.AdamW(model.parameters(), lr=o.lr, weight_decay=o.weight_decay)
    else:
        raise ValueError(f"optim.optimizer must be 'adam' or 'adamw', got {o.optimizer!r}")
    epochs = cfg.optim.epochs if epochs is None else epochs
    return opt, build_schedule(opt, cfg, schedule_length(cfg, epochs, steps_per_epoch))


def schedule_length(cfg: RunConfig, epochs: int, steps_per_epoch: int) -> int:
    """How many times the schedule advances in a run of ``epochs`` epochs: once an epoch, or with
    ``optim.schedule_every=step`` once an optimizer step (``optim.max_steps`` when it ends the run
    first). A cosine schedule reaches 0 after that many advances."""
    if cfg.optim.schedule_every == "epoch":
        return epochs
    steps = epochs * steps_per_epoch
    return min(steps, cfg.optim.max_steps) if cfg.optim.max_steps > 0 else steps


def build_schedule(opt: torch.optim.Optimizer, cfg: RunConfig, length: int):
    """The schedule of ``opt``: x ``optim.gamma`` every ``optim.step_size`` advances, or a cosine
    that reaches 0 after ``length`` advances (:func:`schedule_length`)."""
    o = cfg.optim
    if o.schedule == "step":
        return torch.optim.lr_scheduler.StepLR(opt, step_size=o.step_size, gamma=o.gamma)
    if o.schedule == "cosine":
        return torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(1, length))
    raise ValueError(f"optim.schedule must be 'step' or 'cosine', got {o.schedule!r}")


def run_epochs(cfg: RunConfig, steps_per_epoch: int) -> int:
    """How many epochs a run trains: ``optim.epochs``, or fewer when ``optim.max_steps`` ends it
    earlier (the last of them then stops mid-epoch). The cosine schedule spans these epochs (or,
    with ``optim.schedule_every=step``, the run's steps: :func:`schedule_length`)."""
    if cfg.optim.max_steps <= 0 or steps_per_epoch <= 0:
        return cfg.optim.epochs
    return min(cfg.optim.epochs, math.ceil(cfg.optim.max_steps / steps_per_epoch))


def replay_schedule(opt, sched, cfg: RunConfig, done: int, length: int) -> None:
    """After resuming with changed ``optim.*`` settings, set the scheduler and the learning rate
    to what a run started with ``cfg`` has after ``done`` advances of its schedule (epochs or
    steps, of ``length``; replayed on a probe optimizer: the same floating-point steps as the
    uninterrupted run), and the weight decay to ``cfg``'s. The optimizer's moments are kept."""
    probe_opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=cfg.optim.lr)
    probe = build_schedule(probe_opt, cfg, length)
    for _ in range(done):
        probe_opt.step()  # no gradients: changes nothing, keeps the scheduler's order check quiet
        probe.step()
    state = probe.state_dict()
    state["base_lrs"] = [cfg.optim.lr for _ in opt.param_groups]
    state["_last_lr"] = [probe_opt.param_groups[0]["lr"] for _ in opt.param_groups]
    sched.load_state_dict(state)
    for group in opt.param_groups:
        group["lr"], group["initial_lr"] = probe_opt.param_groups[0]["lr"], cfg.optim.lr
        group["weight_decay"] = cfg.optim.weight_decay
