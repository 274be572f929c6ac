"""Centroid Transformer for shape classification (Wu, Liu, Liu 2021, Sec. 3.2, Fig. 3).

Block order (the paper gives widths 64-128-128-512 alternating the two kinds; we start with
self-attention so every centroid block sees context first):

    xyz -> point embedding: max over 16 xyz neighbours of an MLP of
           (neighbour - point, point) (local geometry; embed_k=0: MLP of xyz)   (B, N, 64)
    SA 64   self-attention, each point's K = 40 nearest in xyz    (B, N, 64)
    CA 128  centroid attention N -> N/2, FPS init, KNN in features (B, N/2, 128)
    SA 128  self-attention on the centroids                        (B, N/2, 128)
    CA 512  centroid attention N/2 -> N/8                          (B, N/8, 512)
    every block's features upsampled to the N input points (nearest neighbour in xyz),
    concatenated -> linear -> max-pool and average-pool, concatenated -> 3-layer MLP -> logits

``widths`` may list any number of (SA, CA) pairs, one ratio each (the paper's network has two).
With ``context_pool=True`` a :class:`~pointabstract.nn.ContextPool` follows every block.

All activations are LeakyReLU(0.2). The downsampling ablations of the paper's Table 3 are the
same network with another centroid initialisation and T = 0 (no attention update).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .. import _validate as V
from ..interop.model_input import model_inputs
from ..nn import MLP, BlockStack, CABlock, SABlock, context_pool_from_config, make_norm
from ..nn.context_pool import ContextPoolOptions
from ..nn.mlp import run_masked
from ..nn.ragged import masked_max, masked_mean, model_lengths, point_mask
from ..ops import gather_points, knn, max_over, nearest_upsample
from .spec import ModelSpec

__all__ = ["SPECS", "CentroidTransformer", "CentroidTransformerConfig"]


@dataclass
class CentroidTransformerConfig(ContextPoolOptions):
    num_classes: int = 40  # output classes
    in_channels: int = 0  # extra per-point input features (3 for normals)
    widths: tuple[int, ...] = (64, 128, 128, 512)  # SA, CA, SA, CA block widths
    heads: int = 4  # attention heads in every block
    k: int | None = 40  # KNN mask size of every block (None: full attention)
    ratios: tuple[float, ...] = (0.5, 0.25)  # the CA blocks: N -> N/2 -> N/8
    downsample: bool = True  # False: every block is self-attention (the SA baseline)
    init: str = "fps"  # centroid initialisation: fps, random, kmeans, mean_pool
    iters: int = 1  # T: centroid-attention update steps (0: initialisation only)
    normalize: str = "centroids"  # "centroids" (paper eq. 4) or "inputs" (softmax per centroid)
    knn_space: str = "feature"  # neighbourhoods of the centroid blocks
    sa_knn_space: str = "xyz"  # neighbourhoods of the self-attention blocks
    fuse_dim: int = 1024  # channels after the fusion layer
    head_dims: tuple[int, ...] = (512, 256)  # hidden sizes of the classification MLP
    dropout: float = 0.5  # dropout in the classification MLP
    norm: str = "batch"  # embedding / fusion / head normalisation: batch | layer
    block_norm: str = "layer"  # normalisation inside the attention blocks: layer | batch
    embed_k: int = 16  # point embedding: max over each point's embed_k nearest neighbours of an
    #                    MLP of (neighbour - point, point); 0: an MLP of the point alone


class CentroidTransformer(nn.Module):
    """Shape classifier; also the self-attention baseline (``downsample=False``)."""

    def __init__(self, cfg: CentroidTransformerConfig):
        super().__init__()
        pairs = len(cfg.ratios)  # (SA, CA) pairs; the paper's network has two
        if pairs < 1 or len(cfg.widths) != 2 * pairs:
            raise ValueError(f"widths must list {2 * max(pairs, 1)} block widths and ratios {max(pairs, 1)} "
                             f"ratios, got {tuple(cfg.widths)} and {tuple(cfg.ratios)} (one ratio per SA, CA "
                             "pair of blocks)")
        V.check_int("heads", cfg.heads, low=1)
        if any(w % cfg.heads for w in cfg.widths):
            raise ValueError(f"every block width must be divisible by heads = {cfg.heads}, got widths "
                             f"{tuple(cfg.widths)}")
        V.check_int("k", cfg.k, low=1, allow_none=True, note=" (full attention)")
        for i, ratio in enumerate(cfg.ratios):
            V.check_float(f"ratios[{i}]", ratio, low=0.0, low_open=True, high=1.0)
        self.cfg = cfg
        w = cfg.widths
        self.embed = nn.Sequential(
            MLP([(6 if cfg.embed_k else 3) + cfg.in_channels, w[0], w[0]], norm=cfg.norm),
            make_norm(cfg.norm, w[0]), nn.LeakyReLU(0.2))
        blocks, dim_in = [], w[0]
        for i, width in enumerate(w):
            if i % 2 == 1 and cfg.downsample:
                blocks.append(CABlock(dim_in, width, heads=cfg.heads, ratio=cfg.ratios[i // 2],
                                      init=cfg.init, iters=cfg.iters, k=cfg.k,
                                      knn_space=cfg.knn_space, normalize=cfg.normalize,
                                      norm=cfg.block_norm))
            else:
                blocks.append(SABlock(dim_in, width, heads=cfg.heads, k=cfg.k,
                                      knn_space=cfg.sa_knn_space, norm=cfg.block_norm))
            dim_in = width
        # a ContextPool after every block when cfg.context_pool (parameters blocks.i.block.*,
        # blocks.i.post.*); without it the blocks are named as in an nn.ModuleList, blocks.i.*
        self.blocks = BlockStack(blocks, post=lambda i, block: context_pool_from_config(cfg, block.dim_out))
        self.fuse = nn.Sequential(nn.Linear(sum(w), cfg.fuse_dim), make_norm(cfg.norm, cfg.fuse_dim),
                                  nn.LeakyReLU(0.2))
        self.head = MLP([2 * cfg.fuse_dim, *cfg.head_dims, cfg.num_classes], norm=cfg.norm,
                        dropout=cfg.dropout)

    def embed_points(self, pos: torch.Tensor, features: torch.Tensor | None,
                     lengths: torch.Tensor | None = None) -> torch.Tensor:
        """(B, N, 3) [+ (B, N, F)] -> (B, N, C0): per point, or max over its xyz neighbours
        (``lengths`` (B,): real points per cloud; padding is no neighbour, and no BatchNorm
        statistic)."""
        point = pos if features is None else torch.cat([pos, features], -1)
        mask = point_mask(lengths, pos.shape[1])
        if not self.cfg.embed_k:
            return run_masked(self.embed, point, mask)
        _, idx = knn(pos.detach(), pos.detach(), min(self.cfg.embed_k, pos.shape[1]), ref_lengths=lengths)
        if mask is not None:  # a cloud of fewer than K points: its missing (-1) neighbours repeat the
            edge_mask = mask.unsqueeze(-1) & (idx >= 0)  # point itself (same maximum), out of the norms
            idx = torch.where(idx >= 0, idx, idx[..., :1].clamp(min=0))
        # The first layer on an edge, W (p_j - p_i) + V x_i + c, is (W p)_j + ((V - W) p_i + c),
        # with W its xyz columns and V (the rest) its point columns: applied to the N points and
        # gathered, instead of to the N K edges (the same values; the largest single cost of the demo step).
        first = self.embed[0][0]
        rel_w, point_w = first.weight[:, :3], first.weight[:, 3:]
        own = F.linear(point, point_w - F.pad(rel_w, (0, point_w.shape[1] - 3)), first.bias)  # (B, N, C0)
        edge = gather_points(pos @ rel_w.t(), idx) + own.unsqueeze(2)  # (B, N, K, C0)
        *layers, act = [*self.embed[0]][1:] + [*self.embed][1:]  # the MLP's other layers, norm, act
        edge = run_masked(layers, edge, None if mask is None else edge_mask)
        # LeakyReLU is increasing, so it commutes with the max over the neighbours: applied to the
        # (B, N, C0) maxima instead of the (B, N, K, C0) edges (the same values and gradients)
        return act(max_over(edge, 2))

    def forward(self, pos: torch.Tensor, *, features: torch.Tensor | None = None,
                lengths: torch.Tensor | None = None, return_features: bool = False) -> dict:
        """Classify clouds.

        Args:
            pos: (B, N, 3) point coordinates, or a PyG ``Data`` / ``Batch`` (docs/pyg.md).
            features: (B, N, in_channels) extra per-point inputs (e.g. normals), if configured.
            lengths: (B,) int64 real points per cloud of a padded batch (None: all N): cloud b
                gives the logits it gives alone (docs/models.md#ragged-batches).
            return_features: also return every block's output for the viewer.

        Returns:
            ``{"logits": (B, classes)}``; with ``return_features`` also ``"blocks"``: one dict
            per block with ``features`` (B, M, C), ``pos`` (B, M, 3), ``idx`` (B, M, K)
            neighbour indices used by its attention (None for full attention) and, for
            centroid blocks, ``init_idx`` (B, M) the inputs its centroids started from.
        """
        pos, features, lengths, _ = model_inputs(pos, features=features, lengths=lengths,
                                                 channels=self.cfg.in_channels)
        V.check_cloud("pos", pos, squares=True)
        if self.cfg.in_channels:
            V.check_features("features", features, pos, channels=self.cfg.in_channels)
        lengths = model_lengths(lengths, pos)
        mask = point_mask(lengths, pos.shape[1])
        x = self.embed_points(pos, features if self.cfg.in_channels else None, lengths)
        blocks = self.blocks(x, pos, lengths=lengths)[2]["blocks"]
        fused = torch.cat([b["features"] if b["pos"] is pos else
                           nearest_upsample(b["features"], b["pos"], pos, x_lengths=b.get("lengths"))
                           for b in blocks], -1)
        f = run_masked(self.fuse, fused, mask)  # (B, N, fuse_dim)
        out = {"logits": self.head(torch.cat([masked_max(f, mask), masked_mean(f, mask)], -1))}
        if return_features:
            out["blocks"] = blocks
        return out


_CT = (CentroidTransformer, CentroidTransformerConfig, "classification")
# a forward + backward step in a fraction of a second (registry smoke test)
_TINY = {"widths": (8, 16, 16, 32), "heads": 2, "k": 8, "fuse_dim": 16, "head_dims": (16,),
         "embed_k": 4}

SPECS = {
    "centroid_transformer": ModelSpec(
        *_CT, tiny=_TINY, doc="SA-CA-SA-CA classifier, FPS init, T = 1 (the paper's ModelNet40 model)"),
    "self_attention_transformer": ModelSpec(
        *_CT, {"downsample": False, "k": None}, tiny=_TINY,
        doc="same widths, four self-attention blocks, no downsampling (k=None: full attention)"),
    # the paper's Table 3: other ways to go from N to M points in the two downsampling blocks
    "ct_fps_only": ModelSpec(*_CT, {"init": "fps", "iters": 0}, tiny=_TINY,
                             doc="Table 3: FPS subset, no update"),
    "ct_random": ModelSpec(*_CT, {"init": "random", "iters": 0}, tiny=_TINY,
                           doc="Table 3: random subset, no update"),
    "ct_kmeans": ModelSpec(*_CT, {"init": "kmeans", "iters": 0}, tiny=_TINY,
                           doc="Table 3: k-means (3 rounds), no update"),
    "ct_t2": ModelSpec(*_CT, {"iters": 2}, tiny=_TINY, doc="Table 3: centroid attention with T = 2"),
    "ct_t3": ModelSpec(*_CT, {"iters": 3}, tiny=_TINY, doc="Table 3: centroid attention with T = 3"),
}
