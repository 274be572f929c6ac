"""A PyTorch Geometric ``Data`` / ``Batch`` as a model's first argument: the one conversion
every registered model calls at the entry of its ``forward`` (docs/pyg.md).

PyG keeps the clouds of a batch flat: ``pos`` (sum N_b, 3), ``batch`` (sum N_b,) the cloud id
of every node (a single ``Data`` has none: one cloud). Our models work on padded tensors; the
clouds are padded with zeros to ``(B, N_max, 3)`` and the model is given ``lengths`` (B,), so
each cloud gives what it gives alone (docs/models.md#ragged-batches). Per-point features
come from ``x`` when the ``Data`` has one, else from ``normal`` (PyG's ``SamplePoints`` name),
and a segmenter's object category from ``category``. Nothing here imports torch_geometric:
any object with a ``pos`` tensor (and optionally ``batch``, ``x``, ``normal``, ``category``)
is read the same way.
"""

from __future__ import annotations

import torch

from ._ragged import cloud_sizes, pad

__all__ = ["model_inputs"]


def model_inputs(pos, *, features: torch.Tensor | None = None, lengths: torch.Tensor | None = None,
                 channels: int = 0):
    """A model's inputs, from tensors or from a PyG ``Data`` / ``Batch``.

    Args:
        pos: (B, N, 3) tensor (returned as it is, with ``features`` and ``lengths``), or a
            ``Data`` / ``Batch`` with ``pos`` (sum N_b, 3) and, for several clouds, ``batch``.
        features, lengths: the model's own arguments; they must be None with a ``Data`` (it
            carries both).
        channels: per-point feature channels the model takes (its ``in_channels``); 0: none
            are read from the ``Data``.

    Returns:
        ``(pos (B, N, 3), features (B, N, channels) or None, lengths (B,) or None, category (B,)
        int64 or None)``; padded rows are zeros.
    """
    if isinstance(pos, torch.Tensor):
        return pos, features, lengths, None
    nodes = getattr(pos, "pos", None)
    if not isinstance(nodes, torch.Tensor):
        raise TypeError(f"pos must be a (B, N, 3) tensor or a torch_geometric Data / Batch with a pos "
                        f"tensor, got {type(pos).__name__}")
    if features is not None or lengths is not None:
        raise ValueError("with a Data / Batch as pos, pass no features or lengths: they come from its "
                         "x / normal and batch attributes")
    counts = cloud_sizes([("batch", getattr(pos, "batch", None), nodes)], None)[0]
    padded = pad(nodes, counts)
    feats = None
    if channels:
        source = next((v for v in (getattr(pos, "x", None), getattr(pos, "normal", None))
                       if isinstance(v, torch.Tensor)), None)
        if source is None or source.shape != (nodes.shape[0], channels):
            got = "neither" if source is None else tuple(source.shape)
            raise ValueError(f"the model takes {channels} feature channels per point: the Data needs x or "
                             f"normal of shape ({nodes.shape[0]}, {channels}), got {got}")
        feats = pad(source.to(nodes.dtype), counts).pos
    category = getattr(pos, "category", None)
    if isinstance(category, torch.Tensor):
        category = category.reshape(-1).long()
    return padded.pos, feats, padded.lengths, category if isinstance(category, torch.Tensor) else None
