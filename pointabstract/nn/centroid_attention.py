"""Centroid attention (Wu, Liu, Liu 2021): summarise N inputs into M centroids.

``u^0 = I(x)`` (an initialisation), then T steps of
``u_j <- u_j + eps * O( sum_{i in kNN(j)} sim(Q u_j, K x_i) V x_i )`` with ``eps = 1/T``, then a
residual MLP. ``sim`` is either normalised over the centroids each input is connected to (the
soft k-means gradient of the paper's eq. 4, ``normalize="centroids"``) or over each centroid's
inputs (transformer softmax, ``normalize="inputs"``). With M = N, ``u^0 = x``, T = 1 and
``normalize="inputs"`` the update is exactly self-attention plus a skip connection (the paper's
special case); with ``normalize="centroids"`` it is softmax-over-queries attention instead.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .. import _validate as V
from ..ops import farthest_point_sample, gather_points, kmeans_sample, knn, random_sample
from .attention import NORMALIZE, attend
from .mlp import FeedForward, make_norm, run_masked
from .ragged import all_index, pad_rows, point_mask

__all__ = ["INITS", "UPDATES", "CentroidAttention", "farthest_from_centroid"]

INITS = ("fps", "random", "kmeans", "mean_pool", "linear", "soft_average")
UPDATES = ("sum", "mean")
_LEARNED_INITS = ("linear", "soft_average")


def farthest_from_centroid(pos: torch.Tensor) -> torch.Tensor:
    """(B,) index of the point farthest from each cloud's centroid: an FPS start that does
    not depend on the order of the points."""
    return ((pos - pos.mean(1, keepdim=True)) ** 2).sum(-1).argmax(1)


class CentroidAttention(nn.Module):
    """Map (x (B, N, C), pos (B, N, 3)) to M centroids (u (B, M, C'), pos_u (B, M, 3)).

    Args:
        dim_in: input channels C.
        dim_out: output channels C' (inputs are projected to C' by a linear layer when C' != C).
        heads: attention heads H (dividing C').
        num_centroids: M, or
        ratio: M = round(N * ratio) (one of the two).
        init: ``"fps"`` (farthest point sampling on positions), ``"random"`` (uniform subset),
            ``"kmeans"`` (Lloyd in feature space, ``kmeans_iters`` rounds, FPS seeds),
            ``"mean_pool"`` (FPS centres, mean of their k nearest inputs in xyz), or
            ``"linear"`` (the paper's "linear projection to learn the initialization", sec. 3.3:
            ``u^0 = W x`` with a learned (M, N) matrix ``init_weight``, nn.Linear's default
            init uniform(+-1/sqrt(N)), so the M centroids start distinct; needs ``num_inputs``), or
            ``"soft_average"`` (``u^0 = softmax(A) x`` with logits
            ``A = 0.01 randn``, i.e. every centroid starts as the same uniform mean of the inputs;
            kept only to measure that collapse, see docs/fidelity.md).
        iters: T >= 0 update steps (T = 0: the initialisation plus the MLP only).
        k: inputs each centroid attends to (its k nearest), or None for all N (dense).
        knn_space: ``"feature"`` (distance between centroid and input features) or ``"xyz"``.
        normalize: ``"centroids"`` (paper eq. 4) or ``"inputs"`` (transformer softmax).
        num_inputs: N, required by ``init="linear"`` and ``"soft_average"``.
        kmeans_iters: Lloyd rounds of ``init="kmeans"``.
        norm: normalisation of the attention inputs and of the MLP (``"layer"`` or ``"batch"``).
        update: ``"sum"`` (eq. 4 as printed: the weighted *sum* of the values, so with weights
            normalised over the centroids a centroid receives about N / M values) or ``"mean"``
            (that sum divided by the centroid's total weight, per head: the weighted mean of the
            values, the soft k-means M-step; a choice of value function sec. 2.2 allows, see
            docs/capsules.md). The two are equal up to that per-centroid factor; a total weight
            below 1e-6 counts as 1e-6 (a centroid hardly any input attends to barely moves).
    """

    def __init__(self, dim_in: int, dim_out: int, *, heads: int = 4, num_centroids: int | None = None,
                 ratio: float | None = None, init: str = "fps", iters: int = 1, k: int | None = 40,
                 knn_space: str = "feature", normalize: str = "centroids",
                 num_inputs: int | None = None, kmeans_iters: int = 3, norm: str = "layer",
                 update: str = "sum"):
        super().__init__()
        if (num_centroids is None) == (ratio is None):
            raise ValueError("give exactly one of num_centroids and ratio, "
                             f"got num_centroids={num_centroids}, ratio={ratio}")
        if ratio is not None:
            V.check_float("ratio", ratio, low=0.0, low_open=True, high=1.0)
        V.check_choice("init", init, INITS)
        V.check_choice("knn_space", knn_space, ("feature", "xyz"))
        V.check_choice("normalize", normalize, NORMALIZE)
        V.check_choice("update", update, UPDATES)
        if dim_out % heads:
            raise ValueError(f"dim_out must be divisible by heads, got {dim_out} and {heads}")
        V.check_int("iters", iters, low=0)
        if init in _LEARNED_INITS and num_inputs is None:
            raise ValueError(f"init={init!r} needs num_inputs (the fixed number of inputs N)")
        self.num_centroids, self.ratio, self.init = num_centroids, ratio, init
        self.iters, self.k, self.knn_space, self.normalize = iters, k, knn_space, normalize
        self.heads, self.kmeans_iters, self.update = heads, kmeans_iters, update
        self.proj_in = nn.Linear(dim_in, dim_out) if dim_in != dim_out else nn.Identity()
        if iters:  # T = 0 has no attention step, hence no attention weights
            self.norm_u, self.norm_x = make_norm(norm, dim_out), make_norm(norm, dim_out)
            self.q = nn.Linear(dim_out, dim_out)
            self.kv = nn.Linear(dim_out, 2 * dim_out)
            self.out = nn.Linear(dim_out, dim_out)
        self.mlp = FeedForward(dim_out, norm=norm)
        if init in _LEARNED_INITS:
            m = num_centroids if num_centroids is not None else max(1, round(num_inputs * ratio))
            if init == "linear":  # nn.Linear(N, M, bias=False)'s default init: uniform(+-1/sqrt(N))
                bound = num_inputs ** -0.5
                self.init_weight = nn.Parameter(torch.empty(m, num_inputs).uniform_(-bound, bound))
            else:
                self.assign = nn.Parameter(torch.randn(m, num_inputs) * 0.01)

    def initial_weights(self) -> torch.Tensor:
        """(M, N) matrix of a learned initialisation: ``u^0 = W x`` (``init="linear"``: ``W`` itself;
        ``"soft_average"``: ``softmax(A)`` over the inputs)."""
        if self.init == "linear":
            return self.init_weight
        if self.init == "soft_average":
            return self.assign.softmax(-1)
        raise ValueError(f"init={self.init!r} has no learned weights")

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        # older checkpoints stored init="linear" as softmax logits `assign`; softmax(assign) is
        # exactly the linear map they applied, so it becomes `init_weight` (same outputs; training
        # it further follows the unconstrained parametrisation). A shim removed in 0.2.0
        # (docs/development.md#compatibility-shims)
        old = prefix + "assign"
        if self.init == "linear" and old in state_dict and prefix + "init_weight" not in state_dict:
            state_dict[prefix + "init_weight"] = state_dict.pop(old).softmax(-1)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def centroid_count(self, n: int) -> int:
        """M for an input of N points."""
        m = self.num_centroids if self.num_centroids is not None else max(1, round(n * self.ratio))
        if m > n:
            raise ValueError(f"num_centroids = {m} exceeds the number of inputs N = {n}")
        return m

    def initialise(self, x: torch.Tensor, pos: torch.Tensor, m: int):
        """u^0 (B, M, C'), pos_u (B, M, 3) and the chosen input indices (B, M) (None if none)."""
        if self.init in ("fps", "mean_pool"):
            idx = farthest_point_sample(pos.detach(), m, start=farthest_from_centroid(pos.detach()))
            pos_u = gather_points(pos, idx)
            if self.init == "fps":
                return gather_points(x, idx), pos_u, idx
            _, nbr = knn(pos_u.detach(), pos.detach(), min(self.k or 16, x.shape[1]))
            return gather_points(x, nbr).mean(2), pos_u, idx
        if self.init == "random":
            idx = random_sample(pos, m)
            return gather_points(x, idx), gather_points(pos, idx), idx
        if self.init == "kmeans":
            u, assign = kmeans_sample(x, m, iters=self.kmeans_iters,
                                      start=farthest_from_centroid(x.detach()))
            index = assign.unsqueeze(-1).expand(-1, -1, 3)
            total = pos.new_zeros(x.shape[0], m, 3).scatter_add(1, index, pos)  # (B, M, 3)
            ones = torch.ones_like(pos[..., :1])
            count = pos.new_zeros(x.shape[0], m, 1).scatter_add(1, index[..., :1], ones)
            return u, total / count.clamp(min=1), None  # a centroid that lost its points sits at 0
        w = self.initial_weights()  # (M, N)
        if x.shape[1] != w.shape[1]:
            raise ValueError(f"init={self.init!r} was built for N = {w.shape[1]} inputs, got {x.shape[1]}")
        # pos_u: the same combination of the positions (for "linear" not a convex one: it only
        # matters to knn_space="xyz", and capsules have no positions)
        return torch.einsum("mn,bnc->bmc", w, x), torch.einsum("mn,bnc->bmc", w, pos), None

    def neighbours(self, u: torch.Tensor, x: torch.Tensor, pos_u, pos,
                   lengths=None, u_lengths=None) -> torch.Tensor | None:
        """(B, M, K) inputs each centroid attends to (None: all). In a padded batch (``lengths``
        (B,) real inputs, ``u_lengths`` (B,) real centroids) padded inputs are never neighbours
        (-1) and padded centroids have none."""
        if self.k is None:
            return None if lengths is None else all_index(u_lengths, lengths, u.shape[1], x.shape[1])
        k = min(self.k, x.shape[1])
        if self.knn_space == "xyz":
            return knn(pos_u.detach(), pos.detach(), k, query_lengths=u_lengths, ref_lengths=lengths)[1]
        return knn(u.detach(), x.detach(), k, query_lengths=u_lengths, ref_lengths=lengths)[1]

    def initialise_ragged(self, x: torch.Tensor, pos: torch.Tensor, lengths: torch.Tensor):
        """:meth:`initialise` of each cloud's real inputs alone (``lengths`` (B,)), padded:
        u^0 (B, M, C'), pos_u (B, M, 3) (0 at padding), the chosen inputs (B, M) (-1 at padding;
        None for kmeans) and the real centroids per cloud (B,), M their maximum."""
        if self.init in _LEARNED_INITS:
            raise ValueError(f"init={self.init!r} was built for a fixed N: it takes no padded clouds "
                             "(lengths); pass clouds of one size")
        counts = [self.centroid_count(n) for n in lengths.tolist()]
        m = max(counts)
        runs = [self.initialise(x[b:b + 1, :n], pos[b:b + 1, :n], c)
                for b, (n, c) in enumerate(zip(lengths.tolist(), counts))]
        u, pos_u = (torch.cat([F.pad(r[i], (0, 0, 0, m - r[i].shape[1])) for r in runs]) for i in (0, 1))
        idx = None if runs[0][2] is None else torch.cat([F.pad(r[2], (0, m - r[2].shape[1]), value=-1)
                                                          for r in runs])
        return u, pos_u, idx, torch.tensor(counts, device=lengths.device)

    def forward(self, x: torch.Tensor, pos: torch.Tensor, *, lengths: torch.Tensor | None = None,
                return_details: bool = False):
        """x: (B, N, C), pos: (B, N, 3) -> u (B, M, C'), pos_u (B, M, 3) [, details].

        ``lengths`` (B,) int64: real inputs per cloud of a padded batch (None: all N). Cloud b
        then gets ``M_b = centroid_count(lengths[b])`` centroids, initialised from its real
        inputs alone, attending to real inputs only; M = max M_b, padded centroid rows are 0.

        ``details``: ``init_idx`` (B, M) inputs chosen by the initialisation (None for kmeans /
        linear), ``idx`` (B, M, K) neighbours used in the last step, ``weights`` (B, M, K, H),
        and ``lengths`` (B,) the real centroids per cloud (None without ``lengths``).
        """
        batch, n, _ = x.shape
        x = self.proj_in(x)
        u_lengths = mask_x = mask_u = None
        if lengths is None:
            u, pos_u, init_idx = self.initialise(x, pos, self.centroid_count(n))
        else:
            u, pos_u, init_idx, u_lengths = self.initialise_ragged(x, pos, lengths)
            mask_x, mask_u = point_mask(lengths, n), point_mask(u_lengths, u.shape[1])
        idx, weights = None, None
        if self.iters:
            kv = self.kv(run_masked([self.norm_x], x, mask_x))  # (B, N, 2 C'): keys, then values
        for _ in range(self.iters):
            idx = self.neighbours(u, x, pos_u, pos, lengths, u_lengths)
            q = self.q(run_masked([self.norm_u], u, mask_u)).view(batch, u.shape[1], self.heads, -1)
            mean = self.update == "mean"
            upd, weights = attend(q, kv, idx, normalize=self.normalize, need_weights=return_details or mean)
            if mean:  # (B, M, H, D) / (B, M, H, 1): each centroid's weighted mean of the values
                upd = upd / weights.sum(2).clamp(min=1e-6).unsqueeze(-1)
            u = u + self.out(upd.reshape(batch, u.shape[1], -1)) / self.iters
        u = pad_rows(self.mlp(u, mask_u), mask_u)
        if return_details:
            return u, pos_u, {"init_idx": init_idx, "idx": idx, "weights": weights, "lengths": u_lengths}
        return u, pos_u
