"""k-nearest-neighbour graphs as PyG ``edge_index`` tensors."""

from __future__ import annotations

import torch

from .. import _validate as V
from .knn import knn

__all__ = ["knn_graph"]


def knn_graph(pos: torch.Tensor, k: int, *, batch: torch.Tensor | None = None, loop: bool = False,
              flow: str = "source_to_target", backend: str = "auto") -> torch.Tensor:
    """The k-NN graph of a point set in PyTorch Geometric's convention.

    A drop-in for ``torch_geometric.nn.knn_graph`` (which needs pyg-lib or torch-cluster):
    with ``flow="source_to_target"`` an edge ``(j, i)`` means "j is one of the k nearest
    neighbours of i", so messages flow from neighbours to centres. Edges are grouped by
    centre ``i`` in increasing order, each centre's neighbours nearest first (ties: lowest
    index). A cloud with fewer than ``k + 1`` points gives each centre all the others.

    Args:
        pos: (N, C) node positions (PyG layout, clouds concatenated) or (B, N, C) (then node
            ``b * N + i`` is point i of cloud b).
        k: neighbours per node, >= 1.
        batch: (N,) int64 cloud id of every node, sorted ascending (PyG layout only).
        loop: include the self-edge ``(i, i)`` among the k.
        flow: ``"source_to_target"`` (row 0 = neighbours, row 1 = centres) or
            ``"target_to_source"`` (rows swapped).
        backend: KNN backend (see ``knn``).

    Returns:
        edge_index: (2, E) int64, E = N * k when every cloud has more than k points.
    """
    if isinstance(pos, torch.Tensor) and pos.dim() == 3:
        if batch is not None:
            raise ValueError("batch must be None when pos has shape (B, N, C); "
                             f"got pos {tuple(pos.shape)} and a batch vector")
        padded, lengths = pos, None
    else:
        padded, lengths = _to_padded(pos, batch)
    V.check_cloud("pos", padded, dim=None)
    V.check_choice("flow", flow, ("source_to_target", "target_to_source"))
    k = V.check_int("k", k, low=1)
    nb, n = padded.shape[:2]
    kk = min(k + (0 if loop else 1), n)
    _, idx = knn(padded, padded, kk, query_lengths=lengths, ref_lengths=lengths, backend=backend)
    centre = torch.arange(n, device=pos.device).view(1, n, 1).expand_as(idx)
    keep = idx >= 0
    if not loop:
        keep &= idx != centre
    # at most k kept per centre (without loops a duplicate point may push the centre out)
    keep &= keep.long().cumsum(-1) <= k
    offsets = _offsets(lengths, nb, n, pos.device).view(nb, 1, 1)
    src = (idx + offsets)[keep]
    dst = (centre + offsets)[keep]
    edge_index = torch.stack([src, dst]) if flow == "source_to_target" else torch.stack([dst, src])
    return edge_index


def _to_padded(pos: torch.Tensor, batch: torch.Tensor | None):
    """(N, C) + sorted batch vector -> (B, N_max, C) zero-padded and lengths (B,)."""
    if not isinstance(pos, torch.Tensor) or pos.dim() != 2:
        shape = tuple(pos.shape) if isinstance(pos, torch.Tensor) else type(pos).__name__
        raise ValueError(f"pos must have shape (N, C) or (B, N, C), got {shape}")
    if batch is None:
        return pos.unsqueeze(0), None
    if not isinstance(batch, torch.Tensor) or batch.dtype != torch.int64:
        raise TypeError(f"batch must be an int64 tensor, got "
                        f"{batch.dtype if isinstance(batch, torch.Tensor) else type(batch).__name__}")
    if batch.shape != pos.shape[:1] or batch.device != pos.device:
        raise ValueError(f"batch must have shape (N,) = ({pos.shape[0]},) on {pos.device}, "
                         f"got {tuple(batch.shape)} on {batch.device}")
    if batch.numel() and (int(batch.min()) < 0 or bool((batch[1:] < batch[:-1]).any())):
        raise ValueError("batch must hold non-negative cloud ids sorted in ascending order")
    lengths = torch.bincount(batch)
    nb, n_max = lengths.numel(), int(lengths.max())
    if int(lengths.min()) == 0:
        raise ValueError("batch skips a cloud id: every cloud must have at least one point")
    starts = torch.cumsum(lengths, 0) - lengths
    slot = torch.arange(pos.shape[0], device=pos.device) - starts[batch]
    padded = pos.new_zeros(nb, n_max, pos.shape[1])
    padded[batch, slot] = pos
    return padded, lengths


def _offsets(lengths, nb, n, device):
    if lengths is None:
        return torch.arange(nb, device=device) * n
    return torch.cumsum(lengths, 0) - lengths
