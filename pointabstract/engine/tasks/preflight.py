"""Checks the trainer runs once, after building the datasets and before the first step, so that
a run that cannot train fails in seconds with the reason instead of mid-epoch or silently.

- **The data** (:func:`check_datasets`): every sample of the training and test sets is loaded
  once, as ``pointabstract data info ROOT --check`` does, and the first unreadable one (truncated
  file, NaN / Inf values, wrong columns, too few points, labels outside the category) is a
  ValueError naming its file and line. Layouts held in memory (the HDF5 ones and the OFF caches,
  whose arrays are validated when they are opened) cost 60-160 us per sample: measured on the
  demo's synthetic set (``make demo-data``), 0.30 s for ``demo`` (5,008 ModelNet shapes), 0.6-0.7 s
  for ``parts_demo`` / ``capsules_demo_*`` (4,608 ShapeNetPart shapes), so about 2.5 s for the
  real ShapeNetPart's 16,881. Layouts that read a file per
  sample (12.5 ms for a 10,000-point ModelNet text file) are read in full up to
  :data:`MAX_FILES` samples per split (about 6 s); larger ones only have every file checked to
  exist and be non-empty, and ``data info --check`` reads them all.
- **BatchNorm batches of one shape** (:func:`check_batch_statistics`): a model with BatchNorm
  layers trained on batches of one shape takes its statistics from that shape alone, which do
  not hold at evaluation (a reconstruction run with ``data.batch_size=1`` reached a test Chamfer
  20x its train loss). Refused, before training: ``data.batch_size=1``, a DDP split that gives
  a process one shape per step without ``sync_bn``, and a last batch of an epoch that holds one
  shape (on some process). Refusing rather than dropping that last shape keeps every epoch's
  samples, every existing run's numbers and exact resume unchanged. Models without BatchNorm
  (the Sequoia models use LayerNorm) train on any batch size.
"""

from __future__ import annotations

import copy
from pathlib import Path

import torch

__all__ = ["MAX_FILES", "check_batch_statistics", "check_before_training", "check_datasets"]

MAX_FILES = 500  # file-per-sample splits up to this size are read in full before training


def check_before_training(cfg, task, train_ds, test_ds, *, world_size: int = 1) -> None:
    """Both checks of the module docstring; ValueError with the reason and the fix."""
    check_datasets(cfg, training=train_ds, test=test_ds)
    check_batch_statistics(cfg, task, len(train_ds), world_size=world_size)


def check_datasets(cfg, **splits) -> None:
    """Load every sample of each ``name=dataset`` (see the module docstring for the cost); a
    dataset that is not a :class:`~pointabstract.data.datasets.base.PointDataset` (a task's
    own) is left to its task."""
    from ...data.datasets.base import PointDataset, check_samples, reads_files

    for name, dataset in splits.items():
        if not isinstance(dataset, PointDataset):
            continue
        if reads_files(dataset) and len(dataset) > MAX_FILES:
            problems = _missing_or_empty(dataset)
        else:
            probe = copy.copy(dataset)  # fps picks the same rows as random, at a far higher cost
            if getattr(probe, "sampling", None) == "fps":
                probe.sampling = "random"
            problems = check_samples(probe)
        if problems:
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            raise ValueError(f"the {name} set cannot be read, found before training: {problems[0]}{more}; "
                             f"'pointabstract data info {cfg.data.root} --check' lists every problem")


def _missing_or_empty(dataset) -> list[str]:
    sources = [Path(str(s)) for s in getattr(dataset, "sources", [])]
    problems = []
    for path in sources:
        try:
            if path.stat().st_size == 0:
                problems.append(f"{path}: empty file")
        except OSError as err:
            problems.append(f"{path}: cannot be read ({err.strerror})")
    return problems


def check_batch_statistics(cfg, task, train_size: int, *, world_size: int = 1) -> None:
    """ValueError when a BatchNorm layer of the run's model would see a training batch of one
    shape (per process, or over all of them with ``sync_bn`` under DDP)."""
    if not _has_batchnorm(cfg, task):
        return
    batch, world = cfg.data.batch_size, world_size
    synced = world > 1 and cfg.sync_bn
    per_step = batch if synced else batch // world
    if per_step == 1:
        where = f" over {world} processes (sync_bn off)" if world > 1 else ""
        raise ValueError(f"data.batch_size={batch}{where} gives the BatchNorm layers of '{cfg.model}' one "
                         f"shape per step: statistics of one shape do not hold at evaluation (a "
                         f"reconstruction run reached a test Chamfer 20x its train loss); use "
                         f"data.batch_size >= {2 * world}")
    if _last_holds_one(train_size, batch, world, synced):
        better = next((b for b in range(batch + world, 2 * batch + 2 * world, world)
                       if not _last_holds_one(train_size, b, world, synced)), None)
        hint = f"e.g. data.batch_size={better}" if better else "another data.batch_size"
        over = f" over {world} processes" if world > 1 else ""
        raise ValueError(f"the last training batch of every epoch would hold 1 shape ({train_size} training "
                         f"shapes, data.batch_size={batch}{over}): the BatchNorm layers of '{cfg.model}' "
                         f"cannot take statistics from one shape; choose {hint}, or add or remove a "
                         f"training shape")


def _last_holds_one(n: int, batch: int, world: int, synced: bool) -> bool:
    """Whether the last training batch of an epoch gives BatchNorm one shape: on some process,
    or over all of them when synced. Sizes from the trainer's own sampler."""
    from ..trainer import ShardSampler

    per = batch // world
    last = [len(ShardSampler(n, rank=r, world_size=world, batch_size=batch)) % per for r in range(world)]
    return sum(last) == 1 if synced else 1 in last


def _has_batchnorm(cfg, task) -> bool:
    """Whether the run's model has BatchNorm layers: built on the meta device (no memory, no
    init cost; on the CPU for a model that cannot be built there) with the RNG state kept, so
    training starts from the same weights."""
    from ...models import build_model

    args = {**cfg.model_args, **task.model_args()}
    with torch.random.fork_rng(devices=[]):
        try:
            with torch.device("meta"):
                model = build_model(cfg.model, **args)
        except (NotImplementedError, RuntimeError):
            model = build_model(cfg.model, **args)
    return any(isinstance(m, torch.nn.modules.batchnorm._BatchNorm) for m in model.modules())
