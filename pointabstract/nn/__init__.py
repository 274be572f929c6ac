"""Building blocks: MLPs, (KNN-restricted) self-attention, centroid attention."""

from .attention import MultiHeadSelfAttention, attend
from .centroid_attention import INITS, CentroidAttention, farthest_from_centroid
from .mlp import MLP, FeedForward, PointBatchNorm, make_norm

__all__ = ["INITS", "MLP", "CentroidAttention", "FeedForward", "MultiHeadSelfAttention",
           "PointBatchNorm", "attend", "farthest_from_centroid", "make_norm"]
