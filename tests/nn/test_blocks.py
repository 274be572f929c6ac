import pytest
import torch
from torch import nn

from pointabstract.nn import BlockStack, CABlock, PostBlock, SABlock
from tests.fixtures import cloud


class Scale(nn.Module):
    """A trivial post-module: x'' = s x with one learnable s (pos is ignored)."""

    def __init__(self, s: float = 2.0):
        super().__init__()
        self.s = nn.Parameter(torch.tensor(s))

    def forward(self, x, pos):
        return self.s * x


class Shifted(nn.Module):
    """A block that needs context: x + ctx, positions unchanged."""

    dim_out = 4

    def forward(self, x, pos, shift):
        return x + shift, pos, {"shift": shift}


def _blocks():
    torch.manual_seed(0)
    return [SABlock(4, 8, heads=2, k=5, knn_space="xyz"),
            CABlock(8, 12, heads=2, ratio=0.5, k=4),
            SABlock(12, 12, heads=2, k=None, knn_space="feature")]


def test_blocks_follow_the_protocol():
    x, pos = cloud(2, 20, 4, seed=1), cloud(2, 20, seed=2)
    sa, ca, _ = _blocks()
    y, pos_y, info = sa(x, pos)
    assert y.shape == (2, 20, sa.dim_out) and pos_y is pos and info["idx"].shape == (2, 20, 5)
    u, pos_u, info = ca(y, pos)
    assert u.shape == (2, 10, ca.dim_out) and pos_u.shape == (2, 10, 3)
    assert info["idx"].shape == (2, 10, 4) and info["init_idx"].shape == (2, 10)
    torch.testing.assert_close(pos_u, torch.stack([pos[b, info["init_idx"][b]] for b in range(2)]))


def test_stack_runs_the_blocks_in_order_and_keeps_modulelist_names():
    x, pos = cloud(2, 20, 4, seed=1), cloud(2, 20, seed=2)
    blocks = _blocks()
    stack = BlockStack(blocks)
    assert list(stack.state_dict()) == list(nn.ModuleList(blocks).state_dict())
    assert stack.dim_out == 12
    out, pos_out, info = stack(x, pos)
    want, cur = x, pos
    for i, block in enumerate(blocks):
        want, cur, block_info = block(want, cur)
        got = info["blocks"][i]
        assert torch.equal(got["features"], want) and torch.equal(got["pos"], cur)
        assert got.keys() == {"features", "pos", *block_info}
    assert torch.equal(out, want) and torch.equal(pos_out, cur)


def test_post_module_after_one_block():
    x, pos = cloud(2, 20, 4, seed=1), cloud(2, 20, seed=2)
    blocks = _blocks()
    stack = BlockStack(blocks, post=lambda i, block: Scale(3.0) if i == 1 else None)
    assert isinstance(stack[1], PostBlock) and stack[1].block is blocks[1] and stack[0] is blocks[0]
    names = list(stack.state_dict())
    assert "1.post.s" in names and "1.block.attn.q.weight" in names and "0.attn.q.weight" in names
    out, _, info = stack(x, pos)
    y, p, _ = blocks[0](x, pos)
    y, p, _ = blocks[1](y, p)
    torch.testing.assert_close(info["blocks"][1]["features"], 3.0 * y)  # the block's output, scaled
    y, p, _ = blocks[2](3.0 * y, p)
    torch.testing.assert_close(out, y)
    out.sum().backward()
    assert stack[1].post.s.grad is not None and stack[1].post.s.grad != 0


def test_context_reaches_every_block():
    x, pos = cloud(1, 6, 4, seed=1), cloud(1, 6, seed=2)
    shift = torch.ones(1, 6, 4)
    out, _, info = BlockStack([Shifted(), Shifted()], post=lambda i, b: Scale(2.0))(x, pos, shift)
    torch.testing.assert_close(out, 2 * (2 * (x + shift) + shift))
    assert info["blocks"][0]["shift"] is shift


def test_bad_arguments():
    x, pos = cloud(1, 6, 4, seed=1), cloud(1, 6, seed=2)
    with pytest.raises(ValueError, match="blocks must list at least one block"):
        BlockStack([])
    with pytest.raises(TypeError, match=r"blocks\[1\] must be an nn.Module with an int dim_out, got Linear"):
        BlockStack([Shifted(), nn.Linear(4, 4)])
    with pytest.raises(TypeError, match="post must be an nn.Module, got function"):
        BlockStack([Shifted()], post=lambda i, b: (lambda x, pos: x))
    with pytest.raises(ValueError, match=r"post-module _Narrow must return a tensor of the block's output "
                                         r"shape \(1, 6, 4\), got \(1, 6, 2\)"):
        BlockStack([Shifted()], post=lambda i, b: _Narrow())(x, pos, 0.0)
    with pytest.raises(ValueError, match=r"x must have shape \(B, N, C\), got \(6, 4\)"):
        BlockStack([Shifted()])(x[0], pos, 0.0)
    with pytest.raises(ValueError, match=r"pos must have shape \(B, N, 3\) = \(1, 6, 3\), got \(1, 5, 3\)"):
        BlockStack([Shifted()])(x, pos[:, :5], 0.0)


class _Narrow(nn.Module):
    def forward(self, x, pos):
        return x[..., :2]


@pytest.mark.parametrize("mode", ["sequential", "parallel"])
def test_sequoia_blocks_carry_the_hubs_through_the_tree_context(mode):
    # a BlockStack of SequoiaBlocks = SequoiaAttention layers called by hand, each handed the
    # node states of the one before (and the same pooled features when a post-module is added)
    from pointabstract.nn import SequoiaAttention, SequoiaBlock, TreeContext
    from pointabstract.ops import build_tree

    x, pos = cloud(2, 40, 8, seed=1), cloud(2, 40, seed=2)
    kw = {"heads": 2, "mode": mode, "siblings_k": 3, "leaf_size": 4, "mlp_ratio": 1.0}
    torch.manual_seed(0)
    blocks = [SequoiaBlock(8, pool_children=i == 0, **kw) for i in range(3)]
    layers = [SequoiaAttention(8, pool_children=i == 0, **kw) for i in range(3)]
    for block, layer in zip(blocks, layers):
        layer.load_state_dict(block.state_dict())
    stack = BlockStack(blocks, post=lambda i, block: Scale(0.5) if i == 1 else None)
    tree = build_tree(pos, leaf_size=4)
    out, _, info = stack(x, pos, TreeContext(tree, blocks[0].tables(tree)))
    want, nodes = x, None
    for i, layer in enumerate(layers):
        want, record = layer(want, pos, tree, nodes=nodes, return_nodes=True)
        nodes = record["nodes"]  # the unpooled states: the pool acts on the points only
        want = 0.5 * want if i == 1 else want
        torch.testing.assert_close(info["blocks"][i]["features"], want)
    torch.testing.assert_close(out, want)
    assert stack[0].dim_out == 8 and info["blocks"][0].keys() == {"features", "pos"}
