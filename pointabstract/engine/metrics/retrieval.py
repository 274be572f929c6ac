"""Does a reconstruction depend on its input? Scores that tell a reconstruction from a template.

A model that returns one mean shape for every input can score a fair Chamfer distance: the
mean shape is close to every input. These scores compare each reconstruction with *every* input
of a fixed pool of Q test shapes (the Chamfer distance convention of
:mod:`.reconstruction`: squared, mean per direction, summed):

- **retrieval accuracy**: the share of reconstructions whose nearest input is their own (ties
  count against it); a template scores chance, ``1 / Q``; a perfect autoencoder 1.
- **specificity**: the median over shapes of (median Chamfer distance to the *other* inputs) /
  (Chamfer distance to the own input); a template scores about 1, a good reconstruction many
  times that (medians of an even count: the mean of the middle two).
- **output diversity**: the mean Chamfer distance between two reconstructions divided by the
  mean distance between the two inputs, over the same pairs (each shape with the next
  ``shifts`` shapes of the pool, cyclically); a template scores 0, a faithful model about 1.

:func:`sampling_floor` gives the Chamfer distance between two independent samplings of the same
shapes: the distance a perfect model would still score against a new sampling of its input, to
be shown beside every Chamfer distance.
"""

from __future__ import annotations

import math
import statistics

import torch

from ... import _validate as V
from ...ops import chamfer_distance

__all__ = ["TEMPLATE_WARNING", "depends_on_input", "pairwise_chamfer", "pairwise_chamfer_naive",
           "retrieval_scores", "retrieval_scores_naive", "sampling_floor"]

SHIFTS = 8  # pairs per shape for the output diversity (each shape with the next SHIFTS in the pool)
# below these the report says in words that the reconstructions barely depend on the input
MIN_SPECIFICITY = 1.25  # own input less than 25 % closer than the others
MIN_RETRIEVAL_OVER_CHANCE = 5.0  # retrieval under 5x chance
TEMPLATE_WARNING = ("the reconstructions barely depend on the input: the model returns nearly the same "
                    "cloud for every shape (a template), whatever its Chamfer distance")


def pairwise_chamfer(x: torch.Tensor, y: torch.Tensor, *, pairs: torch.Tensor | None = None) -> torch.Tensor:
    """Chamfer distance of every ``x`` cloud to every ``y`` cloud (or of the given pairs).

    Args:
        x: (Q, M, 3) clouds. y: (R, N, 3) clouds, same dtype and device.
        pairs: optional (E, 2) int64 ``(i, j)`` pairs: only ``chamfer(x[i], y[j])`` is computed.

    Returns:
        (Q, R) float64 with ``out[i, j] = chamfer(x[i], y[j])``; with ``pairs``: (E,) float64.
    """
    V.check_cloud("x", x)
    V.check_cloud("y", y)
    if pairs is not None:
        V.check_ids("pairs", pairs, (None, 2), "(E, 2)")
        if len(pairs) and (int(pairs[:, 0].max()) >= len(x) or int(pairs[:, 1].max()) >= len(y)
                           or int(pairs.min()) < 0):
            raise ValueError(f"pairs must index x ({len(x)} clouds) and y ({len(y)} clouds)")
        out = [chamfer_distance(x[pairs[s:s + 256, 0]], y[pairs[s:s + 256, 1]], batch_reduction=None)
               for s in range(0, len(pairs), 256)]
        return torch.cat(out).double() if out else torch.zeros(0, dtype=torch.float64)
    rows = [chamfer_distance(x[i].expand(len(y), -1, -1), y, batch_reduction=None) for i in range(len(x))]
    return torch.stack(rows).double()  # (Q, R)


def pairwise_chamfer_naive(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Reference (tests only): (Q, R) float64 from full distance matrices, one pair at a time."""
    out = torch.zeros(len(x), len(y), dtype=torch.float64)
    for i, a in enumerate(x.double()):
        for j, b in enumerate(y.double()):
            d2 = ((a[:, None] - b[None]) ** 2).sum(-1)
            out[i, j] = d2.min(1).values.mean() + d2.min(0).values.mean()
    return out


def _shift_pairs(q: int, shifts: int) -> torch.Tensor:
    """(E, 2) pairs ``(i, (i + s) % q)`` for s = 1..min(shifts, q - 1), each unordered pair once."""
    seen, pairs = set(), []
    for s in range(1, min(shifts, q - 1) + 1):
        for i in range(q):
            j = (i + s) % q
            if (min(i, j), max(i, j)) not in seen:
                seen.add((min(i, j), max(i, j)))
                pairs.append((i, j))
    return torch.tensor(pairs, dtype=torch.int64).reshape(-1, 2)


def retrieval_scores(outputs: torch.Tensor, inputs: torch.Tensor, *, shifts: int = SHIFTS) -> dict:
    """Retrieval accuracy, specificity and output diversity of Q reconstructions (module docstring).

    Args:
        outputs: (Q, M, 3) reconstructions, ``outputs[i]`` decoded from ``inputs[i]``; Q >= 2.
        inputs: (Q, N, 3) the inputs, in the same frame.
        shifts: pairs per shape of the output diversity.

    Returns:
        ``{"retrieval", "retrieval_chance", "specificity", "diversity", "pool", "own_chamfer",
        "other_chamfer"}`` (floats; the last two are the medians of the own and other distances).
    """
    V.check_cloud("outputs", outputs)
    V.check_cloud("inputs", inputs)
    V.check_same_batch("outputs", outputs, "inputs", inputs)
    q = len(outputs)
    if q < 2:
        raise ValueError(f"retrieval needs a pool of at least 2 shapes, got {q}")
    V.check_int("shifts", shifts, low=1)
    d = pairwise_chamfer(outputs, inputs)  # (Q, Q): reconstruction i to input j
    own = d.diagonal()
    others = d.masked_fill(torch.eye(q, dtype=torch.bool), math.inf)
    nearest_other = others.min(1).values
    other_median = others.sort(1).values[:, :q - 1].quantile(0.5, dim=1)  # (Q,) median of the Q - 1 others
    pairs = _shift_pairs(q, shifts)
    between_out = pairwise_chamfer(outputs, outputs, pairs=pairs).mean()
    between_in = pairwise_chamfer(inputs, inputs, pairs=pairs).mean()
    return {"retrieval": float((own < nearest_other).double().mean()), "retrieval_chance": 1.0 / q,
            "specificity": float((other_median / own.clamp(min=1e-12)).quantile(0.5)),
            "diversity": float(between_out / between_in.clamp(min=1e-12)), "pool": q,
            "own_chamfer": float(own.quantile(0.5)), "other_chamfer": float(other_median.quantile(0.5))}


def retrieval_scores_naive(outputs: torch.Tensor, inputs: torch.Tensor, *, shifts: int = SHIFTS) -> dict:
    """Reference (tests only): the same scores with plain loops over :func:`pairwise_chamfer_naive`."""
    q = len(outputs)
    d = pairwise_chamfer_naive(outputs, inputs)
    hits, ratios = 0, []
    for i in range(q):
        rest = sorted(float(d[i, j]) for j in range(q) if j != i)
        hits += float(d[i, i]) < rest[0]
        ratios.append(statistics.median(rest) / max(float(d[i, i]), 1e-12))
    d_out, d_in = pairwise_chamfer_naive(outputs, outputs), pairwise_chamfer_naive(inputs, inputs)
    pairs = _shift_pairs(q, shifts).tolist()
    between = sum(float(d_out[i, j]) for i, j in pairs) / sum(float(d_in[i, j]) for i, j in pairs)
    return {"retrieval": hits / q, "specificity": statistics.median(ratios), "diversity": between}


def sampling_floor(first: torch.Tensor, second: torch.Tensor) -> float:
    """Mean Chamfer distance between two samplings (B, N, 3) of the same B shapes, in the same frame."""
    V.check_cloud("first", first)
    V.check_cloud("second", second)
    V.check_same_batch("first", first, "second", second)
    return float(chamfer_distance(first, second, batch_reduction=None).double().mean())


def depends_on_input(scores: dict) -> bool:
    """False when the scores say the reconstructions barely depend on the input (a template):
    specificity under ``MIN_SPECIFICITY`` or retrieval under ``MIN_RETRIEVAL_OVER_CHANCE`` x chance."""
    return (scores["specificity"] >= MIN_SPECIFICITY
            and scores["retrieval"] >= MIN_RETRIEVAL_OVER_CHANCE * scores["retrieval_chance"])
