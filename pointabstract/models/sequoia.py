"""Sequoia part segmenter and classifier, and the dense softmax-attention baseline.

Sonnerly, Trang et al., *Sequoia* (ShapeNetPart: 82.7 instance / 79.5 class mIoU; softmax
attention 78.8 / 74.9; ModelNet40: 92.0 vs 89.5). Settings of the official code: dim 128,
4 heads, 4 layers, 2,048 points, head Linear(128 + 16 -> 512) -> LayerNorm -> ReLU ->
Linear(50). Where it builds a fixed voxel tree (3 divisions per axis, depth 3) we use
``ops.build_tree`` (median slabs, ``branching`` children, ``leaf_size`` points per group).

::

    xyz [+ features] -> per-point MLP -> dim                               (B, N, C)
    tree = build_tree(xyz)   (once per forward, no gradient; shared by every layer)
    L x SequoiaAttention(dim, heads, mode) over the tree, hubs carried layer to layer
        (attention="softmax": L x dense pre-norm SDPA blocks (SABlock) over all N points instead)
        context_pool=True: a ContextPool after every layer (the next layer sees pooled features)
    segmenter:  [last layer, one-hot category] -> Linear(C + 16, 512) -> LN -> ReLU
                -> Linear(50)                                          (B, N, 50)
    classifier: [max-pool, mean-pool] -> MLP -> classes                (B, classes)
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .. import _validate as V
from ..interop.model_input import model_inputs
from ..nn.blocks import BlockStack, PostBlock, SABlock, SequoiaBlock, TreeContext
from ..nn.context_pool import ContextPoolOptions, context_pool_from_config
from ..nn.mlp import MLP
from ..nn.ragged import masked_max, masked_mean, model_lengths, point_mask
from ..nn.sequoia_attention import MODES
from ..ops import build_tree
from .spec import ModelSpec

__all__ = ["SPECS", "SequoiaBackbone", "SequoiaBackboneConfig", "SequoiaClassifier", "SequoiaClsConfig",
           "SequoiaSegConfig", "SequoiaSegmenter"]

ATTENTIONS = ("sequoia", "softmax")


@dataclass
class SequoiaBackboneConfig(ContextPoolOptions):
    """The fields of the shared backbone (embedding and attention layers)."""

    in_channels: int = 0  # extra per-point input features (3 for normals)
    dim: int = 128  # channels C of every layer
    heads: int = 4  # attention heads
    layers: int = 4  # attention layers
    attention: str = "sequoia"  # sequoia (tree, O(N log N)) | softmax (dense SDPA, O(N^2))
    mode: str = "sequential"  # sequoia update order: sequential (paper) | parallel (official code)
    branching: int = 4  # tree: children per internal node
    leaf_size: int = 16  # tree: at most this many points per lowest group
    siblings_k: int = 16  # parallel mode: same-level nearest nodes each node attends to
    mlp_ratio: float = 2.0  # hidden width of each layer's MLP, times dim
    rel_pos: bool = True  # sequoia proposals: relative-position terms (false: the paper's eq. 1-2 as printed)


@dataclass
class SequoiaSegConfig(SequoiaBackboneConfig):
    num_parts: int = 50  # part logits per point (ShapeNetPart: 50)
    num_categories: int = 16  # object categories, one-hot before the head
    head_dim: int = 512  # hidden width of the segmentation head


@dataclass
class SequoiaClsConfig(SequoiaBackboneConfig):
    num_classes: int = 40  # output classes
    head_dims: tuple[int, ...] = (512, 256)  # hidden sizes of the classification MLP
    dropout: float = 0.5  # dropout in the classification MLP


class SequoiaBackbone(nn.Module):
    """Point embedding and ``layers`` attention blocks: (B, N, 3) -> list of (B, N, C).

    The blocks are :class:`~pointabstract.nn.SequoiaBlock` (tree attention, the hubs carried
    from layer to layer) or, for ``attention="softmax"``, dense
    :class:`~pointabstract.nn.SABlock` (pre-norm SDPA over all N points, GELU MLP); a
    :class:`~pointabstract.nn.BlockStack` runs them and adds the ContextPools, as in every model.
    """

    def __init__(self, cfg: SequoiaBackboneConfig):
        super().__init__()
        V.check_choice("attention", cfg.attention, ATTENTIONS)
        V.check_choice("mode", cfg.mode, MODES)
        V.check_int("layers", cfg.layers, low=1)
        self.cfg = cfg
        self.embed = MLP([3 + cfg.in_channels, cfg.dim, cfg.dim], norm="layer")
        if cfg.attention == "sequoia":
            # hubs carry over from layer to layer: only the first pools, only a parallel stack's
            # last layer skips the hub updates no output would see
            blocks = [SequoiaBlock(cfg.dim, heads=cfg.heads, mode=cfg.mode, siblings_k=cfg.siblings_k,
                                   mlp_ratio=cfg.mlp_ratio, branching=cfg.branching, leaf_size=cfg.leaf_size,
                                   pool_children=i == 0, rel_pos=cfg.rel_pos,
                                   update_hubs=cfg.mode == "sequential" or i < cfg.layers - 1)
                      for i in range(cfg.layers)]
        else:
            blocks = [SABlock(cfg.dim, cfg.dim, heads=cfg.heads, k=None, knn_space="xyz", norm="layer",
                              mlp_ratio=cfg.mlp_ratio, act="gelu") for _ in range(cfg.layers)]
        # a ContextPool after every block when cfg.context_pool (parameters blocks.i.block.*,
        # blocks.i.post.*); without it the blocks are named blocks.i.*
        self.blocks = BlockStack(blocks, post=lambda i, block: context_pool_from_config(cfg, block.dim_out))
        self.norm = nn.LayerNorm(cfg.dim)

    def forward(self, pos: torch.Tensor, features: torch.Tensor | None,
                lengths: torch.Tensor | None = None):
        """pos: (B, N, 3), features: (B, N, in_channels) or None ->
        (list of (B, N, C) per layer, the last one normalised; the tree or None).

        ``lengths`` (B,) int64, real points per cloud: a padded batch runs cloud by cloud (each
        its own tree, over its own points; nothing here mixes clouds, LayerNorm only), the outputs
        padded with zeros, and the tree is then a list of one PointTree per cloud."""
        if self.cfg.in_channels:
            V.check_features("features", features, pos, channels=self.cfg.in_channels)
        elif features is not None:
            raise ValueError(f"features given but the model has in_channels=0, got {tuple(features.shape)}")
        lengths = model_lengths(lengths, pos)
        if lengths is not None:
            return self._per_cloud(pos, features, lengths)
        x = self.embed(pos if features is None else torch.cat([pos, features], -1))
        ctx, tree = (), None
        if self.cfg.attention == "sequoia":
            tree = build_tree(pos.detach(), branching=self.cfg.branching, leaf_size=self.cfg.leaf_size)
            first = self.blocks[0].block if isinstance(self.blocks[0], PostBlock) else self.blocks[0]
            ctx = (TreeContext(tree, first.tables(tree)),)
        _, _, info = self.blocks(x, pos, *ctx)
        outs = [block["features"] for block in info["blocks"]]
        outs[-1] = self.norm(outs[-1])
        return outs, tree

    def _per_cloud(self, pos, features, lengths):
        """The forward of each cloud's real points alone, padded back to (B, N, C) per layer."""
        runs = [self(pos[b:b + 1, :n], None if features is None else features[b:b + 1, :n])
                for b, n in enumerate(lengths.tolist())]
        pad = pos.shape[1]
        outs = [torch.cat([F.pad(run[0][i], (0, 0, 0, pad - run[0][i].shape[1])) for run in runs])
                for i in range(len(runs[0][0]))]
        return outs, [run[1] for run in runs] if runs[0][1] is not None else None


def _features_out(outs, pos, tree) -> dict:
    return {"blocks": [{"features": f, "pos": pos} for f in outs], "tree": tree}


class SequoiaSegmenter(nn.Module):
    """Part segmenter: ``forward(pos, category) -> {"logits": (B, N, num_parts)}``."""

    def __init__(self, cfg: SequoiaSegConfig):
        super().__init__()
        self.cfg = cfg
        self.backbone = SequoiaBackbone(cfg)
        # Linear -> LayerNorm -> ReLU -> Linear (the official code's head)
        self.head = MLP([cfg.dim + cfg.num_categories, cfg.head_dim, cfg.num_parts], norm="layer", act="relu")

    def forward(self, pos: torch.Tensor, category: torch.Tensor | None = None, *,
                features: torch.Tensor | None = None,
                lengths: torch.Tensor | None = None, return_features: bool = False) -> dict:
        """Per-point part logits.

        Args:
            pos: (B, N, 3) point coordinates, or a PyG ``Data`` / ``Batch`` (docs/pyg.md; its
                ``category`` is used when ``category`` is None).
            category: (B,) int64 object category ids in [0, num_categories).
            lengths: (B,) int64 real points per cloud of a padded batch (None: all N); the
                logits of padded rows are not predictions.
            features: (B, N, in_channels) extra inputs (e.g. normals), when configured.
            return_features: also return ``blocks`` (one ``{"features": (B, N, C), "pos":
                (B, N, 3)}`` per layer) and ``tree`` (the PointTree; None for softmax).

        Returns:
            ``{"logits": (B, N, num_parts)}`` (unrestricted: the task masks other categories).
        """
        pos, features, lengths, given = model_inputs(pos, features=features, lengths=lengths,
                                                     channels=self.cfg.in_channels)
        category = given if category is None else category
        V.check_cloud("pos", pos, squares=True)
        V.check_ids("category", category, (pos.shape[0],), "(B,)", high=self.cfg.num_categories)
        outs, tree = self.backbone(pos, features, lengths)
        onehot = F.one_hot(category, self.cfg.num_categories).to(outs[-1].dtype)  # (B, 16)
        x = torch.cat([outs[-1], onehot.unsqueeze(1).expand(-1, pos.shape[1], -1)], -1)
        out = {"logits": self.head(x)}
        if return_features:
            out.update(_features_out(outs, pos, tree))
        return out


class SequoiaClassifier(nn.Module):
    """Shape classifier: ``forward(pos) -> {"logits": (B, num_classes)}``."""

    def __init__(self, cfg: SequoiaClsConfig):
        super().__init__()
        self.cfg = cfg
        self.backbone = SequoiaBackbone(cfg)
        self.head = MLP([2 * cfg.dim, *cfg.head_dims, cfg.num_classes], norm="layer", dropout=cfg.dropout)

    def forward(self, pos: torch.Tensor, *, features: torch.Tensor | None = None,
                lengths: torch.Tensor | None = None, return_features: bool = False) -> dict:
        """Class logits.

        Args:
            pos: (B, N, 3) point coordinates, or a PyG ``Data`` / ``Batch`` (docs/pyg.md).
            lengths: (B,) int64 real points per cloud of a padded batch (None: all N).
            features: (B, N, in_channels) extra inputs (e.g. normals), when configured.
            return_features: also return ``blocks`` and ``tree`` as the segmenter does.

        Returns:
            ``{"logits": (B, num_classes)}``.
        """
        pos, features, lengths, _ = model_inputs(pos, features=features, lengths=lengths,
                                                 channels=self.cfg.in_channels)
        V.check_cloud("pos", pos, squares=True)
        outs, tree = self.backbone(pos, features, lengths)
        mask = point_mask(model_lengths(lengths, pos), pos.shape[1])
        out = {"logits": self.head(torch.cat([masked_max(outs[-1], mask), masked_mean(outs[-1], mask)], -1))}
        if return_features:
            out.update(_features_out(outs, pos, tree))
        return out


_SEG = (SequoiaSegmenter, SequoiaSegConfig, "part_segmentation")
_CLS = (SequoiaClassifier, SequoiaClsConfig, "classification")
_TINY = {"dim": 8, "heads": 2, "layers": 2, "leaf_size": 4, "siblings_k": 4, "mlp_ratio": 1.0}
_TINY_SEG = {**_TINY, "head_dim": 16}
_TINY_CLS = {**_TINY, "head_dims": (16,)}
# demo sizes: on a shared 2-core CPU, 150 s of training at batch 16 x 512 points gave 115 steps
# (sequoia_seg_demo, about 1.3 s a step) and 187 steps (softmax_seg_demo)
_DEMO = {"dim": 48, "heads": 4, "layers": 2, "head_dim": 128}
_DEMO_CLS = {"dim": 48, "layers": 2, "head_dims": (128,)}

SPECS = {
    "sequoia_seg": ModelSpec(*_SEG, tiny=_TINY_SEG,
                             doc="Sequoia part segmenter: paper's sequential update, official widths"),
    "sequoia_seg_parallel": ModelSpec(*_SEG, {"mode": "parallel"}, tiny=_TINY_SEG,
                                      doc="Sequoia part segmenter, official code's parallel update"),
    "softmax_seg": ModelSpec(*_SEG, {"attention": "softmax"}, tiny=_TINY_SEG,
                             doc="baseline: same widths and depth, dense softmax attention (SDPA)"),
    "sequoia_seg_demo": ModelSpec(*_SEG, _DEMO, tiny=_TINY_SEG, doc="demo-sized Sequoia segmenter"),
    "softmax_seg_demo": ModelSpec(*_SEG, {**_DEMO, "attention": "softmax"}, tiny=_TINY_SEG,
                                  doc="demo-sized softmax-attention segmenter"),
    "sequoia_cls": ModelSpec(*_CLS, tiny=_TINY_CLS, doc="Sequoia shape classifier (ModelNet40)"),
    "softmax_cls": ModelSpec(*_CLS, {"attention": "softmax"}, tiny=_TINY_CLS,
                             doc="baseline: sequoia_cls with dense softmax attention (the paper's 89.5 %)"),
    "sequoia_cls_demo": ModelSpec(*_CLS, _DEMO_CLS, tiny=_TINY_CLS, doc="demo-sized Sequoia classifier"),
    "softmax_cls_demo": ModelSpec(*_CLS, {**_DEMO_CLS, "attention": "softmax"}, tiny=_TINY_CLS,
                                  doc="demo-sized softmax-attention classifier (sequoia_cls_demo's pair)"),
}
