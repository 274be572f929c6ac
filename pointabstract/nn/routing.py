"""Routings from P primary capsules to L latent capsules, all with one interface:

``routing(u: (B, P, D)) -> (v: (B, L, D'), assignments: (B, P, L))``

``assignments[b, p, l]`` is how much primary capsule p contributes to latent capsule l; in all
three routings it is normalised over the latent capsules (sums to 1 over l), as capsule
assignments are (attention in a transformer is normalised over the inputs instead).

- :class:`DynamicRouting`: routing by agreement as in 3D-PointCapsNet (Zhao et al. 2019).
- :class:`EMRouting`: EM routing (Hinton et al. 2018) adapted to vector capsules.
- :class:`CentroidRouting`: centroid attention (Wu et al. 2021, section 3.3) over the primary
  capsules, latent capsules initialised by a learned linear map of the primary ones.

Each has a plain-loop ``*_naive`` reference (tests only) that reads the module's parameters.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .. import _validate as V
from .capsules import squash
from .centroid_attention import CentroidAttention

__all__ = ["ROUTINGS", "CentroidRouting", "DynamicRouting", "EMRouting", "build_routing",
           "centroid_routing_naive", "dynamic_routing_naive", "em_routing_naive"]

ROUTINGS = ("dynamic", "em", "centroid")


class _VoteRouting(nn.Module):
    """Shared parts of dynamic and EM routing: one (D', D) matrix per (latent, primary) pair."""

    def __init__(self, in_caps: int, in_dim: int, out_caps: int, out_dim: int, iters: int):
        super().__init__()
        for name, value in (("in_caps", in_caps), ("in_dim", in_dim), ("out_caps", out_caps),
                            ("out_dim", out_dim), ("iters", iters)):
            V.check_int(name, value, low=1)
        self.in_caps, self.in_dim, self.out_caps, self.out_dim, self.iters = (
            in_caps, in_dim, out_caps, out_dim, iters)
        self.weight = nn.Parameter(0.01 * torch.randn(out_caps, in_caps, out_dim, in_dim))

    def votes(self, u: torch.Tensor) -> torch.Tensor:
        """u: (B, P, D) -> predictions of every latent capsule from every primary one (B, L, P, D')."""
        V.check_shape("u", u, (None, self.in_caps, self.in_dim), "(B, P, D)")
        return torch.einsum("lpod,bpd->blpo", self.weight, u)


class DynamicRouting(_VoteRouting):
    """Routing by agreement (Sabour et al. 2017) as 3D-PointCapsNet uses it.

    Logits start at 0; each iteration takes coupling coefficients ``c = softmax_l(logits)``,
    latent capsules ``v_l = squash(sum_p c_pl u_hat_lp)`` and adds the agreement
    ``u_hat_lp . v_l`` to the logits. As in the original, the predictions ``u_hat`` are detached
    in every iteration but the last, so gradients flow through the final weighted sum only.

    Args:
        in_caps, in_dim: P primary capsules of dimension D.
        out_caps, out_dim: L latent capsules of dimension D'.
        iters: routing iterations (3 in the paper).

    ``forward(u (B, P, D)) -> (v (B, L, D') squashed, c (B, P, L) last coupling coefficients)``.
    """

    def __init__(self, in_caps: int, in_dim: int, out_caps: int, out_dim: int, *, iters: int = 3):
        super().__init__(in_caps, in_dim, out_caps, out_dim, iters)

    def forward(self, u: torch.Tensor):
        u_hat = self.votes(u)  # (B, L, P, D')
        fixed = u_hat.detach()
        logits = u_hat.new_zeros(u_hat.shape[:3])  # (B, L, P)
        for it in range(self.iters):
            c = logits.softmax(1)  # over the latent capsules
            last = it == self.iters - 1
            v = squash(torch.einsum("blp,blpo->blo", c, u_hat if last else fixed))  # (B, L, D')
            if not last:
                logits = logits + torch.einsum("blo,blpo->blp", v, fixed)
        return v, c.transpose(1, 2)


def dynamic_routing_naive(module: DynamicRouting, u: torch.Tensor):
    """Reference (tests only): plain loops over batch, latent and primary capsules."""
    big_l, big_p = module.out_caps, module.in_caps
    vs, cs = [], []
    for ub in u:
        u_hat = [[module.weight[j, i] @ ub[i] for i in range(big_p)] for j in range(big_l)]
        b = [[0.0] * big_p for _ in range(big_l)]
        for it in range(module.iters):
            last = it == module.iters - 1
            c = [[None] * big_l for _ in range(big_p)]
            for i in range(big_p):
                col = torch.softmax(torch.stack([torch.as_tensor(b[j][i], dtype=u.dtype)
                                                 for j in range(big_l)]), 0)
                for j in range(big_l):
                    c[i][j] = col[j]
            v = []
            for j in range(big_l):
                s = sum(c[i][j] * (u_hat[j][i] if last else u_hat[j][i].detach()) for i in range(big_p))
                v.append(squash(s))
            if not last:
                for j in range(big_l):
                    for i in range(big_p):
                        b[j][i] = b[j][i] + torch.dot(v[j].detach(), u_hat[j][i].detach())
        vs.append(torch.stack(v))
        cs.append(torch.stack([torch.stack(row) for row in c]))
    return torch.stack(vs), torch.stack(cs)


class EMRouting(_VoteRouting):
    """EM routing (Hinton, Sabour, Frosst 2018) adapted to vector capsules.

    Adaptation: a latent capsule is a diagonal Gaussian over the D'-dimensional votes
    ``u_hat_lp = W_lp u_p`` (vectors instead of 4x4 pose matrices); a primary capsule's
    activation is its length ``a_p = |u_p|`` (squashed capsules have lengths in [0, 1)).
    Responsibilities ``R`` start uniform (1/L). M-step: with ``r = R * a``, the means and
    variances are the r-weighted mean / variance of the votes (plus ``eps``), the cost
    ``(beta_v + log sigma_l) averaged over D'`` is weighted by the latent capsule's share
    ``sum_p r_pl / mean_l sum_p r_pl`` (so it does not grow with P or D'), and the activation
    is ``a_l = sigmoid(lambda (beta_a - cost_l))`` with learned ``beta_v``, ``beta_a`` (L,) and a
    fixed inverse temperature lambda. E-step: ``R_pl = softmax_l(log a_l + log N(u_hat_lp;
    mu_l, sigma_l))``. ``iters`` M-steps with an E-step between consecutive ones; gradients flow
    through every iteration. The latent capsules are the means ``v = mu`` (not squashed).

    Args:
        in_caps, in_dim, out_caps, out_dim, iters: as :class:`DynamicRouting`.
        inverse_temperature: lambda.
        eps: variance floor.

    ``forward(u (B, P, D)) -> (v (B, L, D'), R (B, P, L) responsibilities of the last E-step,
    uniform when iters = 1)``; the activations of the last M-step stay in ``last_activations``.
    """

    def __init__(self, in_caps: int, in_dim: int, out_caps: int, out_dim: int, *, iters: int = 3,
                 inverse_temperature: float = 1.0, eps: float = 1e-4):
        super().__init__(in_caps, in_dim, out_caps, out_dim, iters)
        self.inverse_temperature, self.eps = inverse_temperature, V.check_positive("eps", eps)
        self.beta_v = nn.Parameter(torch.zeros(out_caps))
        self.beta_a = nn.Parameter(torch.zeros(out_caps))
        self.last_activations = None

    def forward(self, u: torch.Tensor):
        votes = self.votes(u)  # (B, L, P, D')
        batch = votes.shape[0]
        a_in = u.norm(dim=-1)  # (B, P)
        resp = votes.new_full((batch, self.in_caps, self.out_caps), 1 / self.out_caps)  # (B, P, L)
        for it in range(self.iters):
            r = resp * a_in.unsqueeze(-1)  # (B, P, L)
            r_sum = r.sum(1)  # (B, L)
            w = r / (r_sum.unsqueeze(1) + 1e-12)  # (B, P, L): weights of the votes
            mu = torch.einsum("bpl,blpo->blo", w, votes)  # (B, L, D')
            diff2 = (votes - mu.unsqueeze(2)) ** 2  # (B, L, P, D')
            var = torch.einsum("bpl,blpo->blo", w, diff2) + self.eps  # (B, L, D')
            share = r_sum / (r_sum.mean(1, keepdim=True) + 1e-12)  # (B, L)
            cost = (self.beta_v.unsqueeze(-1) + 0.5 * var.log()).mean(-1) * share  # (B, L)
            act = torch.sigmoid(self.inverse_temperature * (self.beta_a - cost))  # (B, L)
            if it < self.iters - 1:
                log_p = -0.5 * (diff2 / var.unsqueeze(2) + torch.log(2 * math.pi * var).unsqueeze(2)).sum(-1)
                resp = (act.log().unsqueeze(-1) + log_p).softmax(1).transpose(1, 2)  # (B, P, L)
        self.last_activations = act.detach()
        return mu, resp


def em_routing_naive(module: EMRouting, u: torch.Tensor):
    """Reference (tests only): EM routing one batch element, latent and primary capsule at a
    time, following the docstring's formulas literally."""
    big_l, big_p, eps = module.out_caps, module.in_caps, module.eps
    vs, rs = [], []
    for ub in u:
        votes = [[module.weight[j, i] @ ub[i] for i in range(big_p)] for j in range(big_l)]
        a = [ub[i].norm() for i in range(big_p)]
        resp = [[torch.tensor(1 / big_l, dtype=u.dtype) for _ in range(big_l)] for _ in range(big_p)]
        for it in range(module.iters):
            mus, vars_, r_sums = [], [], []
            for j in range(big_l):
                r = [resp[i][j] * a[i] for i in range(big_p)]
                r_sum = sum(r)
                mu = sum(r[i] * votes[j][i] for i in range(big_p)) / (r_sum + 1e-12)
                var = sum(r[i] * (votes[j][i] - mu) ** 2 for i in range(big_p)) / (r_sum + 1e-12) + eps
                mus.append(mu), vars_.append(var), r_sums.append(r_sum)
            mean_r = sum(r_sums) / big_l
            costs = [(module.beta_v[j] + 0.5 * vars_[j].log()).mean() * r_sums[j] / (mean_r + 1e-12)
                     for j in range(big_l)]
            act = [torch.sigmoid(module.inverse_temperature * (module.beta_a[j] - costs[j]))
                   for j in range(big_l)]
            if it == module.iters - 1:
                break
            for i in range(big_p):
                scores = []
                for j in range(big_l):
                    log_n = sum(-0.5 * (votes[j][i][d] - mus[j][d]) ** 2 / vars_[j][d]
                                - 0.5 * math.log(2 * math.pi) - 0.5 * vars_[j][d].log()
                                for d in range(module.out_dim))
                    scores.append(act[j].log() + log_n)
                resp[i] = list(torch.softmax(torch.stack(scores), 0))
        vs.append(torch.stack(mus))
        rs.append(torch.stack([torch.stack(row) for row in resp]))
    return torch.stack(vs), torch.stack(rs)


class CentroidRouting(nn.Module):
    """Centroid attention as routing (Centroid Transformers, section 3.3).

    The primary capsules are the inputs, the latent capsules the centroids of a
    :class:`~pointabstract.nn.CentroidAttention` block: initialised by a learned linear map of
    the P primary capsules (``init="linear"``: ``u^0 = W x``, W (L, P) uniform(+-1/sqrt(P)), so
    the latent capsules start distinct; the paper's "linear projection to learn the
    initialization of the latent capsules", sec. 3.3), updated ``iters`` = T times (T = 3, matching
    dynamic routing) by attention over all P primary capsules (dense, ``k=None``), with the
    weights normalised over the latent capsules (``normalize="centroids"``, the paper's eq. 4),
    then the block's residual MLP. The latent capsules are not squashed.

    Args:
        in_caps, in_dim, out_caps, out_dim: P, D, L, D' as :class:`DynamicRouting`.
        iters: T >= 1.
        heads: attention heads H (dividing D').
        norm: normalisation inside the block (``"layer"`` or ``"batch"``).
        init: ``"linear"`` (default, the paper) or ``"soft_average"`` (an initialisation kept
            to measure its collapse: every latent capsule starts as the same mean of the primary ones and, the
            update of eq. 4 being equal for equal centroids, stays so).
        update: ``"sum"`` (eq. 4 as printed) or ``"mean"`` (each latent capsule's update divided
            by its total weight): see :class:`~pointabstract.nn.CentroidAttention`.

    ``forward(u (B, P, D)) -> (v (B, L, D'), assignments (B, P, L))``: the attention weights of
    the last step, averaged over the heads.
    """

    def __init__(self, in_caps: int, in_dim: int, out_caps: int, out_dim: int, *, iters: int = 3,
                 heads: int = 4, norm: str = "layer", init: str = "linear", update: str = "sum"):
        super().__init__()
        for name, value in (("in_caps", in_caps), ("in_dim", in_dim), ("out_caps", out_caps),
                            ("out_dim", out_dim), ("iters", iters)):
            V.check_int(name, value, low=1)
        V.check_choice("init", init, ("linear", "soft_average"))
        self.in_caps, self.in_dim, self.out_caps, self.out_dim, self.iters = (
            in_caps, in_dim, out_caps, out_dim, iters)
        self.attention = CentroidAttention(in_dim, out_dim, heads=heads, num_centroids=out_caps,
                                           init=init, iters=iters, k=None, normalize="centroids",
                                           num_inputs=in_caps, norm=norm, update=update)

    def forward(self, u: torch.Tensor):
        V.check_shape("u", u, (None, self.in_caps, self.in_dim), "(B, P, D)")
        pos = u.new_zeros(u.shape[0], u.shape[1], 3)  # capsules have no position
        v, _, details = self.attention(u, pos, return_details=True)
        weights = details["weights"]  # (B, L, P, H)
        return v, weights.mean(-1).transpose(1, 2)


def centroid_routing_naive(module: CentroidRouting, u: torch.Tensor):
    """Reference (tests only): the centroid attention of ``module`` with plain loops over batch,
    heads, latent and primary capsules (its linear layers and norms applied as they are)."""
    att = module.attention
    x = att.proj_in(u)  # (B, P, D')
    init = att.initial_weights()  # (L, P)
    kv = att.kv(att.norm_x(x))
    heads, dh = att.heads, module.out_dim // att.heads
    vs, assignments = [], []
    for b in range(u.shape[0]):
        cur = torch.stack([sum(init[j, i] * x[b, i] for i in range(module.in_caps))
                           for j in range(module.out_caps)])  # (L, D')
        for _ in range(module.iters):
            q = att.q(att.norm_u(cur))
            upd, mean_w = [], torch.zeros(module.in_caps, module.out_caps, dtype=u.dtype)
            for h in range(heads):
                sl = slice(h * dh, (h + 1) * dh)
                keys, values = kv[b, :, sl], kv[b, :, module.out_dim + h * dh: module.out_dim + (h + 1) * dh]
                logits = torch.stack([torch.stack([q[j, sl] @ keys[i] / math.sqrt(dh)
                                                   for i in range(module.in_caps)])
                                      for j in range(module.out_caps)])  # (L, P)
                w = torch.stack([torch.softmax(logits[:, i], 0) for i in range(module.in_caps)], 1)
                mass = [sum(w[j, i] for i in range(module.in_caps)) if att.update == "mean" else 1.0
                        for j in range(module.out_caps)]
                upd.append(torch.stack([sum(w[j, i] * values[i] for i in range(module.in_caps))
                                        / (mass[j].clamp(min=1e-6) if att.update == "mean" else 1.0)
                                        for j in range(module.out_caps)]))
                mean_w = mean_w + w.T / heads
            cur = cur + att.out(torch.cat(upd, -1)) / module.iters
        vs.append(att.mlp(cur.unsqueeze(0))[0])
        assignments.append(mean_w)
    return torch.stack(vs), torch.stack(assignments)


def build_routing(name: str, in_caps: int, in_dim: int, out_caps: int, out_dim: int, *,
                  iters: int = 3, heads: int = 4, update: str = "sum") -> nn.Module:
    """One of :data:`ROUTINGS` by name (``heads`` and ``update`` only affect ``"centroid"``)."""
    if name == "dynamic":
        return DynamicRouting(in_caps, in_dim, out_caps, out_dim, iters=iters)
    if name == "em":
        return EMRouting(in_caps, in_dim, out_caps, out_dim, iters=iters)
    if name == "centroid":
        return CentroidRouting(in_caps, in_dim, out_caps, out_dim, iters=iters, heads=heads, update=update)
    V.check_choice("routing", name, ROUTINGS)
    raise AssertionError(f"routing {name!r} is listed but not built")
