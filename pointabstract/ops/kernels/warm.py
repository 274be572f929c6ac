"""Compile the kernels once, at set-up (``python -m pointabstract.ops.kernels.warm``).

numba compiles a kernel on its first call and caches the machine code in ``__pycache__``; a
fresh install would otherwise pay for it (about a minute on 2 cores) inside the first command
that trains or evaluates. This runs every op that has a kernel on small float32 inputs, through
the parallel drivers (as many threads as torch uses) and the serial ones (one thread, as in
DataLoader workers), so the compiled code is on disk before the first real command.
``python -m pointabstract.ops.kernels.warm GROUP[:PASS] ...`` compiles only the named
:data:`GROUPS` (and :data:`PASSES`), one process each on a many-core machine.
"""

from __future__ import annotations

import sys
import time

import numpy as np
import torch

__all__ = ["GROUPS", "PASSES", "compile_kernels"]


def _knn_xyz(generator: torch.Generator) -> None:
    from .. import knn

    pos = torch.rand(4, 1024, 3, generator=generator)
    knn(pos, pos, 16)  # the KD-tree build and query kernels


def _knn_features(generator: torch.Generator) -> None:
    from .. import knn

    feats = torch.rand(4, 1024, 16, generator=generator)
    knn(feats[:, :256], feats, 16)  # the matmul filter + exact selection kernels


def _fps(generator: torch.Generator) -> None:
    from .. import farthest_point_sample

    farthest_point_sample(torch.rand(4, 1024, 3, generator=generator), 256)


def _ball_query(generator: torch.Generator) -> None:
    from .. import ball_query

    pos = torch.rand(4, 1024, 3, generator=generator)
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


# name -> the calls that compile one set of kernels: each group and pass can run in its own
# process (``python -m pointabstract.ops.kernels.warm GROUP[:PASS]``), so a many-core machine
# compiles them side by side (numba writes each cache entry atomically)
GROUPS = {"knn_xyz": _knn_xyz, "knn_features": _knn_features, "fps": _fps, "ball_query": _ball_query,
          "attention": _attention, "reduce": _reduce}
PASSES = ("parallel", "serial")  # the drivers compiled: prange over clouds / chunks, and one thread


def compile_kernels(groups: list[str] | None = None, *, passes: tuple[str, ...] = PASSES) -> float:
    """Run every kernel of ``groups`` (default: all of :data:`GROUPS`) once through the drivers
    of ``passes`` (:data:`PASSES`: parallel, as many threads as torch uses, then serial); returns
    the seconds it took."""
    from . import AVAILABLE

    for name in groups or ():
        if name not in GROUPS:
            raise ValueError(f"unknown kernel group {name!r}; choose from {sorted(GROUPS)}")
    for name in passes:
        if name not in PASSES:
            raise ValueError(f"unknown pass {name!r}; choose from {list(PASSES)}")
    if not AVAILABLE:
        return 0.0
    start = time.perf_counter()
    threads = torch.get_num_threads()
    generator = torch.Generator().manual_seed(0)
    try:
        for name in PASSES:
            if name in passes:
                torch.set_num_threads(max(threads, 2) if name == "parallel" else 1)
                for group in groups or GROUPS:
                    GROUPS[group](generator)
    finally:
        torch.set_num_threads(threads)
    return time.perf_counter() - start


def _main(argv: list[str]) -> float:
    """``GROUP`` or ``GROUP:PASS`` arguments (none: everything)."""
    if not argv:
        return compile_kernels()
    seconds = 0.0
    for arg in argv:
        group, _, which = arg.partition(":")
        seconds += compile_kernels([group], passes=(which,) if which else PASSES)
    return seconds


if __name__ == "__main__":  # pragma: no cover - the Makefile's set-up step (and bench gpu's, per group)
    seconds = _main(sys.argv[1:])
    print(f"pointabstract kernels compiled and cached in {seconds:.0f} s", file=sys.stderr)
