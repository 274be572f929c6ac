"""Decisive invariants of centroid attention against the paper (Centroid Transformers, Wu, Liu,
Liu 2021; the fidelity audit, docs/fidelity_centroid_transformer.md).

Each test compares our modules with a plain-loop transcription of the paper's equations, or with
the network the paper says they reduce to, on the same weights:

- T = 0 with FPS initialisation is the FPS-subset classifier (Table 3's "Farthest Point
  Sampling" row, registry ``ct_fps_only``), written out here block by block;
- M = N, u^0 = x, T = 1 is self-attention plus a skip (Sec. 2.2), dense and KNN with K = N;
- the T-step loop with eps = 1/T is eq. 4 (dense) and eq. 5 (K nearest inputs in feature space),
  and padded neighbours weigh zero.
"""

import math

import pytest
import torch

from pointabstract.models import build_model
from pointabstract.nn import CentroidAttention, SABlock
from pointabstract.nn.attention import attend
from pointabstract.nn.centroid_attention import farthest_from_centroid
from pointabstract.ops.fps import farthest_point_sample_naive
from tests.fixtures import cloud


def _jitter(module: torch.nn.Module, seed: int) -> None:
    """Move every parameter away from its initial value (LayerNorm starts at 1 and 0), so that a
    weight mapped to the wrong place shows."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.add_(0.2 * torch.randn(p.shape, generator=g))


def _heads(t: torch.Tensor, heads: int) -> list[torch.Tensor]:
    """(..., H D) -> H tensors (..., D): the channels of each head."""
    return list(t.chunk(heads, dim=-1))


# --- T = 0 with FPS init is the FPS-subset model --------------------------------------------

def _fps_subset_classifier(model, pos: torch.Tensor) -> torch.Tensor:
    """Fig. 3 with each centroid block replaced by "take the FPS subset" (then the block's width
    change and MLP), in plain loops: FPS by the reference loop from the point farthest from the
    centroid, nearest-neighbour upsampling by brute force. pos: (B, N, 3) -> logits (B, classes)."""
    batch = pos.shape[0]
    x = model.embed_points(pos, None)
    p = pos
    outputs = []  # (features, positions) of every block
    for i, block in enumerate(model.blocks):
        if i % 2 == 0:  # self-attention block: the model's own (tested against eq. 1-2 below)
            x, p, _ = block(x, p)
        else:
            m = max(1, round(p.shape[1] * model.cfg.ratios[i // 2]))
            idx = farthest_point_sample_naive(p, m, starts=farthest_from_centroid(p))  # (B, M)
            x = torch.stack([block.attn.proj_in(x[b, idx[b]]) for b in range(batch)])
            p = torch.stack([p[b, idx[b]] for b in range(batch)])
            x = block.attn.mlp(x)
        outputs.append((x, p))
    fused = []
    for feats, where in outputs:  # every block's features at the N input points
        d2 = ((pos.unsqueeze(2) - where.unsqueeze(1)) ** 2).sum(-1)  # (B, N, M)
        nearest = d2.argmin(-1)  # (B, N): first minimum on ties
        fused.append(torch.stack([feats[b, nearest[b]] for b in range(batch)]))
    f = model.fuse(torch.cat(fused, -1))
    return model.head(torch.cat([f.max(1).values, f.mean(1)], -1))


def test_t0_with_fps_init_is_the_fps_subset_model():
    torch.manual_seed(0)
    ct = build_model("centroid_transformer", tiny=True, num_classes=5).eval()
    fps_only = build_model("ct_fps_only", tiny=True, num_classes=5).eval()
    # same weights: ct_fps_only holds every parameter of the T = 1 model except the update's own
    missing, unexpected = fps_only.load_state_dict(ct.state_dict(), strict=False)
    assert missing == []
    assert {(k.split(".")[1], k.split(".")[3]) for k in unexpected} == {
        (block, name) for block in ("1", "3") for name in ("norm_u", "norm_x", "q", "kv", "out")}
    pos = cloud(2, 64, seed=11)
    with torch.no_grad():
        updated = ct(pos)["logits"]
        for i in (1, 3):
            ct.blocks[i].attn.iters = 0  # the same module, run for T = 0 steps
        stopped = ct(pos)["logits"]
        want = fps_only(pos)["logits"]
        assert torch.equal(stopped, want)
        torch.testing.assert_close(want, _fps_subset_classifier(fps_only, pos), rtol=1e-5, atol=1e-5)
    # not vacuous: one update step does change the outputs
    assert (updated - want).abs().max() > 1e-3


# --- M = N, u^0 = x, T = 1: self-attention plus a skip ---------------------------------------

def _self_attention_block_eq1(sa: SABlock, x: torch.Tensor) -> torch.Tensor:
    """Eq. 1-2 with eps = 1, L heads, inside the block's pre-norm and MLP, in loops:
    x_i + W_out [sum_j softmax_j(Q_l(x~_i) . K_l(x~_j) / sqrt(D)) V_l(x~_j)]_l + b_out, x~ = norm(x),
    then the MLP. x: (B, N, C) -> (B, N, C)."""
    batch, n, channels = x.shape
    heads = sa.attn.heads
    xn = sa.norm(x)
    q = _heads(sa.attn.q(xn), heads)
    keys, values = (_heads(t, heads) for t in sa.attn.kv(xn).chunk(2, dim=-1))
    scale = math.sqrt(channels // heads)
    out = torch.zeros_like(x)
    for b in range(batch):
        for i in range(n):
            per_head = []
            for h in range(heads):
                e = torch.stack([torch.exp(q[h][b, i] @ keys[h][b, j] / scale) for j in range(n)])
                sim = e / e.sum()  # eq. 2: normalised over the inputs j of query i
                per_head.append(sum(sim[j] * values[h][b, j] for j in range(n)))
            out[b, i] = sa.attn.out(torch.cat(per_head))
    return sa.mlp(x + out)


@pytest.mark.parametrize("k", [None, 20])  # dense, and KNN-restricted with K = N
def test_m_equals_n_u0_x_t1_is_self_attention_plus_skip(k):
    torch.manual_seed(0)
    x, pos = cloud(2, 20, 8, seed=1), cloud(2, 20, seed=2)
    sa = SABlock(8, 8, heads=2, k=k, knn_space="feature")
    _jitter(sa, seed=3)
    ca = CentroidAttention(8, 8, heads=2, ratio=1.0, init="fps", iters=1, k=k, knn_space="feature",
                           normalize="inputs")
    # same weights: the block normalises x once, for queries, keys and values alike
    for norm in (ca.norm_u, ca.norm_x):
        norm.load_state_dict(sa.norm.state_dict())
    for name in ("q", "kv", "out"):
        getattr(ca, name).load_state_dict(getattr(sa.attn, name).state_dict())
    ca.mlp.load_state_dict(sa.mlp.state_dict())
    with torch.no_grad():
        u, pos_u, details = ca(x, pos, return_details=True)
        want = sa(x, pos)[0]
        order = details["init_idx"]  # u^0 = x, in FPS order: M = N picks every input once
        for b in range(2):
            assert sorted(order[b].tolist()) == list(range(20))
            torch.testing.assert_close(u[b], want[b, order[b]], rtol=1e-5, atol=1e-5)
            torch.testing.assert_close(pos_u[b], pos[b, order[b]])
        torch.testing.assert_close(want, _self_attention_block_eq1(sa, x), rtol=1e-5, atol=1e-5)


# --- eq. 4 / eq. 5: the T-step loop with eps = 1/T ------------------------------------------

def _centroid_attention_eq4(ca: CentroidAttention, x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
    """Eq. 4 (K = None) or eq. 5 (K nearest inputs of each centroid, L2 in feature space), in loops.

    u^0 = the FPS subset of the (width-changed) inputs; then T times, for every centroid j:
    u_j <- u_j + (1/T) (W_out [sum_{i in N_j} sim_l(x_i, u_j) V_l(x_i)]_l + b_out), with logits
    a_l(i, j) = Q_l(norm u_j) . K_l(norm x_i) / sqrt(D) and sim normalised over the centroids that
    input i is connected to (eq. 4's sum over k, restricted by the KNN mask) for
    ``normalize="centroids"``, or over centroid j's inputs for ``normalize="inputs"``; the
    neighbourhoods N_j are recomputed from u^t at every step. Then the MLP.
    x: (B, N, C) -> u (B, M, C')."""
    x = ca.proj_in(x)
    batch, n, channels = x.shape
    heads, steps = ca.heads, ca.iters
    m = ca.centroid_count(n)
    scale = math.sqrt(channels // heads)
    if steps:  # T = 0 has no attention weights
        keys, values = (_heads(t, heads) for t in ca.kv(ca.norm_x(x)).chunk(2, dim=-1))
    u = []
    for b in range(batch):
        init = farthest_point_sample_naive(pos[b:b + 1], m, starts=farthest_from_centroid(pos[b:b + 1]))[0]
        ub = x[b, init]
        for _ in range(steps):
            if ca.k is None:
                nbrs = [list(range(n)) for _ in range(m)]
            else:  # N_j: the K inputs nearest to u_j^t, ||x_i - u_j||_2
                nbrs = [torch.linalg.vector_norm(x[b] - ub[j], dim=-1).argsort()[:ca.k].tolist() for j in range(m)]
            q = _heads(ca.q(ca.norm_u(ub)), heads)
            e = [{(i, j): torch.exp(q[h][j] @ keys[h][b, i] / scale) for j in range(m) for i in nbrs[j]}
                 for h in range(heads)]
            new = []
            for j in range(m):
                per_head = []
                for h in range(heads):
                    total = []
                    for i in nbrs[j]:
                        if ca.normalize == "centroids":
                            z = sum(e[h][i, jj] for jj in range(m) if i in nbrs[jj])
                        else:
                            z = sum(e[h][ii, j] for ii in nbrs[j])
                        total.append(e[h][i, j] / z * values[h][b, i])
                    per_head.append(sum(total))
                new.append(ub[j] + ca.out(torch.cat(per_head)) / steps)
            ub = torch.stack(new)
        u.append(ub)
    return ca.mlp(torch.stack(u))


@pytest.mark.parametrize("normalize", ["centroids", "inputs"])
@pytest.mark.parametrize("iters, k, m", [
    (1, None, 5),  # eq. 4, T = 1
    (3, None, 5),  # eq. 4, T = 3, eps = 1/3
    (1, 4, 5),  # eq. 5, K = 4 of N = 12
    (2, 4, 5),  # eq. 5, T = 2: neighbourhoods recomputed from u^1
    (3, 4, 12),  # M = N with eq. 4's normalisation over the centroids
    (0, 4, 5),  # T = 0: the FPS subset and the MLP
])
def test_t_step_loop_is_eq4_and_eq5(normalize, iters, k, m):
    torch.manual_seed(0)
    x, pos = cloud(2, 12, 6, seed=21), cloud(2, 12, seed=22)
    ca = CentroidAttention(6, 8, heads=2, num_centroids=m, init="fps", iters=iters, k=k,
                           knn_space="feature", normalize=normalize)
    _jitter(ca, seed=23)
    x.requires_grad_()
    got, want = ca(x, pos)[0], _centroid_attention_eq4(ca, x, pos)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    # and the backward pass (through the compiled neighbour kernels on CPU) is eq. 4's gradient
    probe = torch.randn(got.shape, generator=torch.Generator().manual_seed(24))
    inputs = [x, *ca.parameters()]
    for g_got, g_want in zip(torch.autograd.grad((got * probe).sum(), inputs),
                             torch.autograd.grad((want * probe).sum(), inputs), strict=True):
        torch.testing.assert_close(g_got, g_want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("normalize", ["centroids", "inputs"])
def test_padded_neighbours_weigh_zero(normalize):
    """Eq. 5 over the real neighbours only: a padded slot (-1) takes no part in either softmax
    and adds nothing; a centroid whose slots are all padding gets a zero update."""
    g = torch.Generator().manual_seed(31)
    heads, dim, n = 2, 3, 6
    q = torch.randn(1, 4, heads, dim, generator=g)
    kv = torch.randn(1, n, 2 * heads * dim, generator=g)
    idx = torch.tensor([[[0, 2, -1], [2, 3, 5], [-1, -1, -1], [5, -1, 1]]])  # (B, M, K)
    out, weights = attend(q, kv, idx, normalize=normalize)
    keys, values = (t.view(1, n, heads, dim) for t in kv.chunk(2, dim=-1))
    real = [[i for i in row if i >= 0] for row in idx[0].tolist()]
    want = torch.zeros(1, 4, heads, dim)
    for h in range(heads):
        e = {(i, j): torch.exp(q[0, j, h] @ keys[0, i, h] / math.sqrt(dim)) for j in range(4) for i in real[j]}
        for j in range(4):
            for i in real[j]:
                if normalize == "centroids":
                    z = sum(e[i, jj] for jj in range(4) if i in real[jj])
                else:
                    z = sum(e[ii, j] for ii in real[j])
                want[0, j, h] += e[i, j] / z * values[0, i, h]
    torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-6)
    assert (weights[idx < 0] == 0).all()
    assert torch.equal(out[0, 2], torch.zeros(heads, dim))
