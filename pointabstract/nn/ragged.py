"""Ragged batches inside models: the padded ``(B, N, ...)`` tensors plus ``lengths: (B,)``.

A model's ``forward`` takes ``lengths`` (B,) int64, the real points of each cloud (the first
``lengths[b]`` rows of ``pos[b]``); ``None`` means every cloud is full. :func:`model_lengths`
checks it once at the entry and returns ``None`` when no cloud is padded, so a full batch runs
exactly the code it ran before ragged batches existed. The helpers below keep padded rows out
of poolings; :func:`~pointabstract.nn.mlp.run_masked` keeps them out of BatchNorm statistics.
"""

from __future__ import annotations

import torch

from .. import _validate as V
from ..ops import max_over

__all__ = ["all_index", "masked_max", "masked_mean", "model_lengths", "pad_rows", "point_mask"]


def model_lengths(lengths: torch.Tensor | None, pos: torch.Tensor) -> torch.Tensor | None:
    """``lengths`` checked against ``pos`` (B, N, 3): an int64 (B,) tensor in [1, N], or None
    when it is None or every cloud is full (nothing to mask)."""
    if lengths is None:
        return None
    lengths = V.check_lengths("lengths", lengths, pos.shape[0], pos.shape[1], pos.device)
    return None if bool((lengths == pos.shape[1]).all()) else lengths


def point_mask(lengths: torch.Tensor | None, n: int) -> torch.Tensor | None:
    """(B, N) bool, True at the first ``lengths[b]`` rows of cloud b (None for None)."""
    if lengths is None:
        return None
    return torch.arange(n, device=lengths.device) < lengths[:, None]


def masked_max(x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """(B, N, C) -> (B, C): the maximum over each cloud's real points (mask (B, N) or None)."""
    if mask is None:
        return max_over(x, 1)
    return max_over(x.masked_fill(~mask.unsqueeze(-1), -torch.inf), 1)


def masked_mean(x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """(B, N, C) -> (B, C): the mean over each cloud's real points (mask (B, N) or None)."""
    if mask is None:
        return x.mean(1)
    keep = mask.unsqueeze(-1).to(x.dtype)
    return (x * keep).sum(1) / keep.sum(1)


def pad_rows(x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """``x`` (B, N, ...) with the padded rows (mask (B, N) False) set to 0, so that nothing
    computed from padding (e.g. -inf of an empty maximum) reaches a later layer."""
    if mask is None:
        return x
    return x.masked_fill(~mask.view(*mask.shape, *([1] * (x.dim() - 2))), 0.0)


def all_index(query_lengths: torch.Tensor, ref_lengths: torch.Tensor, m: int, n: int) -> torch.Tensor:
    """(B, M, N) int64 neighbour indices of full attention in a padded batch: every real query
    of cloud b sees the ``ref_lengths[b]`` real inputs, -1 (padding, weight 0) elsewhere; padded
    queries see nothing. The ``idx`` argument of :func:`~pointabstract.nn.attend`."""
    ref = torch.arange(n, device=ref_lengths.device)
    idx = ref.expand(len(ref_lengths), m, n).masked_fill(ref >= ref_lengths[:, None, None], -1)
    return idx.masked_fill(~point_mask(query_lengths, m).unsqueeze(-1), -1)
