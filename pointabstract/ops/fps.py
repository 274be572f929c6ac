"""Farthest point sampling (FPS), exact."""

from __future__ import annotations

import numpy as np
import torch

from .. import _validate as V
from ._backend import resolve
from ._dist import overflowing, squared_norm, widen

__all__ = ["farthest_point_sample", "farthest_point_sample_naive"]


def farthest_point_sample(pos: torch.Tensor, m: int, *, lengths: torch.Tensor | None = None,
                          start: str | torch.Tensor = "first",
                          generator: torch.Generator | None = None,
                          backend: str = "auto") -> torch.Tensor:
    """Pick ``m`` points per cloud, each the farthest from those already picked.

    Exact FPS selects the same points as torch-cluster's ``fps(..., random_start=False)`` and
    pytorch3d's ``sample_farthest_points``: start at one point, then repeatedly take the point
    whose squared distance to the picked set is largest; ties go to the lowest index.
    Duplicate-safe: a cloud with fewer than ``m`` distinct points returns every distinct point
    before any repeat (then repeats the lowest index), never NaN. Clouds whose squared
    distances would overflow the dtype (see ``knn``) are sampled in float64.

    Args:
        pos: (B, N, C) point coordinates (C = 3 for xyz; any C samples in feature space).
        m: number of points to pick, 1 <= m <= N.
        lengths: (B,) int64 number of valid points per cloud (the first ``lengths[b]``);
            ``None`` means all N. Slots ``m >= lengths[b]`` are -1.
        start: ``"first"`` starts every cloud at index 0, ``"random"`` at an index drawn
            uniformly from its valid points with ``generator``, or a (B,) int64 tensor of
            start indices (e.g. a permutation-independent choice such as the point farthest
            from the centroid).
        generator: torch.Generator used by ``start="random"``.
        backend: ``"auto"``, ``"numba"``, ``"fpsample"``, ``"torch_cluster"`` or ``"torch"``.
            The numba kernel prunes with a KD-tree on clouds of 1536+ points (a pick updates
            only the tree nodes it can bring closer to the picked set) and stays exact. It
            also takes CUDA tensors (copied to the host and back), and ``"auto"`` uses it
            there too: FPS is m dependent steps, each a few kernel launches on a GPU.

    Returns:
        idx: (B, M) int64; ``idx[b, j]`` indexes ``pos[b]`` and is the j-th pick.
    """
    V.check_cloud("pos", pos, dim=None, finite=False)
    extent = V.finite_extent("pos", pos)
    batch, n, channels = pos.shape
    m = V.check_count("m", m, n)
    lengths = V.check_lengths("lengths", lengths, batch, n, pos.device)
    if isinstance(start, torch.Tensor):
        V.check_index("start", start.view(-1, 1), batch, n, pos.device, allow_invalid=False)
        if bool((start >= lengths).any()):
            raise ValueError("start indices must be below lengths")
        starts = start.view(-1)
    else:
        V.check_choice("start", start, ("first", "random"))
        starts = _start_indices(lengths, start, generator)
    sample = _BACKENDS[resolve("farthest_point_sample", backend, pos.device, channels=channels)]
    huge = overflowing(pos, extent=extent)
    if huge is None:
        return sample(pos.detach(), m, lengths, starts)
    # squared distances overflow in those clouds (every one inf): sample them in float64
    out = sample(pos.detach().masked_fill(huge.view(-1, 1, 1), 0), m, lengths, starts)
    hb = huge.nonzero().flatten()
    (wide,), _ = widen(pos[hb])
    out[hb] = sample(wide, m, lengths[hb], starts[hb])
    return out


def farthest_point_sample_naive(pos: torch.Tensor, m: int, *, lengths: torch.Tensor | None = None,
                                starts: torch.Tensor | None = None) -> torch.Tensor:
    """Reference FPS in plain Python loops (tests only): same rule and outputs as above."""
    batch, n, channels = pos.shape
    lengths = torch.full((batch,), n) if lengths is None else lengths
    out = torch.full((batch, m), -1, dtype=torch.int64)
    for b in range(batch):
        nb = int(lengths[b])
        pts = pos[b, :nb].detach().cpu()
        if overflowing(pos[b : b + 1]) is not None:  # as farthest_point_sample does
            pts = widen(pts[None])[0][0][0]
        last = 0 if starts is None else int(starts[b])
        mind = torch.full((nb,), float("inf"), dtype=pts.dtype)
        for s in range(min(m, nb)):
            out[b, s] = last
            d = (pts[:, 0] - pts[last, 0]) ** 2
            for c in range(1, channels):  # summed channel by channel, like every backend
                d = d + (pts[:, c] - pts[last, c]) ** 2
            mind = torch.minimum(mind, d)
            last = int(torch.argmax(mind))  # first maximum wins ties
    return out.to(pos.device)


def _start_indices(lengths: torch.Tensor, start: str, generator) -> torch.Tensor:
    if start == "first":
        return torch.zeros_like(lengths)
    gen_device = generator.device if generator is not None else "cpu"
    u = torch.rand(lengths.shape, generator=generator, device=gen_device, dtype=torch.float64)
    return (u.to(lengths.device) * lengths).long().minimum(lengths - 1)


def _fps_numba(pos, m, lengths, starts):
    from .kernels import fps, run, to_numpy

    out = np.empty((pos.shape[0], m), np.int64)
    run(fps.fps_par, fps.fps_ser, to_numpy(pos), to_numpy(lengths), m, to_numpy(starts), out,
        work=pos.shape[0] * pos.shape[1] * m)
    return torch.from_numpy(out).to(pos.device)  # CUDA input: a host round trip (see _backend)


def _fps_fpsample(pos, m, lengths, starts):
    import fpsample

    from .kernels import to_numpy

    pts = to_numpy(pos)
    out = torch.full((pos.shape[0], m), -1, dtype=torch.int64)
    for b, (nb, s) in enumerate(zip(lengths.tolist(), starts.tolist())):
        take = min(m, nb)
        out[b, :take] = torch.from_numpy(
            fpsample.fps_sampling(pts[b, :nb], take, start_idx=s).astype(np.int64))
    return out


def _fps_torch_cluster(pos, m, lengths, starts):
    import torch_cluster

    out = torch.full((pos.shape[0], m), -1, dtype=torch.int64, device=pos.device)
    for b, nb in enumerate(lengths.tolist()):
        pts = pos[b, :nb]
        if int(starts[b]) != 0:  # torch-cluster always starts at index 0: rotate the cloud
            order = torch.roll(torch.arange(nb, device=pos.device), -int(starts[b]))
            pts = pts[order]
        take = min(m, nb)
        # fps() keeps ceil(ratio * n) points; a ratio just above take/n asks for exactly take
        picked = torch_cluster.fps(pts, ratio=min(1.0, (take - 0.5) / nb), random_start=False)
        picked = picked[:take]
        out[b, :take] = order[picked] if int(starts[b]) != 0 else picked
    return out


def _fps_torch(pos, m, lengths, starts):
    """Vectorised over the batch: one distance update and one argmax per step.

    Kept to few kernels per step (it is launch-bound on CUDA): padding points start at
    distance -1, which ``minimum`` never raises, so they never win without a mask.
    """
    batch, n, channels = pos.shape
    valid = torch.arange(n, device=pos.device) < lengths[:, None]  # (B, N)
    mind = torch.where(valid, torch.inf, -1.0).to(pos.dtype)
    last = starts.clone()
    picks = []
    for _ in range(m):
        picks.append(last)
        diff = pos - torch.gather(pos, 1, last.view(batch, 1, 1).expand(batch, 1, channels))
        mind = torch.minimum(mind, squared_norm(diff))
        last = torch.argmax(mind, dim=1)
    out = torch.stack(picks, 1)
    return out.masked_fill(torch.arange(m, device=pos.device) >= lengths[:, None], -1)


_BACKENDS = {"numba": _fps_numba, "fpsample": _fps_fpsample,
             "torch_cluster": _fps_torch_cluster, "torch": _fps_torch}
