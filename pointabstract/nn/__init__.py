"""Building blocks: MLPs, (KNN-restricted) attention, centroid attention, and the block
protocol with its runner (:mod:`pointabstract.nn.blocks`)."""

from .attention import NORMALIZE, MultiHeadSelfAttention, attend, attend_naive
from .blocks import BlockStack, CABlock, PostBlock, SABlock
from .centroid_attention import INITS, CentroidAttention, farthest_from_centroid
from .mlp import MLP, FeedForward, PointBatchNorm, make_norm

__all__ = [
    "INITS",
    "MLP",
    "NORMALIZE",
    "BlockStack",
    "CABlock",
    "CentroidAttention",
    "FeedForward",
    "MultiHeadSelfAttention",
    "PointBatchNorm",
    "PostBlock",
    "SABlock",
    "attend",
    "attend_naive",
    "farthest_from_centroid",
    "make_norm",
]
