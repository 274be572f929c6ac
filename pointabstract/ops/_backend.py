"""Which implementation runs an op: availability, the ``backend="auto"`` table, errors.

Backends:

- ``"torch"``: plain torch, CPU and CUDA, every op.
- ``"numba"``: pointabstract's compiled CPU kernels (:mod:`pointabstract.ops.kernels`); FPS
  also takes CUDA tensors, through the host.
- ``"fpsample"``, ``"pykdtree"``, ``"scipy"``, ``"open3d"``: CPU libraries called per cloud.
- ``"torch_cluster"``: CPU and CUDA, when installed (optional extra ``peers``).

Libraries only return indices; distances are always recomputed by pointabstract in the input
dtype, so every backend returns the same numbers for the same neighbours.
"""

from __future__ import annotations

import functools
import importlib

import torch

# op -> backends able to run it, in the order "auto" prefers them on CPU.
_OP_BACKENDS: dict[str, tuple[str, ...]] = {
    "farthest_point_sample": ("numba", "fpsample", "torch_cluster", "torch"),
    "knn": ("numba", "pykdtree", "scipy", "torch_cluster", "open3d", "torch"),
    "ball_query": ("numba", "scipy", "torch"),
}
_CPU_ONLY = {"numba", "fpsample", "pykdtree", "scipy", "open3d"}
# ...except these, which copy CUDA inputs to the host and the result back (measured faster)
_HOST_ROUND_TRIP = {("farthest_point_sample", "numba")}
_MODULES = {
    "numba": "numba",
    "fpsample": "fpsample",
    "pykdtree": "pykdtree.kdtree",
    "scipy": "scipy.spatial",
    "open3d": "open3d",
    "torch_cluster": "torch_cluster",
    "torch": "torch",
}

# backend="auto": the first available entry. Measured with `pointabstract bench ops`
# (tools/benchmark_ops.py) on 2 CPU threads: the numba kernels beat every CPU peer from
# B=16 N=1024 up to N=100k and are level with pykdtree on a real 81k-point scan; only a single
# tiny cloud (N=64) goes faster through pykdtree, whose call costs ~10 us less, and going
# through our pykdtree backend (which recomputes distances) would cost more than it saves.
# So the CPU rules are plain preference lists. On CUDA (`bench ops --device cuda` on an H100)
# FPS goes through the host: its m dependent steps cost a kernel launch each on the GPU, and
# the numba kernel plus two copies beat a torch loop 8-16x on every workload; torch-cluster's
# CUDA kernel (not measured) comes after it. KNN and ball query stay on the GPU with torch
# (our exact KNN runs 0.1-0.6x the speed of the approximate, unvalidated cdist + topk; docs/ops.md).
_AUTO: dict[tuple[str, str], tuple[str, ...]] = {
    ("farthest_point_sample", "cpu"): ("numba", "fpsample", "torch"),
    ("farthest_point_sample", "cuda"): ("numba", "torch_cluster", "torch"),
    ("knn", "cpu"): ("numba", "pykdtree", "scipy", "torch"),
    ("knn", "cuda"): ("torch",),
    ("ball_query", "cpu"): ("numba", "scipy", "torch"),
    ("ball_query", "cuda"): ("torch",),
}


@functools.cache
def is_available(name: str) -> bool:
    """True when the backend's library imports in this process."""
    if name == "numba":
        from . import kernels

        return kernels.AVAILABLE
    try:
        importlib.import_module(_MODULES[name])
    except Exception:  # ImportError, or a library whose shared objects are missing (open3d)
        return False
    return True


def backends() -> dict[str, list[str]]:
    """The backends available in this process for each dispatching op.

    Returns:
        ``{op name: [backend, ...]}`` in the order ``backend="auto"`` prefers them on CPU.
    """
    return {op: [b for b in names if is_available(b)] for op, names in _OP_BACKENDS.items()}


def resolve(op: str, backend: str, device: torch.device, *, channels: int = 3) -> str:
    """Return the backend that runs ``op`` on ``device``; ValueError if it cannot."""
    return _resolve(op, backend, device.type, channels == 3)


@functools.lru_cache(maxsize=256)
def _resolve(op: str, backend: str, device_type: str, xyz: bool) -> str:
    known = _OP_BACKENDS[op]

    def usable(b: str) -> bool:  # availability last: it imports the library (open3d: seconds)
        return ((device_type == "cpu" or b not in _CPU_ONLY or (op, b) in _HOST_ROUND_TRIP)
                and (xyz or b in _ANY_CHANNELS.get(op, ())) and is_available(b))

    if backend == "auto":  # the first usable entry; later ones are never imported
        kind = "cpu" if device_type == "cpu" else "cuda"
        return next((name for name in _AUTO[(op, kind)] if usable(name)), "torch")
    if backend not in known:
        raise ValueError(f"backend must be 'auto' or one of {list(known)} for {op}, got {backend!r}")
    if not usable(backend):
        reason = ("is not installed" if not is_available(backend)
                  else f"does not run on {device_type}" if backend in _CPU_ONLY and device_type != "cpu"
                  else "supports only 3 channels")
        raise ValueError(f"backend {backend!r} {reason}; available for {op} here: "
                         f"{[b for b in known if usable(b)]}")
    return backend


# Backends that accept any number of channels (the others are 3D-only).
_ANY_CHANNELS = {
    "farthest_point_sample": ("numba", "torch", "fpsample"),
    "knn": ("numba", "torch", "pykdtree", "scipy", "torch_cluster"),
}
