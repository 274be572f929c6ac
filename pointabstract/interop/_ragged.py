"""PyG's flat layout (nodes of all clouds concatenated + a sorted ``batch`` vector) <-> padded.

Private helpers of :mod:`pointabstract.interop.pyg`: the drop-ins check their inputs here and
turn ``x: (N, C)`` + ``batch: (N,)`` into the padded ``(B, N_max, C)`` + ``lengths: (B,)``
layout that :mod:`pointabstract.ops` works on.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

from .. import _validate as V

__all__ = ["Padded", "check_nodes", "cloud_sizes", "pad", "ptr_sizes"]


class Padded(NamedTuple):
    """Clouds of a flat node tensor, zero-padded.

    Attributes:
        pos: (B, N_max, C) node features, rows past ``lengths[b]`` are zeros.
        lengths: (B,) int64 nodes per cloud.
        starts: (B,) int64 flat index of each cloud's first node.
    """

    pos: torch.Tensor
    lengths: torch.Tensor
    starts: torch.Tensor

    def select(self, keep: torch.Tensor) -> Padded:
        """The clouds where the (B,) bool mask ``keep`` is true."""
        return Padded(self.pos[keep], self.lengths[keep], self.starts[keep])


def check_nodes(name: str, x, *, flatten: bool = False) -> torch.Tensor:
    """Check a flat node tensor (N, C): floating point, finite; ``flatten`` views (N, ...) as (N, C)."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if not x.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got dtype {x.dtype}")
    if flatten and x.dim() >= 1:
        x = x.reshape(x.shape[0], math.prod(x.shape[1:]))  # not -1: (0, 3) stays (0, 3)
    if x.dim() != 2 or x.shape[1] == 0:
        raise ValueError(f"{name} must have shape (N, C) with C >= 1, got {tuple(x.shape)}")
    if not bool(torch.isfinite(x).all()):
        raise ValueError(f"{name} holds NaN or Inf values")
    return x


def cloud_sizes(batches: list[tuple[str, torch.Tensor | None, torch.Tensor]],
                batch_size: int | None) -> list[torch.Tensor]:
    """Nodes per cloud, (B,) int64, for each ``(name, batch vector or None, nodes)``.

    Every vector must be a sorted (N,) integer tensor of cloud ids on the nodes' device; ``None``
    puts every node in cloud 0. B is ``batch_size`` when given, else one more than the largest
    id over all the vectors (so a cloud present on one side only simply gets no edges).
    """
    if batch_size is not None:
        batch_size = V.check_int("batch_size", batch_size, low=1)
    ids = []
    for name, batch, x in batches:
        if batch is None:
            ids.append(None)
            continue
        if not isinstance(batch, torch.Tensor) or batch.dtype.is_floating_point \
                or batch.dtype.is_complex or batch.dtype == torch.bool:
            got = batch.dtype if isinstance(batch, torch.Tensor) else type(batch).__name__
            raise TypeError(f"{name} must be an integer tensor, got {got}")
        if batch.shape != x.shape[:1]:
            raise ValueError(f"{name} must have shape (N,) = ({x.shape[0]},), got {tuple(batch.shape)}")
        if batch.device != x.device:
            raise ValueError(f"{name} must be on {x.device} like the nodes, got {batch.device}")
        batch = batch.long()
        if batch.numel() and (int(batch.min()) < 0 or bool((batch[1:] < batch[:-1]).any())):
            raise ValueError(f"{name} must hold non-negative cloud ids sorted in ascending order")
        ids.append(batch)
    top = max([int(b.max()) + 1 for b in ids if b is not None and b.numel()] + [1])
    if batch_size is not None and top > batch_size:
        raise ValueError(f"batch_size = {batch_size} but the batch vectors hold cloud id {top - 1}")
    size = top if batch_size is None else batch_size
    out = []
    for (_, _, x), batch in zip(batches, ids):
        if batch is None:
            counts = torch.zeros(size, dtype=torch.int64, device=x.device)
            counts[0] = x.shape[0]
        else:
            counts = torch.bincount(batch, minlength=size)
        out.append(counts)
    return out


def ptr_sizes(name: str, ptr, x: torch.Tensor, batch_size: int | None) -> torch.Tensor:
    """Nodes per cloud, (B,) int64, from CSR pointers ``ptr`` (B + 1,) (torch_cluster's ``ptr``).

    ``ptr`` is a 1-D integer tensor on the nodes' device or a list of ints: ``ptr[0] = 0``,
    non-decreasing, ``ptr[-1] = N``; cloud b holds nodes ``ptr[b]:ptr[b + 1]`` (``batch =
    [0, 0, 1, 1, 1, 2]`` is ``ptr = [0, 2, 5, 6]``). ``batch_size``, when given, must be B.
    """
    if isinstance(ptr, (list, tuple)):
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in ptr):
            raise TypeError(f"{name} must be an integer tensor or a list of ints, got {list(ptr)!r}")
        ptr = torch.tensor(ptr, dtype=torch.int64, device=x.device)
    elif not isinstance(ptr, torch.Tensor) or ptr.dtype.is_floating_point or ptr.dtype.is_complex \
            or ptr.dtype == torch.bool:
        got = ptr.dtype if isinstance(ptr, torch.Tensor) else type(ptr).__name__
        raise TypeError(f"{name} must be an integer tensor or a list of ints, got {got}")
    if ptr.dim() != 1 or ptr.numel() < 2:
        raise ValueError(f"{name} must have shape (B + 1,) with B >= 1, got {tuple(ptr.shape)}")
    if ptr.device != x.device:
        raise ValueError(f"{name} must be on {x.device} like the nodes, got {ptr.device}")
    ptr = ptr.long()
    first, last = int(ptr[0]), int(ptr[-1])
    if first != 0 or last != x.shape[0]:
        raise ValueError(f"{name} must start at 0 and end at N = {x.shape[0]}, got {first} ... {last}")
    counts = ptr[1:] - ptr[:-1]
    if bool((counts < 0).any()):
        raise ValueError(f"{name} must be sorted in ascending order, got {ptr.tolist()[:12]}")
    if batch_size is not None and V.check_int("batch_size", batch_size, low=1) != counts.numel():
        raise ValueError(f"batch_size = {batch_size} but {name} holds {counts.numel()} clouds")
    return counts


def pad(x: torch.Tensor, counts: torch.Tensor) -> Padded:
    """(N, C) nodes grouped by cloud, ``counts`` (B,) -> :class:`Padded` (B, N_max, C)."""
    starts = torch.cumsum(counts, 0) - counts
    n_max = int(counts.max()) if counts.numel() else 0
    out = x.new_zeros(counts.numel(), n_max, x.shape[1])
    cloud = torch.repeat_interleave(torch.arange(counts.numel(), device=x.device), counts)
    slot = torch.arange(x.shape[0], device=x.device) - starts[cloud]
    out[cloud, slot] = x
    return Padded(out, counts, starts)
