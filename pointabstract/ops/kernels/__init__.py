"""CPU kernels compiled by numba (the ``"numba"`` backend of :mod:`pointabstract.ops`).

Each kernel exists twice: a parallel driver (``*_par``, numba ``prange`` over clouds or query
chunks) and a serial driver (``*_ser``) over the same per-cloud / per-chunk functions.
:func:`run` picks one:

- serial when torch is limited to one thread (DataLoader workers, ``torch.set_num_threads(1)``),
  so the ops never oversubscribe cores that the caller reserved;
- serial in a process forked from one that already started numba's OpenMP pool: GNU OpenMP
  aborts such a child ("fork() called from a process already using GNU OpenMP").

Kernels are compiled on first use (a few seconds each) and cached in ``__pycache__``.
"""

from __future__ import annotations

import os

import torch

try:  # numba is a core dependency; the ops fall back to other backends if it is broken
    import numba

    AVAILABLE = True
    # numba's OpenMP pool (the system libgomp, not torch's bundled copy, which has already read
    # its settings) must not busy-wait between kernels: its spinning threads would steal the
    # cores torch's threads need for the next op (measured: a tiny training step 6x slower).
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    if "NUMBA_THREADING_LAYER" not in os.environ:
        # OpenMP first: thread-safe, and no warning about an old TBB some wheels bundle
        numba.config.THREADING_LAYER_PRIORITY = ["omp", "tbb", "workqueue"]
except ImportError:  # pragma: no cover - exercised only in broken installs
    numba = None
    AVAILABLE = False

def takes(*tensors: torch.Tensor) -> bool:
    """True if the compiled kernels can run on ``tensors``: numba works, and all of them are CPU
    tensors of one dtype, float32 or float64 (what the kernels are compiled for)."""
    first = tensors[0]
    return (AVAILABLE and first.dtype in (torch.float32, torch.float64)
            and all(t.device.type == "cpu" and t.dtype == first.dtype for t in tensors))


def to_numpy(x: torch.Tensor):
    """A contiguous numpy view / copy for the kernels (float16 / bfloat16 widened exactly to
    float32: the kernels are compiled for float32, float64 and int64)."""
    if x.dtype in (torch.float16, torch.bfloat16):
        x = x.float()
    import numpy as np

    return np.ascontiguousarray(x.detach().cpu().numpy())


_parallel_pid: int | None = None  # pid of the process that started the parallel pool
_PARALLEL_FROM = 1 << 16  # operations; a parallel launch costs about 5-10 us


def _parallel_ok() -> bool:
    if torch.get_num_threads() <= 1:
        return False
    return _parallel_pid is None or _parallel_pid == os.getpid()


def run(par_fn, ser_fn, *args, work: int = 1 << 30):
    """Call ``par_fn(*args)`` with as many threads as torch uses, or ``ser_fn(*args)``.

    ``work`` is a rough operation count; below ``_PARALLEL_FROM`` starting the thread pool
    costs more than it saves and the serial driver runs.
    """
    global _parallel_pid
    if work < _PARALLEL_FROM or not _parallel_ok():
        return ser_fn(*args)
    threads = min(torch.get_num_threads(), numba.config.NUMBA_NUM_THREADS)
    numba.set_num_threads(threads)
    _parallel_pid = os.getpid()
    return par_fn(*args)
