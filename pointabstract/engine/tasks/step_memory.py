"""How much memory one training step of a run needs, measured before training starts
(:func:`~.preflight.check_step_memory` refuses a run that cannot fit).

The run's model (built on the CPU, the RNG state kept) runs its task's ``step`` on a probe
batch of 2 random clouds with the keys the task reads (:data:`PROBE_POINTS`; a run of fewer
points: at its own N). Two measures, both in torch tensor bytes:

- **kept** (one forward pass, at 256 and 512 points): the tensors autograd keeps for the
  backward pass (``torch.autograd.graph.saved_tensors_hooks``, each storage once, weights left
  out);
- **peak** (a forward and a backward pass, at 2,048 and 4,096 points): the most bytes of tensors
  alive at once, every tensor created followed from its op (a ``TorchDispatchMode``) to its
  release (a weak reference), views counted with the storage they share. Larger than the kept
  sizes because ops change method with the cloud's size: the demo capsule autoencoder's peak
  grows by 1,040 bytes per point below 1,024 points and by 1,790 above 2,048.

Each is fitted linearly in N (``per_point * N + per_cloud``, per cloud of the batch) and scaled
to the run; the weights and their gradients are added. Measured against the process's peak
resident memory (``VmHWM``) of one step at 8,192-16,384 points, batch 4: the peak is 117 MB of
122 MB for the demo capsule autoencoder, 1,468 of 1,484 MB for the demo classifier and 814 of
1,148 MB for the demo part segmenter (whose tree kernels allocate outside torch), so it is a
lower bound; the kept activations were 1.5-2.3x below the peak (:data:`PEAK_OVER_KEPT` allows 3).
"""

from __future__ import annotations

import os
import weakref

import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

__all__ = ["PEAK_OVER_KEPT", "PROBE_POINTS", "TASK_KEYS", "free_memory", "probe_sizes", "step_bytes"]

PROBE_POINTS = {"kept": (256, 512), "peak": (2048, 4096)}  # cloud sizes each measure is taken at
PEAK_OVER_KEPT = 3  # the peak of a step is within 3x the activations it keeps (1.5-2.3x measured)
# the sample keys each built-in task reads besides pos / normal (another task's batch is not known)
TASK_KEYS = {"classification": ("label",), "part_segmentation": ("category", "part"), "reconstruction": ()}


def probe_sizes(n: int, *, peak: bool = False) -> tuple[int, ...]:
    """The cloud sizes a run of ``n`` points is measured at."""
    sizes = PROBE_POINTS["peak" if peak else "kept"]
    return (n,) if n <= sizes[-1] else sizes


def step_bytes(cfg, task, *, peak: bool = False) -> tuple[float, float, int] | None:
    """``(per_point, per_cloud, weights)``: bytes of one training step of the run's model per
    point of a cloud and per cloud (kept activations, or with ``peak`` the peak; module
    docstring), and the bytes of its weights and their gradients. None for a task whose batch the
    probe does not know (:data:`TASK_KEYS`) or a model that cannot run it (then nothing is said
    about memory). The RNG state is left as it was."""
    from ...data import collate
    from ...models import build_model

    if cfg.task not in TASK_KEYS or cfg.data.num_points == "all":  # "all": no one size to probe
        return None
    sizes = probe_sizes(int(cfg.data.num_points), peak=peak)
    measure = _peak_bytes if peak else _kept_bytes
    with torch.random.fork_rng(devices=[]):
        try:
            model = build_model(cfg.model, **{**cfg.model_args, **task.model_args()}).train()
            used = [measure(model, task, collate(_probe_clouds(cfg, n))) / 2 for n in sizes]
        except (ValueError, RuntimeError, TypeError, IndexError):
            return None
    weights = 2 * sum(p.numel() * p.element_size() for p in model.parameters())
    if len(sizes) == 1:
        return used[0] / sizes[0], 0.0, weights
    per_point = max(0.0, (used[1] - used[0]) / (sizes[1] - sizes[0]))
    return per_point, max(0.0, used[0] - per_point * sizes[0]), weights


def free_memory(cfg, world_size: int) -> tuple[int | None, str]:
    """``(bytes, where)`` free for one training process: the current GPU for a CUDA run (as
    ``init_distributed`` picks it), else this machine's available memory shared by its
    processes (``LOCAL_WORLD_SIZE``); None where it is not known."""
    local = int(os.environ.get("LOCAL_WORLD_SIZE", world_size))
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if str(cfg.device) != "cpu" and gpus and (str(cfg.device) != "auto" or gpus >= local):
        device = torch.cuda.current_device()
        return torch.cuda.mem_get_info(device)[0], f"GPU {device}"
    try:
        with open("/proc/meminfo") as handle:
            rows = dict(line.split(":", 1) for line in handle)
        free = int(rows["MemAvailable"].split()[0]) * 1024
    except (OSError, KeyError, ValueError):
        return None, ""
    shared = f" for each of its {local} processes" if local > 1 else ""
    return free // max(1, local), f"this machine{shared}"


def _probe_clouds(cfg, n: int) -> list[dict]:
    """Two random samples of ``n`` points with the keys the run's task reads."""
    rng = np.random.default_rng(0)
    keep = TASK_KEYS[cfg.task]
    samples = []
    for _ in range(2):
        pos = rng.uniform(-1, 1, (n, 3)).astype(np.float32)
        sample = {"pos": pos, "label": 0, "category": 0, "part": np.zeros(n, np.int64)}  # Airplane, part 0
        if cfg.data.use_normals:
            sample["normal"] = pos / np.linalg.norm(pos, axis=1, keepdims=True)
        samples.append({k: v for k, v in sample.items() if k in ("pos", "normal", *keep)})
    return samples


def _kept_bytes(model, task, batch: dict) -> int:
    """Bytes of the tensors one ``task.step`` keeps for the backward pass (each storage once,
    the model's weights left out)."""
    weights = {p.untyped_storage().data_ptr() for p in model.parameters()}
    kept: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        if storage.data_ptr() not in weights:
            kept[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        task.step(model, batch, torch.device("cpu"))
    return sum(kept.values())


def _peak_bytes(model, task, batch: dict) -> int:
    """The most bytes of tensors alive at once during ``task.step`` and its backward pass."""
    tensors = [*model.parameters(), *model.buffers(), *(v for v in batch.values() if torch.is_tensor(v))]
    with _Peak({t.untyped_storage().data_ptr() for t in tensors}) as peak:
        loss, _ = task.step(model, batch, torch.device("cpu"))
        loss.backward()
    return peak.peak


class _Peak(TorchDispatchMode):
    """Follows every CPU tensor an op creates until its last reference is gone (module docstring);
    ``peak`` is the most bytes alive at once. Storages in ``known`` (weights, the batch) are
    left out."""

    def __init__(self, known: set[int]):
        super().__init__()
        self.known, self.live, self.now, self.peak = known, {}, 0, 0

    def _release(self, key: int) -> None:
        entry = self.live.get(key)
        if entry is not None:
            entry[1] -= 1
            if entry[1] == 0:
                self.now -= entry[0]
                del self.live[key]

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in tree_leaves(out):
            if not isinstance(t, torch.Tensor) or t.device.type != "cpu":
                continue
            storage = t.untyped_storage()
            key = storage.data_ptr()
            if key == 0 or key in self.known:
                continue
            if key in self.live:
                self.live[key][1] += 1
            else:
                self.live[key] = [storage.nbytes(), 1]
                self.now += storage.nbytes()
                self.peak = max(self.peak, self.now)
            weakref.finalize(t, self._release, key)
        return out
