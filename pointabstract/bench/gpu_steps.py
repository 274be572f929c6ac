"""The training-step half of ``pointabstract bench gpu``: throughput, peak memory and host
synchronisations of one training step, fp32 and bf16 autocast, and Table 4's largest batch.

A step is the trainer's (:func:`.train_speed._step`: ``task.step`` under the run's autocast, the
backward, the optimiser step) on a model and optimiser built from a preset as ``pointabstract
train`` builds them. Batches are random clouds with the keys the task reads (labels, categories,
parts), in host memory as a DataLoader gives them, so no dataset is needed (the demo section
trains on the synthetic set). Timing: ``warmup`` steps, then ``steps`` steps between two
``torch.cuda.synchronize``; peak memory: ``torch.cuda.max_memory_allocated`` over the timed steps.
"""

from __future__ import annotations

import contextlib
import gc
import time
import warnings
from collections import Counter
from pathlib import Path

__all__ = ["CAPSULE_ROUTINGS", "CONFIGS", "TABLE4_CAP_GIB", "max_batch", "measure", "random_batch",
           "release", "sync_sites"]

# name -> (preset or registry model, overrides, batch B, points N): the paper-sized models
CONFIGS: dict[str, tuple[str, dict, int, int]] = {
    "centroid transformer (paper size)": ("centroid_transformer_modelnet40", {}, 32, 1024),
    "self-attention baseline (k = 40)": ("self_attention_modelnet40", {}, 32, 1024),
    "capsule AE 12 caps, dynamic routing": ("capsule_ae_small_dr", {}, 32, 2048),
    "capsule AE 12 caps, EM routing": ("capsule_ae_small_em", {}, 32, 2048),
    "capsule AE 12 caps, centroid attention": ("capsule_ae_small_ca", {}, 32, 2048),
    "Sequoia segmenter N = 2k": ("sequoia_seg", {}, 8, 2048),
    "softmax segmenter N = 2k": ("softmax_seg", {}, 8, 2048),
    "Sequoia segmenter N = 8k": ("sequoia_seg", {}, 8, 8192),
    "softmax segmenter N = 8k": ("softmax_seg", {}, 8, 8192),
    "full self-attention (k = None)": ("self_attention_modelnet40", {"model.k": None}, 32, 1024),
}
CAPSULE_ROUTINGS = ("capsule AE 12 caps, dynamic routing", "capsule AE 12 caps, EM routing",
                    "capsule AE 12 caps, centroid attention")
# Table 4's "max batch size per GPU": the paper's other experiments name a Titan Xp (12 GB)
TABLE4_CAP_GIB = 12.0
_TINY = (2, 64)  # batch and points of every config in the CPU dry run


def random_batch(task: str, batch: int, points: int, *, seed: int = 0) -> dict:
    """A collated batch of random clouds in [-1, 1]^3 for ``task``, on the host: ``pos`` (B, N, 3)
    plus ``label`` (B,) for classification (40 classes), ``category`` (B,) and ``part`` (B, N)
    (parts of each shape's own category) for part segmentation."""
    import torch

    from ..data.categories import SHAPENET_PART

    g = torch.Generator().manual_seed(seed)
    out = {"pos": torch.rand(batch, points, 3, generator=g) * 2 - 1}
    if task == "classification":
        out["label"] = torch.randint(0, 40, (batch,), generator=g)
    elif task == "part_segmentation":
        category = torch.randint(0, len(SHAPENET_PART), (batch,), generator=g)
        owned = [torch.tensor(SHAPENET_PART[c].parts) for c in category.tolist()]
        out["category"] = category
        out["part"] = torch.stack([p[torch.randint(0, len(p), (points,), generator=g)] for p in owned])
    return out


def _parts(name: str, device: str, tiny: bool, batch: int | None = None):
    """(task, model, optimiser, batch, step) of config ``name`` on ``device``."""
    import torch

    from ..engine import build_task, load_config
    from ..engine.schedule import build_optimizer
    from ..models import MODELS, build_model
    from .train_speed import _step

    preset, overrides, b, n = CONFIGS[name]
    cfg = load_config(preset, {**overrides, "device": device, "data.workers": 0})
    torch.manual_seed(cfg.seed)
    task = build_task(cfg)
    args = {**cfg.model_args, **task.model_args()}
    if cfg.task == "classification":
        args.update(num_classes=40)  # ModelNet40's classes (the task reads them from the data)
    if tiny:
        b, n = _TINY
        args.update(MODELS[cfg.model].tiny)
    model = build_model(cfg.model, **args).to(device).train()
    opt, _ = build_optimizer(cfg, model)
    data = random_batch(cfg.task, b if batch is None else batch, n)
    return task, model, opt, data, lambda: _step(task, model, opt, data, torch.device(device))


def _autocast(device: str, amp: bool):
    import torch

    if not amp:
        return contextlib.nullcontext()
    return torch.autocast(torch.device(device).type, dtype=torch.bfloat16)


def _sync(device: str) -> None:
    import torch

    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def measure(name: str, *, device: str, amp: bool, warmup: int = 2, steps: int = 5, tiny: bool = False,
            count_syncs: bool = False) -> dict:
    """Time ``steps`` training steps of config ``name`` after ``warmup`` (see the module doc).

    Returns ``{"batch", "points", "step_ms", "samples_per_s", "finite_weights", "peak_mib" (CUDA)}``
    and, with ``count_syncs`` on CUDA, ``"syncs_per_step"`` and ``"sync_sites"`` (see :func:`sync_sites`).
    """
    import torch

    release(device)
    task, model, opt, data, step = _parts(name, device, tiny)
    cuda = torch.device(device).type == "cuda"
    with _autocast(device, amp):
        for _ in range(warmup):
            step()
        _sync(device)
        if cuda:
            torch.cuda.reset_peak_memory_stats(device)
        start = time.perf_counter()
        for _ in range(steps):
            step()
        _sync(device)
        seconds = (time.perf_counter() - start) / steps
    b, n = data["pos"].shape[:2]
    finite = bool(torch.stack([torch.isfinite(p).all() for p in model.parameters()]).all())
    row = {"batch": int(b), "points": int(n), "step_ms": seconds * 1e3, "samples_per_s": b / seconds,
           "finite_weights": finite}
    if cuda:
        row["peak_mib"] = torch.cuda.max_memory_allocated(device) / 2**20
        if count_syncs:
            with _autocast(device, amp):
                row.update(sync_sites(step))
    return row


def sync_sites(step, top: int = 6) -> dict:
    """Run ``step()`` once under ``torch.cuda.set_sync_debug_mode("warn")``: ``{"syncs_per_step":
    how many host synchronisations torch reported, "sync_sites": ["file:line count", ...]}`` (the
    ``top`` most frequent Python lines that asked for them, paths from the package root)."""
    import torch

    root = Path(__file__).resolve().parents[2]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            step()
            torch.cuda.synchronize()
        finally:
            torch.cuda.set_sync_debug_mode("default")
    sites = Counter()
    for w in caught:
        if "synchroniz" not in str(w.message).lower():
            continue
        path = Path(w.filename)
        where = path.relative_to(root) if path.is_relative_to(root) else Path(*path.parts[-2:])
        sites[f"{where}:{w.lineno}"] += 1
    return {"syncs_per_step": sum(sites.values()),
            "sync_sites": [f"{site} x{count}" for site, count in sites.most_common(top)]}


def release(device: str) -> None:
    """Free what earlier measurements of this process left in the CUDA caching allocator (the
    memory cap and the peak of the next measurement count only what it allocates itself)."""
    import torch

    gc.collect()
    if torch.device(device).type == "cuda":
        torch.cuda.empty_cache()


def max_batch(name: str, *, device: str, cap_gib: float = TABLE4_CAP_GIB, limit: int = 1024,
              tiny: bool = False, deadline: float | None = None) -> dict:
    """The largest batch (<= ``limit``) whose training step fits in ``cap_gib`` GiB of GPU memory
    (``torch.cuda.set_per_process_memory_fraction``; model and optimiser state included): doubling
    from 1, then bisection to within 1/16. On the CPU there is no cap (the dry run checks the code
    path). Returns ``{"max_batch", "probes", "cap_gib"}``, ``"stopped": "deadline"`` if cut short."""
    import torch

    from .train_speed import _step

    cuda = torch.device(device).type == "cuda"
    release(device)
    task, model, opt, _, _ = _parts(name, device, tiny)
    n = _TINY[1] if tiny else CONFIGS[name][3]
    dev = torch.device(device)
    if cuda and dev.index is None:  # the memory-fraction calls need an index
        dev = torch.device("cuda", torch.cuda.current_device())
    if cuda:
        total = torch.cuda.get_device_properties(dev).total_memory
        torch.cuda.set_per_process_memory_fraction(min(1.0, cap_gib * 2**30 / total), dev)
    probes = []

    def fits(b: int) -> bool:
        data = random_batch(task.name, b, n)
        try:
            _step(task, model, opt, data, dev)
            _sync(device)
            ok = True
        except torch.OutOfMemoryError:
            ok = False
        opt.zero_grad(set_to_none=True)
        del data
        gc.collect()
        if cuda:
            torch.cuda.empty_cache()
        probes.append((b, ok))
        return ok

    try:
        good, bad, stopped = _search(fits, limit, deadline)
    finally:
        if cuda:
            torch.cuda.set_per_process_memory_fraction(1.0, dev)
    row = {"max_batch": good, "probes": len(probes), "cap_gib": cap_gib if cuda else None, "limit": limit}
    if stopped:
        row["stopped"] = "deadline"
    return row


def _search(fits, limit: int, deadline: float | None) -> tuple[int, int | None, bool]:
    """(largest fitting batch, smallest failing one or None, whether the deadline stopped it)."""
    def late() -> bool:
        return deadline is not None and time.monotonic() > deadline

    good, bad, b = 0, None, 1
    while b <= limit:
        if late():
            return good, bad, True
        if not fits(b):
            bad = b
            break
        good, b = b, b * 2
    while bad is not None and bad - good > max(1, good // 16):
        if late():
            return good, bad, True
        mid = (good + bad) // 2
        good, bad = (mid, bad) if fits(mid) else (good, mid)
    return good, bad, False
