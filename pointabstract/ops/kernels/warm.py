"""Compile the kernels once, at set-up (``python -m pointabstract.ops.kernels.warm``).

numba compiles a kernel on its first call and caches the machine code in ``__pycache__``; a
fresh install would otherwise pay for it (about a minute on 2 cores) inside the first command
that trains or evaluates. This runs every op that has a kernel on small float32 inputs, through
the parallel drivers (as many threads as torch uses) and the serial ones (one thread, as in
DataLoader workers), so the compiled code is on disk before the first real command.
"""

from __future__ import annotations

import sys
import time

import numpy as np
import torch

__all__ = ["compile_kernels"]


def _ops(generator: torch.Generator) -> None:
    from .. import ball_query, farthest_point_sample, gather_points, knn, max_over
    from . import neighbour_attention, run

    pos = torch.rand(4, 1024, 3, generator=generator)
    feats = torch.rand(4, 1024, 16, generator=generator)
    knn(pos, pos, 16)  # xyz: the KD-tree kernels
    knn(feats[:, :256], feats, 16)  # features: the matmul filter + exact selection kernels
    farthest_point_sample(pos, 256)
    ball_query(pos, pos, 0.2, 16)
    # neighbour attention, forward and backward (nn/attention.py's compiled products)
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
    # max over a middle axis and a row gather, with their gradients (ops.max_over; the
    # scatter-add of gather_points' backward), above the parallel threshold
    x = torch.rand(256, 16, 32, generator=generator, requires_grad=True)
    max_over(x, 1).sum().backward()
    rows = torch.randint(0, 16, (4, 4096), generator=generator)
    gather_points(x.detach()[:4].requires_grad_(), rows).sum().backward()


def compile_kernels() -> float:
    """Run every kernel once, parallel then serial drivers; returns the seconds it took."""
    from . import AVAILABLE

    if not AVAILABLE:
        return 0.0
    start = time.perf_counter()
    threads = torch.get_num_threads()
    generator = torch.Generator().manual_seed(0)
    try:
        for count in sorted({max(threads, 2), 1}, reverse=True):  # parallel drivers, then serial
            torch.set_num_threads(count)
            _ops(generator)
    finally:
        torch.set_num_threads(threads)
    return time.perf_counter() - start


if __name__ == "__main__":  # pragma: no cover - the Makefile's set-up step
    print(f"pointabstract kernels compiled and cached in {compile_kernels():.0f} s", file=sys.stderr)
