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
- **The memory of one training step** (:func:`check_step_memory`, first, before any sample is
  read; :mod:`.step_memory`): the model's training step is measured on a probe batch of 2
  random clouds of a few hundred to a few thousand points, fitted linearly in N and scaled to
  ``data.num_points`` and the per-process ``data.batch_size``, plus the weights and their
  gradients. First the activations kept for the backward pass (one forward pass); when those
  fit but, times ``PEAK_OVER_KEPT``, might not, the step's peak itself (a forward and a backward
  pass, every tensor's lifetime followed). Both are lower bounds of the real peak (memory
  outside torch comes on top), so a run is refused only when one of them already exceeds the
  free memory (``MemAvailable`` of ``/proc/meminfo``, or ``torch.cuda.mem_get_info``; under AMP
  on a GPU the activations count half, as bfloat16 could make them). No check where the free
  memory is not known, for a task other than the three built-in ones, or where the model cannot
  run the probe. ``data.num_points=1000000`` for the demo capsule autoencoder is refused in
  seconds, naming the most that could fit, instead of an allocator traceback after half a
  minute.
"""

from __future__ import annotations

import copy
from pathlib import Path

import torch

__all__ = ["MAX_FILES", "check_batch_statistics", "check_before_training", "check_datasets",
           "check_step_memory"]

MAX_FILES = 500  # file-per-sample splits up to this size are read in full before training


def check_before_training(cfg, task, train_ds, test_ds, *, world_size: int = 1) -> None:
    """The checks of the module docstring; ValueError with the reason and the fix."""
    check_step_memory(cfg, task, world_size=world_size)
    check_datasets(cfg, training=train_ds, test=test_ds)
    check_batch_statistics(cfg, task, len(train_ds), world_size=world_size)


def check_step_memory(cfg, task, *, world_size: int = 1, available: int | None = None) -> None:
    """ValueError when one training step needs more memory than the device has free (the module
    docstring, :mod:`.step_memory`), naming ``data.num_points`` / ``data.batch_size`` and the
    largest values that fit. ``available``: the free bytes (default: measured)."""
    from .step_memory import PEAK_OVER_KEPT, free_memory, probe_sizes, step_bytes

    if cfg.data.num_points == "all":  # clouds of their own sizes: no one size to probe
        return
    n, batch = int(cfg.data.num_points), max(1, int(cfg.data.batch_size) // world_size)
    free, where = free_memory(cfg, world_size) if available is None else (available, "this device")
    if free is None:
        return
    amp = 0.5 if cfg.amp and where.startswith("GPU") else 1.0  # bfloat16 activations: at least half

    def need_of(peak: bool):
        fit = step_bytes(cfg, task, peak=peak)
        if fit is None:
            return None
        per_point, per_cloud, weights = fit[0] * amp, fit[1] * amp, fit[2]
        return (per_point * n + per_cloud) * batch + weights, per_point, per_cloud, weights

    measure = need_of(peak=False)  # the activations kept for the backward pass: one forward pass
    if measure is None or measure[0] * PEAK_OVER_KEPT <= free:
        return
    peak = measure[0] <= free  # kept alone would fit: measure the peak (a forward and a backward pass)
    if peak:
        measure = need_of(peak=True)
        if measure is None or measure[0] <= free:
            return
    need, per_point, per_cloud, weights = measure
    points = int(((free - weights) / batch - per_cloud) // per_point) if per_point > 0 else 0
    clouds = int((free - weights) // (per_point * n + per_cloud))
    over = f" ({batch} per process)" if world_size > 1 else ""
    fits = [f"data.num_points={points:,}" if points >= 1 else "",
            f"data.batch_size={clouds * world_size}" if clouds >= 1 else ""]
    what = "its peak" if peak else "the activations it keeps for the backward pass"
    raise ValueError(f"data.num_points={n} with data.batch_size={cfg.data.batch_size}{over}: one training "
                     f"step of '{cfg.model}' needs at least {_size(need)} ({what}, measured at "
                     f"{' and '.join(map(str, probe_sizes(n, peak=peak)))} points and scaled linearly), more "
                     f"than the {_size(free)} free on {where}; the most that could fit: "
                     f"{' or '.join(f for f in fits if f) or 'none (a smaller model)'}")


def _size(n: float) -> str:
    return f"{n / 2**30:,.1f} GiB" if n >= 2**30 else f"{n / 2**20:,.1f} MiB"


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
