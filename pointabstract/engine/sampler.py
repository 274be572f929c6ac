"""How the trainer and evaluation read a dataset: each process's shard of the sample order, and
the DataLoader over it.

Ctrl-C reaches every process of the terminal's process group, DataLoader workers included.
Workers leave it to the main process (which stops them through the DataLoader's own shutdown)
and say nothing when the main process goes away mid-transfer (:func:`quiet_worker`), so an
interrupt ends with the one line the command prints, not a worker's "Exception ignored" or
``BrokenPipeError`` traceback.
"""

from __future__ import annotations

import os
import signal
import sys

import torch

__all__ = ["ShardSampler", "make_loader", "quiet_worker"]


class ShardSampler(torch.utils.data.Sampler):
    """Indices of one process's shard: a seeded shuffle per epoch (training) or the plain
    order (evaluation), split round-robin over processes without padding or duplicates.

    With ``batch_size`` (the global training batch, a multiple of ``world_size``), consecutive
    per-process batches of ``batch_size / world_size`` together hold exactly the global batches
    of a one-process run; a last global batch with fewer samples than processes (which would
    leave a process without a batch) is dropped, which never happens with one process."""

    def __init__(self, n: int, *, rank: int = 0, world_size: int = 1, shuffle: bool = False,
                 seed: int = 0, batch_size: int | None = None):
        self.n, self.rank, self.world, self.shuffle, self.seed = n, rank, world_size, shuffle, seed
        self.epoch = 0
        tail = n % batch_size if batch_size else 0
        self.used = n - tail if 0 < tail < world_size else n

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __iter__(self):
        if self.shuffle:
            g = torch.Generator().manual_seed(self.seed * 1_000_003 + self.epoch)
            order = torch.randperm(self.n, generator=g).tolist()
        else:
            order = list(range(self.n))
        return iter(order[: self.used][self.rank :: self.world])

    def __len__(self) -> int:
        return len(range(self.rank, self.used, self.world))


def make_loader(ds, sampler, batch_size: int, workers: int, *, generator: torch.Generator | None = None):
    """A DataLoader over ``ds`` with our collate (ragged batches get ``lengths``).

    Each pass over a DataLoader draws its workers' base seed from ``generator``, or from the
    global torch RNG when it is None (what training draws dropout from): evaluation loaders get
    a generator of their own, so that how often a run evaluates does not change its training."""
    from ..data import collate

    return torch.utils.data.DataLoader(ds, batch_size=batch_size, sampler=sampler, num_workers=workers,
                                       collate_fn=collate, persistent_workers=False, generator=generator,
                                       multiprocessing_context="fork" if workers else None,
                                       worker_init_fn=quiet_worker if workers else None)


def quiet_worker(worker_id: int) -> None:
    """Start-up of a DataLoader worker (``worker_init_fn``): Ctrl-C (SIGINT) is ignored, the main
    process handles it and shuts the workers down; SIGTERM (the DataLoader's own ``terminate`` of a
    worker that does not stop, or a scheduler ending the job) ends the worker at once without a
    traceback, instead of the main process's handler (inherited through fork) raising inside the
    worker's exit; a broken connection to the main process (it stopped mid-transfer) is not
    printed. Everything else is reported as before."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda signum, frame: os._exit(0))
    hook = sys.excepthook

    def quiet(kind, value, traceback):
        if not issubclass(kind, (BrokenPipeError, ConnectionResetError)):
            hook(kind, value, traceback)

    sys.excepthook = quiet
