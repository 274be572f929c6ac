"""Building blocks: MLPs, (KNN-restricted) attention, centroid attention, the block
protocol with its runner (:mod:`pointabstract.nn.blocks`), point capsules and their routings,
Sequoia tree attention, and ContextPool (adaptive context pooling after a block)."""

from .attention import NORMALIZE, MultiHeadSelfAttention, attend, attend_naive
from .blocks import BlockStack, CABlock, PostBlock, SABlock, SequoiaBlock, TreeContext
from .capsules import PrimaryPointCapsules, squash
from .centroid_attention import INITS, CentroidAttention, farthest_from_centroid
from .context_pool import LOCALITIES, MAPPINGS, SIZES, WEIGHTS, ContextPool, context_pool_from_config
from .mlp import ACTIVATIONS, MLP, FeedForward, PointBatchNorm, make_activation, make_norm
from .routing import ROUTINGS, CentroidRouting, DynamicRouting, EMRouting, build_routing
from .sequoia_attention import SequoiaAttention, TreeProposal
from .sequoia_attention_naive import sequoia_attention_naive

__all__ = [
    "ACTIVATIONS",
    "INITS",
    "LOCALITIES",
    "MAPPINGS",
    "MLP",
    "NORMALIZE",
    "ROUTINGS",
    "SIZES",
    "BlockStack",
    "CABlock",
    "CentroidAttention",
    "CentroidRouting",
    "ContextPool",
    "DynamicRouting",
    "EMRouting",
    "FeedForward",
    "MultiHeadSelfAttention",
    "PointBatchNorm",
    "PostBlock",
    "PrimaryPointCapsules",
    "SABlock",
    "SequoiaAttention",
    "SequoiaBlock",
    "TreeContext",
    "WEIGHTS",
    "TreeProposal",
    "attend",
    "attend_naive",
    "build_routing",
    "context_pool_from_config",
    "farthest_from_centroid",
    "make_activation",
    "make_norm",
    "sequoia_attention_naive",
    "squash",
]
