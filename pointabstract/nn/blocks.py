"""Point blocks, the one protocol they share, and the runner that chains them.

A *block* maps a cloud's features and positions to new ones::

    block(x: (B, N, C), pos: (B, N, 3), *ctx) -> (x': (B, M, C'), pos': (B, M, 3), info: dict)

- M = N for blocks that keep the points (self-attention), M < N for blocks that summarise
  them (centroid attention); ``pos'`` are the positions of the M outputs.
- ``ctx`` is extra per-batch context a block may need (a point tree, for instance); the
  runner passes the same ``ctx`` to every block, and a block that needs none takes none.
  :class:`SequoiaBlock` takes a :class:`TreeContext`, through which each layer also hands its
  hub states to the next.
- ``info`` carries what the viewer and analyses read: tensors such as ``idx`` (B, M, K), the
  neighbours the block attended to (``None`` for full attention).
- ``block.dim_out`` is C'.

:class:`BlockStack` runs blocks in order and is the one place where a *post-module* is added
after any block. A post-module maps ``(x': (B, M, C'), pos': (B, M, 3)) -> x'': (B, M, C')``
(same shape; ContextPool has this signature); :class:`PostBlock` wraps a block with one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import torch
from torch import nn

from .. import _validate as V
from ..ops.tree import PointTree
from ..ops.tree_tables import TreeTables
from .attention import MultiHeadSelfAttention
from .centroid_attention import CentroidAttention
from .mlp import FeedForward, make_norm, run_masked
from .ragged import point_mask
from .sequoia_attention import SequoiaAttention

__all__ = ["BlockStack", "CABlock", "PostBlock", "SABlock", "SequoiaBlock", "TreeContext"]


class SABlock(nn.Module):
    """Pre-norm transformer block: optional width change, ``x + SA(norm(x))``, then the MLP.

    With ``k=None`` this is the dense softmax-attention block (torch's fused SDPA), the one the
    Sequoia models' softmax baseline stacks; with ``k`` set, attention over K nearest points.

    Args:
        dim_in: input channels C.
        dim: output channels C' (a linear layer changes the width when C' != C).
        heads, k, knn_space: of :class:`~pointabstract.nn.MultiHeadSelfAttention`.
        norm: ``"layer"`` or ``"batch"`` (see :func:`~pointabstract.nn.make_norm`).
        mlp_ratio: hidden width of the :class:`~pointabstract.nn.FeedForward`, times C'.
        act: its activation (see :data:`~pointabstract.nn.mlp.ACTIVATIONS`).
    """

    def __init__(self, dim_in: int, dim: int, *, heads: int, k: int | None, knn_space: str,
                 norm: str = "layer", mlp_ratio: float = 2.0, act: str = "leaky_relu"):
        super().__init__()
        self.dim_out = dim
        self.proj = nn.Linear(dim_in, dim) if dim_in != dim else nn.Identity()
        self.norm = make_norm(norm, dim)
        self.attn = MultiHeadSelfAttention(dim, heads=heads, k=k, knn_space=knn_space)
        self.mlp = FeedForward(dim, hidden=int(dim * mlp_ratio), norm=norm, act=act)

    def forward(self, x: torch.Tensor, pos: torch.Tensor, *, lengths: torch.Tensor | None = None):
        """x: (B, N, C), pos: (B, N, 3) -> (B, N, C'), pos, {"idx": (B, N, K) or None}.
        ``lengths`` (B,): real points per cloud; padding is no neighbour and no key."""
        mask = point_mask(lengths, x.shape[1])
        x = self.proj(x)
        h = run_masked([self.norm], x, mask)
        idx = self.attn.neighbours(h, pos, lengths)
        out, _ = self.attn.attend(h, idx)
        return self.mlp(x + out, mask), pos, {"idx": idx}


class CABlock(nn.Module):
    """Centroid attention as a block; keyword arguments go to
    :class:`~pointabstract.nn.CentroidAttention` (heads, num_centroids | ratio, init, ...)."""

    def __init__(self, dim_in: int, dim: int, **kwargs):
        super().__init__()
        self.dim_out = dim
        self.attn = CentroidAttention(dim_in, dim, **kwargs)

    def forward(self, x: torch.Tensor, pos: torch.Tensor, *, lengths: torch.Tensor | None = None):
        """x: (B, N, C), pos: (B, N, 3) -> u (B, M, C'), pos_u (B, M, 3),
        {"idx": (B, M, K) or None, "init_idx": (B, M) or None} (see CentroidAttention); with
        ``lengths`` (B,) also ``"lengths"``: the real centroids of each cloud."""
        u, pos_u, details = self.attn(x, pos, lengths=lengths, return_details=True)
        info = {"idx": details["idx"], "init_idx": details["init_idx"]}
        return u, pos_u, info if lengths is None else {**info, "lengths": details["lengths"]}


@dataclass
class TreeContext:
    """The context a stack of :class:`SequoiaBlock` shares in one forward pass.

    Attributes:
        tree: ``build_tree`` output for the batch's positions.
        tables: the index tables of the tree (``layer.tables(tree)``), built once.
        nodes: the hub states (list over levels of (B, S_l, C)) the last block left, None
            before the first; each block reads and replaces them.
    """

    tree: PointTree
    tables: TreeTables
    nodes: list[torch.Tensor] | None = None


class SequoiaBlock(SequoiaAttention):
    """A :class:`~pointabstract.nn.SequoiaAttention` layer as a block (the same parameters):
    ``(x, pos, ctx: TreeContext) -> (x', pos, {})``, the hubs carried to the next block in
    ``ctx.nodes``. Arguments are those of SequoiaAttention."""

    def __init__(self, dim: int, **kwargs):
        super().__init__(dim, **kwargs)
        self.dim_out = dim

    def forward(self, x: torch.Tensor, pos: torch.Tensor, ctx: TreeContext):
        """x: (B, N, C), pos: (B, N, 3) -> (B, N, C) updated points, pos, {}."""
        out, info = super().forward(x, pos, ctx.tree, tables=ctx.tables, nodes=ctx.nodes, return_nodes=True)
        ctx.nodes = info["nodes"]
        return out, pos, {}


class PostBlock(nn.Module):
    """``block`` followed by ``post``: ``x'' = post(x', pos')``; ``pos'`` and ``info`` unchanged.

    Args:
        block: any block (see the module docstring).
        post: an ``nn.Module`` mapping ``(x': (B, M, C'), pos': (B, M, 3))`` to a tensor of the
            same shape as ``x'``.
    """

    def __init__(self, block: nn.Module, post: nn.Module):
        super().__init__()
        for name, value in (("block", block), ("post", post)):
            if not isinstance(value, nn.Module):
                raise TypeError(f"{name} must be an nn.Module, got {type(value).__name__}")
        self.dim_out = block.dim_out
        self.block, self.post = block, post

    def forward(self, x: torch.Tensor, pos: torch.Tensor, *ctx, **lengths):
        if lengths.get("lengths") is not None:  # a ContextPool's neighbourhoods know no padding
            raise ValueError("a post-module (ContextPool) does not take padded clouds: pass clouds of "
                             "one size (lengths=None), or a model without context_pool")
        x, pos, info = self.block(x, pos, *ctx)
        out = self.post(x, pos)
        if not isinstance(out, torch.Tensor) or out.shape != x.shape:
            got = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
            raise ValueError(f"post-module {type(self.post).__name__} must return a tensor of the "
                             f"block's output shape {tuple(x.shape)}, got {got}")
        return out, pos, info


class BlockStack(nn.ModuleList):
    """Blocks run in order; itself a block whose ``info`` lists every block's output.

    Without post-modules its parameters are named exactly as in an ``nn.ModuleList`` of the
    same blocks (``"0.proj.weight"``, ...), so wrapping a model's blocks in it keeps its
    checkpoints loadable.

    Args:
        blocks: the blocks, each following the block protocol and having ``dim_out``.
        post: optional ``post(i, block) -> nn.Module | None``: a post-module to add after block
            ``i`` (wrapping it in :class:`PostBlock`; its parameters are then named
            ``"i.block.*"`` and ``"i.post.*"``), or ``None`` to leave block ``i`` as it is.
    """

    def __init__(self, blocks: Iterable[nn.Module], *,
                 post: Callable[[int, nn.Module], nn.Module | None] | None = None):
        blocks = list(blocks)
        if not blocks:
            raise ValueError("blocks must list at least one block, got none")
        for i, block in enumerate(blocks):
            if not isinstance(block, nn.Module) or not isinstance(getattr(block, "dim_out", None), int):
                raise TypeError(f"blocks[{i}] must be an nn.Module with an int dim_out, got "
                                f"{type(block).__name__}")
        if post is not None:
            blocks = [_with_post(block, post(i, block)) for i, block in enumerate(blocks)]
        super().__init__(blocks)
        self.dim_out = blocks[-1].dim_out

    def forward(self, x: torch.Tensor, pos: torch.Tensor, *ctx, lengths: torch.Tensor | None = None):
        """x: (B, N, C), pos: (B, N, 3) -> x' (B, M, C'), pos' (B, M, 3) of the last block and
        ``{"blocks": [...]}``: per block ``{"features": x_i (B, M_i, C_i), "pos": (B, M_i, 3),
        **info_i}``. ``lengths`` (B,) (a padded batch, model-checked) goes to every block, and
        a block that changes the points hands on its own ``info["lengths"]`` (B,)."""
        # shapes only: the model has checked its input's values
        V.check_cloud("pos", pos, allow_empty=True, finite=False)
        V.check_features("x", x, pos, finite=False)
        outputs = []
        for block in self:
            x, pos, info = block(x, pos, *ctx) if lengths is None else block(x, pos, *ctx, lengths=lengths)
            lengths = info.get("lengths", lengths)
            extra = {} if lengths is None else {"lengths": lengths}
            outputs.append({"features": x, "pos": pos, **info, **extra})
        return x, pos, {"blocks": outputs}


def _with_post(block: nn.Module, post: nn.Module | None) -> nn.Module:
    return block if post is None else PostBlock(block, post)
