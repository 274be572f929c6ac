"""How the trainer and evaluation read a dataset: each process's shard of the sample order, and
the DataLoader over it."""

from __future__ import annotations

import torch

__all__ = ["ShardSampler", "make_loader"]


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
                                       multiprocessing_context="fork" if workers else None)
