"""Part agreement: do a block's feature-space neighbourhoods follow the shape's parts?

The quantitative version of the Centroid Transformers paper's Fig. 4. For every point of a
block (its features and positions from ``model(pos, return_features=True)``), take its K
nearest *other* points of the block in feature space and count the share that carries the
same part label; do the same with its K nearest points in 3D space, and with all other points
of the block (``chance``: what K neighbours drawn at random would score). Block points get the
part of their nearest input point. Means are taken over a shape's points, then over shapes.

Reading the numbers: ``xyz`` is high whenever parts are spatially compact (3D balls mostly stay
inside one part); a block groups *by part beyond proximity* only where ``feature`` exceeds
``xyz``. ``feature`` near ``chance`` means its feature neighbourhoods ignore parts.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from ... import _validate as V
from ...ops import knn

__all__ = ["block_part_labels", "chance_agreement", "neighbour_agreement", "neighbour_agreement_naive",
           "open_part_dataset", "part_agreement"]


def block_part_labels(block_pos, input_pos, input_part) -> np.ndarray:
    """Part of each block point: the part of its nearest input point.

    Args:
        block_pos: (M, 3) block point positions.
        input_pos: (N, 3) input points.
        input_part: (N,) integer part label of each input point.

    Returns:
        (M,) int64.
    """
    block = _floats("block_pos", block_pos, 3)
    inputs = _floats("input_pos", input_pos, 3)
    part = np.asarray(input_part)
    if part.shape != (inputs.shape[0],) or not np.issubdtype(part.dtype, np.integer):
        raise ValueError(f"input_part must be ({inputs.shape[0]},) integers, got shape {part.shape} "
                         f"dtype {part.dtype}")
    _, idx = knn(block[None], inputs[None], 1)  # (1, M, 1) indices into the N inputs
    return part[idx[0, :, 0].numpy()].astype(np.int64)


def neighbour_agreement(points, labels, k: int) -> np.ndarray:
    """Per point, the share of its ``k`` nearest other points (L2) that has its label.

    Args:
        points: (M, C) coordinates in any space (features, or xyz with C = 3).
        labels: (M,) integer labels.
        k: neighbours, 1 <= k <= M - 1; the point itself is never its own neighbour; equal
            distances are broken by the lower index.

    Returns:
        (M,) float64 in [0, 1].
    """
    x, lab = _check_points_labels(points, labels, k)
    d = torch.cdist(x[None], x[None], compute_mode="donot_use_mm_for_euclid_dist")[0]  # (M, M), exact
    d.fill_diagonal_(float("inf"))
    # the K nearest without sorting each row: every point nearer than the K-th distance, then
    # those at exactly that distance by increasing index until K are taken (a stable sort's order)
    kth = torch.kthvalue(d, k, dim=1, keepdim=True).values  # (M, 1)
    nearer = d < kth
    at_kth = d == kth
    taken = nearer | (at_kth & (at_kth.cumsum(1) <= k - nearer.sum(1, keepdim=True)))  # (M, M), K per row
    same = lab[None, :] == lab[:, None]
    return ((taken & same).sum(1).double() / k).numpy()


def neighbour_agreement_naive(points, labels, k: int) -> np.ndarray:
    """:func:`neighbour_agreement` with plain loops (tests)."""
    x, lab = _check_points_labels(points, labels, k)
    x, lab = x.numpy(), lab.numpy()
    out = np.empty(len(x))
    for i in range(len(x)):
        others = sorted((float(np.sqrt(np.sum((x[j] - x[i]) ** 2))), j) for j in range(len(x)) if j != i)
        out[i] = sum(lab[j] == lab[i] for _, j in others[:k]) / k
    return out


def chance_agreement(labels) -> np.ndarray:
    """Per point, the share of all *other* points with its label (K random neighbours' expectation).

    labels: (M,) integers, M >= 2 -> (M,) float64.
    """
    lab = np.asarray(labels)
    if lab.ndim != 1 or len(lab) < 2 or not np.issubdtype(lab.dtype, np.integer):
        raise ValueError(f"labels must be (M,) integers with M >= 2, got shape {lab.shape} dtype {lab.dtype}")
    _, inverse, counts = np.unique(lab, return_inverse=True, return_counts=True)
    return (counts[inverse] - 1) / (len(lab) - 1)


@torch.no_grad()
def part_agreement(model: torch.nn.Module, dataset, *, k: int | None = None, max_shapes: int | None = None,
                   batch_size: int = 8, use_normals: bool = False,
                   device: str | torch.device = "cpu") -> dict:
    """Feature-space vs 3D-space part agreement of every block, averaged over shapes.

    Args:
        model: returns ``{"blocks": [{"features": (B, M, C), "pos": (B, M, 3)}, ...]}`` when called
            as ``model(pos, features=..., return_features=True)``.
        dataset: samples with ``"pos"`` (N, 3) and ``"part"`` (N,) (and ``"normal"`` with
            ``use_normals``), e.g. :func:`open_part_dataset`. Clouds of different sizes (a
            dataset opened with every stored point) go through the model one at a time.
        k: neighbours per point (default: :func:`~pointabstract.viz.classification.scenes.default_k` of each
            block's M, the paper's 40 of 128 in proportion); capped at M - 1.
        max_shapes: evaluate the first ``max_shapes`` samples only (default: all).
        batch_size: shapes per forward pass.
        use_normals: pass the samples' normals as the model's input features.
        device: where the model runs.

    Returns:
        ``{"block_<i>": {"feature": float, "xyz": float, "chance": float, "k": int, "points": M},
        ..., "shapes": S, "num_points": N}``; with clouds of different sizes N is their range
        (``"30-58"``) and a block's M is that of the first cloud.
    """
    V.check_int("k", k, low=1, allow_none=True)
    V.check_int("batch_size", batch_size, low=1)
    count = len(dataset) if max_shapes is None else min(int(max_shapes), len(dataset))
    if count < 1:
        raise ValueError(f"dataset must hold at least one sample (max_shapes={max_shapes!r}, "
                         f"len={len(dataset)})")
    model.eval()
    sums: dict[int, dict] = {}
    sizes: list[int] = []
    for start in range(0, count, batch_size):
        samples = [dataset[i] for i in range(start, min(start + batch_size, count))]
        for j, s in enumerate(samples):
            if s.get("part") is None:
                raise ValueError(f"dataset sample {start + j} has no 'part' labels: part agreement needs a "
                                 "part-labelled dataset (e.g. open_part_dataset)")
        # clouds of their own sizes (num_points=None, "all") go through the model one at a time
        same_size = len({len(s["pos"]) for s in samples}) == 1
        for group in [samples] if same_size else [[s] for s in samples]:
            n = _add_agreement(sums, model, group, k=k, use_normals=use_normals, device=device)
            sizes += [n] * len(group)
    result = {f"block_{b}": {**acc, **{key: acc[key] / count for key in ("feature", "xyz", "chance")}}
              for b, acc in sums.items()}
    num_points = sizes[0] if min(sizes) == max(sizes) else f"{min(sizes)}-{max(sizes)}"
    return {**result, "shapes": count, "num_points": num_points}


def _add_agreement(sums: dict, model, samples: list[dict], *, k, use_normals: bool, device) -> int:
    """Adds one forward pass's per-block agreement sums of ``samples`` (clouds of one size) to
    ``sums``; returns their number of points."""
    from .scenes import default_k

    pos = torch.as_tensor(np.stack([s["pos"] for s in samples]), dtype=torch.float32)  # (B, N, 3)
    feats = (torch.as_tensor(np.stack([s["normal"] for s in samples]), dtype=torch.float32).to(device)
             if use_normals else None)
    out = model(pos.to(device), features=feats, return_features=True)
    blocks = out.get("blocks") if isinstance(out, dict) else None
    if not blocks:
        raise ValueError("the model returned no per-block features with return_features=True")
    for b, block in enumerate(blocks):
        for j, s in enumerate(samples):
            bpos = block["pos"][j].detach().float().cpu()
            bfeat = block["features"][j].detach().float().cpu()
            labels = block_part_labels(bpos, pos[j], np.asarray(s["part"]))
            kk = min(default_k(len(bpos)) if k is None else k, len(bpos) - 1)
            acc = sums.setdefault(b, {"feature": 0.0, "xyz": 0.0, "chance": 0.0, "k": kk,
                                      "points": int(len(bpos))})
            acc["feature"] += float(neighbour_agreement(bfeat, labels, kk).mean())
            acc["xyz"] += float(neighbour_agreement(bpos, labels, kk).mean())
            acc["chance"] += float(chance_agreement(labels).mean())
    return pos.shape[1]


def open_part_dataset(root: str | Path, *, split: str = "test", num_points: int | None = 1024,
                      use_normals: bool = False):
    """The part-labelled ShapeNetPart split under ``root``, points in stored order (``"first"``);
    ``num_points`` None: every stored point.

    The built-in synthetic data (``pointabstract data synth``) writes the same shapes, in the
    same order, in the ModelNet40 and ShapeNetPart layouts, so its classification test split's
    sample ``i`` is this split's sample ``i`` with part labels. Raises FileNotFoundError /
    ValueError when ``root`` holds no ShapeNetPart layout.
    """
    from ...data import ShapeNetPart

    return ShapeNetPart(root, split, num_points=num_points, sampling="first", use_normals=use_normals)


def _floats(name: str, x, channels: int | None = None) -> torch.Tensor:
    t = torch.as_tensor(x.detach().cpu() if isinstance(x, torch.Tensor) else np.asarray(x))
    if not t.is_floating_point() or t.dim() != 2 or t.shape[0] == 0 or \
            (channels is not None and t.shape[1] != channels):
        want = f"(M, {channels})" if channels else "(M, C)"
        raise ValueError(f"{name} must be a float array of shape {want}, got {tuple(t.shape)} {t.dtype}")
    if not torch.isfinite(t).all():
        raise ValueError(f"{name} holds NaN or Inf values")
    return t.float()


def _check_points_labels(points, labels, k):
    x = _floats("points", points).double()
    lab = torch.as_tensor(np.asarray(labels))
    if lab.shape != (x.shape[0],) or lab.is_floating_point():
        raise ValueError(f"labels must be ({x.shape[0]},) integers, got shape {tuple(lab.shape)} {lab.dtype}")
    V.check_int_in("k", k, 1, x.shape[0] - 1, note=" (M - 1 other points)")
    return x, lab
