"""Compile the kernels once, at set-up (``python -m pointabstract.ops.kernels.warm``).

numba compiles a kernel on its first call and caches the machine code in ``__pycache__``; a
fresh install would otherwise pay for it (about a minute on 2 cores) inside the first command
that trains or evaluates. This runs every op that has a kernel on small float32 inputs, through
the parallel drivers (as many threads as torch uses) and the serial ones (one thread, as in
DataLoader workers), so the compiled code is on disk before the first real command.
``python -m pointabstract.ops.kernels.warm GROUP ...`` compiles only the named :data:`GROUPS`.
"""

from __future__ import annotations

import sys
import time

import numpy as np
import torch

__all__ = ["GROUPS", "compile_kernels"]


def _knn(generator: torch.Generator) -> None:
    from .. import knn

    pos = torch.rand(4, 1024, 3, generator=generator)
    feats = torch.rand(4, 1024, 16, generator=generator)
    knn(pos, pos, 16)  # xyz: the KD-tree kernels
    knn(feats[:, :256], feats, 16)  # features: the matmul filter + exact selection kernels


def _sampling(generator: torch.Generator) -> None:
    from .. import ball_query, farthest_point_sample

    pos = torch.rand(4, 1024, 3, generator=generator)
    farthest_point_sample(pos, 256)
    ball_query(pos, pos, 0.2, 16)


def _attention(generator: torch.Generator) -> None:
    """Neighbour attention, forward and backward (nn/attention.py's compiled products)."""
    from . import neighbour_attention, run

    rng = np.random.default_rng(0)
    q = rng.standard_normal((4, 256, 4, 8), dtype=np.float32)
    kv = rng.standard_normal((4, 1024, 64), dtype=np.float32)
    idx = rng.integers(0, 1024, (4, 256, 16))
    w = rng.standard_normal((4, 256, 16, 4), dtype=np.float32)
    kernel = neighbour_attention
    run(kernel.dot_forward, kernel.dot_forward_ser, q, kv, idx, np.empty((4, 256, 16, 4), np.float32))
    run(kernel.sum_forward, kernel.sum_forward_ser, w, kv, idx, np.empty_like(q))
    grad_kv = np.zeros_like(kv)
    run(kernel.dot_backward, kernel.dot_backward_ser, w, q, kv, idx, np.empty_like(q), grad_kv)
    run(kernel.sum_backward, kernel.sum_backward_ser, q, w, kv, idx, np.empty_like(w), grad_kv)


def _reduce(generator: torch.Generator) -> None:
    """Max over a middle axis and a row gather, with their gradients (ops.max_over; the
    scatter-add of gather_points' backward), above the parallel threshold."""
    from .. import gather_points, max_over

    x = torch.rand(256, 16, 32, generator=generator, requires_grad=True)
    max_over(x, 1).sum().backward()
    rows = torch.randint(0, 16, (4, 4096), generator=generator)
    gather_points(x.detach()[:4].requires_grad_(), rows).sum().backward()


# name -> the calls that compile one independent set of kernels: each can run in its own
# process (``python -m pointabstract.ops.kernels.warm GROUP``), so a many-core machine compiles
# them side by side (numba writes each cache entry atomically)
GROUPS = {"knn": _knn, "sampling": _sampling, "attention": _attention, "reduce": _reduce}


def compile_kernels(groups: list[str] | None = None) -> float:
    """Run every kernel of ``groups`` (default: all of :data:`GROUPS`) once, parallel then serial
    drivers; returns the seconds it took."""
    from . import AVAILABLE

    for name in groups or ():
        if name not in GROUPS:
            raise ValueError(f"unknown kernel group {name!r}; choose from {sorted(GROUPS)}")
    if not AVAILABLE:
        return 0.0
    start = time.perf_counter()
    threads = torch.get_num_threads()
    generator = torch.Generator().manual_seed(0)
    try:
        for count in sorted({max(threads, 2), 1}, reverse=True):  # parallel drivers, then serial
            torch.set_num_threads(count)
            for name in groups or GROUPS:
                GROUPS[name](generator)
    finally:
        torch.set_num_threads(threads)
    return time.perf_counter() - start


if __name__ == "__main__":  # pragma: no cover - the Makefile's set-up step (and bench gpu's, per group)
    seconds = compile_kernels(sys.argv[1:] or None)
    print(f"pointabstract kernels compiled and cached in {seconds:.0f} s", file=sys.stderr)
