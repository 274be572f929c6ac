"""Loop reference of :class:`~pointabstract.nn.ContextPool`, for tests only.

Every quantity is recomputed point by point from its definition in the ContextPool module
docstring (brute-force neighbours ordered by ``(distance, index)``, the mapping's two layers,
the paper's ``y_i = sum_j w_j g_ij x_j / sum_j w_j g_ij``), using the module's parameters.
"""

from __future__ import annotations

import math

import torch

from .context_pool import ContextPool

__all__ = ["context_pool_naive"]


def _neighbours(pos: torch.Tensor, k: int) -> list[list[int]]:
    """pos: (N, 3) -> for every point the k nearest indices, ties to the lower index."""
    n = pos.shape[0]
    out = []
    for i in range(n):
        d = [(float(((pos[j] - pos[i]) ** 2).sum()), j) for j in range(n)]
        out.append([j for _, j in sorted(d)[:k]])
    return out


def context_pool_naive(pool: ContextPool, x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
    """The output of ``pool(x, pos)`` computed in loops.

    Args:
        pool: the module whose variant and parameters to use.
        x: (B, N, C) features.
        pos: (B, N, 3) point coordinates.

    Returns:
        (B, N, C) pooled features.
    """
    batch, n, _ = x.shape
    k = min(pool.k, n)
    out = torch.zeros_like(x)
    for b in range(batch):
        nbrs = _neighbours(pos[b], k)
        dist = [[float(((pos[b, j] - pos[b, i]) ** 2).sum()) for j in range(n)] for i in range(n)]
        nearest = [min((math.sqrt(dist[i][j]) for j in range(n) if j != i), default=0.0) for i in range(n)]
        centre = pos[b].mean(0)
        eps = 1e-4 * max(float((pos[b, i] - centre).norm()) for i in range(n))
        a, s = [], []
        for i in range(n):
            if pool.map1 is not None:  # layer 1: max over i's neighbours, ReLU; layer 2 per point
                own = [i] if pool.mapping == "point" else nbrs[i]  # the MLP-based mapping: i alone
                h = torch.stack([pool.map1(x[b, j]) for j in own]).amax(0).relu()
                pred = pool.map2(h)
                a.append(pred[0])
                s.append(pred[-1] if pool.sizes == "softmax" else torch.sigmoid(pred[-1]))
        if s and pool.sizes == "softmax":  # the paper's sizes: a softmax over the cloud's points
            s = list(torch.softmax(torch.stack(s), 0))
        w_cloud = torch.softmax(torch.stack(a), 0) if pool.weights == "learned" and pool.normalize else None
        for i in range(n):
            w, g = [], []
            for rank, j in enumerate(nbrs[i]):
                if pool.weights == "learned":
                    w.append(w_cloud[j] if pool.normalize else a[j])
                elif pool.weights == "nonlocal":
                    w.append(pool.theta(x[b, i]) @ pool.phi(x[b, j]) / math.sqrt(pool.dim))
                else:
                    w.append(torch.ones((), dtype=x.dtype))
                if pool.locality == "gaussian":
                    h_i = sum(nearest[jj] for jj in nbrs[i]) / k
                    sigma = pool.r * (n if pool.sizes == "softmax" else k) * s[i] * h_i
                    g.append(torch.exp(-dist[i][j] / (2 * (sigma**2 + eps**2))) if dist[i][j] > 0 else
                             torch.ones((), dtype=x.dtype))
                elif pool.locality == "fixed":
                    g.append(torch.tensor(float(rank < pool.window), dtype=x.dtype))
                else:
                    g.append(torch.ones((), dtype=x.dtype))
            if pool.weights == "nonlocal" and pool.normalize:  # eq. 3: softmax over the neighbours
                w = list(torch.softmax(torch.stack(w), 0))
            num = sum(w[t] * g[t] * x[b, j] for t, j in enumerate(nbrs[i]))
            den = sum(w[t] * g[t] for t in range(k)) if pool.normalize else sum(g)
            out[b, i] = num / den
    return out
