"""Checkpoint parameter names of older versions, mapped to today's (``upgrade_state_dict``).

Checkpoints of version 0.1.0 written before the layers were unified: the Sequoia family
wrote its layers' MLPs inline (``mlp.0`` LayerNorm, ``mlp.1`` and ``mlp.3`` Linear), its softmax
baseline as ``DenseAttentionBlock`` (one fused ``qkv`` Linear and ``out``) and its ContextPools
beside the layers (``backbone.pools.i``). Since then every layer uses
:class:`~pointabstract.nn.FeedForward` (``mlp.norm``, ``mlp.net.0``, ``mlp.net.2``), the softmax
baseline is a dense :class:`~pointabstract.nn.SABlock` (``norm``, ``attn.q``, ``attn.kv``,
``attn.out``) and the pools are post-modules of a :class:`~pointabstract.nn.BlockStack`
(``blocks.i.block.*``, ``blocks.i.post.*``). The mapping is exact: the same weights give the same
outputs. It is removed in version 0.2.0 (``REMOVE_IN``); until then loading such a checkpoint
(``engine.restored.load_weights``: eval, the viewer, predict, ``--resume``) renames its keys.
"""

from __future__ import annotations

import re

import torch
from torch import nn

__all__ = ["REMOVE_IN", "upgrade_sequoia_keys", "upgrade_state_dict"]

REMOVE_IN = "0.2.0"

_LAYER = re.compile(r"backbone\.(blocks|pools)\.(\d+)\.(.+)")
_FFN = {"mlp.0.": "mlp.norm.", "mlp.1.": "mlp.net.0.", "mlp.3.": "mlp.net.2."}


def upgrade_state_dict(model: nn.Module, state: dict) -> dict:
    """``state`` with the parameter names older versions wrote for ``model``'s family renamed
    to today's; unchanged for other models and for states already in today's names."""
    from .sequoia import SequoiaClassifier, SequoiaSegmenter

    if isinstance(model, (SequoiaClassifier, SequoiaSegmenter)):
        return upgrade_sequoia_keys(state)
    return state


def upgrade_sequoia_keys(state: dict) -> dict:
    """A Sequoia / softmax-baseline state dict in today's names (see the module docstring)."""
    pooled = any(key.startswith("backbone.pools.") for key in state)
    out = {}
    for key, value in state.items():
        match = _LAYER.fullmatch(key)
        if match is None:
            out[key] = value
            continue
        where, i, rest = match.groups()
        if where == "pools":
            out[f"backbone.blocks.{i}.post.{rest}"] = value
            continue
        prefix = f"backbone.blocks.{i}.block." if pooled else f"backbone.blocks.{i}."
        out.update({prefix + name: tensor for name, tensor in _layer_keys(rest, value).items()})
    return out


def _layer_keys(rest: str, value: torch.Tensor) -> dict:
    """One layer parameter's old name (within the layer) -> its new name(s) and value(s)."""
    for old, new in _FFN.items():
        if rest.startswith(old):
            return {new + rest[len(old):]: value}
    if rest.startswith("qkv."):  # rows: queries, then keys, then values (of every head)
        q, kv = value.split([value.shape[0] // 3, 2 * value.shape[0] // 3])
        return {"attn.q." + rest[4:]: q, "attn.kv." + rest[4:]: kv}
    if rest.startswith("out."):  # DenseAttentionBlock's output projection
        return {"attn." + rest: value}
    return {rest: value}
