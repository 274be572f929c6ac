"""Slow reference of :class:`~pointabstract.nn.sequoia_attention.SequoiaAttention` (tests only).

Node by node in Python loops, from the tree's parent pointers and point counts alone (no
padded tables, no fused products), with the layer's own weights.
"""

from __future__ import annotations

import math

import torch

from ..ops.tree import PointTree
from ..ops.tree_tables import tree_tables_naive
from .sequoia_attention import SequoiaAttention

__all__ = ["sequoia_attention_naive"]


def sequoia_attention_naive(layer: SequoiaAttention, x: torch.Tensor, pos: torch.Tensor,
                            tree: PointTree, *, nodes: list[torch.Tensor] | None = None) -> list:
    """Reference (tests only): ``layer(x, pos, tree, nodes=nodes, return_nodes=True)`` computed
    node by node in Python loops from the parent pointers (no padded tables).

    x: (B, N, C), pos: (B, N, 3) -> list over levels of (B, S_l, C) node states (level 0 the
    output); states of empty nodes are left at zero."""
    per_cloud = [_naive_cloud(layer, x[b], pos[b], tree, b, None if nodes is None else
                              [t[b] for t in nodes]) for b in range(x.shape[0])]
    return [torch.stack([c[lvl] for c in per_cloud]) for lvl in range(len(per_cloud[0]))]


def _naive_attend(attn, q, p, keys, key_pos):
    """One query (C,) at p (3,) over a list of keys (C,) at key_pos (3,); None without keys."""
    if not keys:
        return None
    heads, width = attn.heads, q.shape[0] // attn.heads
    key, value = attn.kv(torch.stack(keys)).view(len(keys), 2, heads, width).unbind(1)  # (K, H, D)
    rel = torch.stack(key_pos) - p  # (K, 3)
    logits = (attn.q(q).view(heads, width) * key).sum(-1) / math.sqrt(width)
    if attn.rel_pos:  # the relative-position terms (TreeProposal)
        logits = logits + attn.pos_bias(rel)
        value = value + attn.pos_value(rel).view(len(keys), heads, width)
    w = logits.softmax(0)  # (K, H)
    return attn.out((w.unsqueeze(-1) * value).sum(0).reshape(-1))


def _naive_cloud(layer, x, pos, tree, b, nodes):
    rel = tree_tables_naive(tree, b)
    counts = [lv.num_points[b].tolist() for lv in tree.levels]
    top = len(counts) - 1
    members = [[[i] for i in range(len(x))]]  # points under each node
    h = [list(x)]
    for lvl in range(1, top + 1):
        members.append([sorted(i for c in rel["children"][lvl][s] for i in members[lvl - 1][c])
                        for s in range(len(counts[lvl]))])
        if nodes is not None:
            h.append(list(nodes[lvl]))
            continue
        row = []
        for kids in rel["children"][lvl]:
            feats = [h[lvl - 1][c] for c in sorted(kids)]
            w = torch.cat([layer.pool_score(f) for f in feats]).softmax(0) if kids else []
            row.append(sum((wi * f for wi, f in zip(w, feats)), torch.zeros_like(x[0])))
        h.append(row)
    where = [[pos[m].mean(0) if m else torch.zeros_like(pos[0]) for m in lv] for lv in members]
    tree_pos = [lv.pos[b] for lv in tree.levels]

    def siblings(lvl, s):
        if layer.mode == "sequential":
            return sorted(rel["siblings"][lvl][s])
        if not counts[lvl][s]:
            return []
        others = [t for t in range(len(counts[lvl])) if t != s and counts[lvl][t]]
        dist = [float(((tree_pos[lvl][t] - tree_pos[lvl][s]) ** 2).sum()) for t in others]
        return [t for _, t in sorted(zip(dist, others))][:layer.siblings_k]

    def mix(state, proposals):
        present = [(i, out) for i, out in enumerate(proposals) if out is not None]
        if not present:
            return state
        w = layer.mix[[i for i, _ in present]].softmax(0)
        return state + sum(wi * out for wi, (_, out) in zip(w, present))

    out = [list(lv) for lv in h]  # levels a parallel layer without update_hubs leaves as they are
    for lvl in range(top + 1 if layer.update_hubs else 1):
        below = out[lvl - 1] if layer.mode == "sequential" else h[lvl - 1] if lvl else None
        for s in range(len(h[lvl])):
            q, p = layer.norm(h[lvl][s]), where[lvl][s]
            kids = sorted(rel["children"][lvl][s]) if lvl else []
            sib = siblings(lvl, s)
            anc = rel["ancestors"][lvl][s]
            u = mix(h[lvl][s], [
                _naive_attend(layer.children_attn, q, p, [layer.norm(below[c]) for c in kids],
                              [where[lvl - 1][c] for c in kids]),
                _naive_attend(layer.siblings_attn, q, p, [layer.norm(h[lvl][t]) for t in sib],
                              [where[lvl][t] for t in sib]),
                _naive_attend(layer.ancestors_attn, q, p, [layer.norm(h[a][i]) for a, i in anc],
                              [where[a][i] for a, i in anc])])
            out[lvl][s] = u if lvl == 0 and layer.mode == "sequential" else layer.mlp(u)  # u + FFN(LN2(u))
            if not counts[lvl][s]:
                out[lvl][s] = torch.zeros_like(u)
    if layer.mode == "sequential":
        for i in range(len(x)):
            anc = rel["ancestors"][0][i]
            read = _naive_attend(layer.final_attn, layer.norm(out[0][i]), where[0][i],
                                 [layer.norm(out[a][j]) for a, j in anc], [where[a][j] for a, j in anc])
            a0 = out[0][i] if read is None else out[0][i] + read
            out[0][i] = layer.mlp(a0)
    return [torch.stack(row) for row in out]
