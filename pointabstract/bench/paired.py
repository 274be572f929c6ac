"""Paired seeds: the per-seed difference of two variants, its bootstrap interval and sign count.

Two variants trained with the same seed see the same data order and the same augmentation
draws, so their difference at one seed carries less noise than the difference of two means:
``d_s = method_s - other_s`` for every seed ``s`` both ran. A comparison is summarised by the
mean of the ``d_s``, a percentile bootstrap 95 % interval of that mean (``RESAMPLES`` resamples
drawn from a generator with a fixed seed, so a record is reproduced exactly), the sign count
(wins / losses / ties, in the direction the metric improves) and the exact two-sided sign test.

A verdict (:func:`verdict`) says the method is *ahead* (or *behind*) only when the interval
excludes 0, and only with at least :data:`MIN_SEEDS` pairs: with fewer, a bootstrap interval of
a handful of values excludes 0 whenever they share a sign. The A/A control (the baseline trained
twice under the same protocol with independent seeds) gives the *floor*: the paired differences
that seed noise alone produces. :func:`within_floor` says when an effect is no larger than that.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

__all__ = ["MIN_SEEDS", "RESAMPLES", "bootstrap_interval", "paired", "sign_test", "verdict", "within_floor"]

RESAMPLES = 10_000  # bootstrap resamples of every interval
MIN_SEEDS = 8  # fewer pairs give no verdict
_MODES = ("max", "min")


def bootstrap_interval(values: Sequence[float], *, resamples: int = RESAMPLES, level: float = 0.95,
                       seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``values``.

    ``resamples`` means of ``n`` values drawn with replacement (``numpy.random.default_rng(seed)``,
    one ``(resamples, n)`` index draw); the interval is their ``(1 - level) / 2`` and
    ``(1 + level) / 2`` quantiles (numpy's linear interpolation). The same values, level and seed
    always give the same interval.

    Raises:
        ValueError: no values, a value that is not finite, ``resamples`` < 1, ``level`` outside (0, 1).
    """
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1 or x.size == 0 or not np.isfinite(x).all():
        raise ValueError(f"values must be a non-empty list of finite numbers, got {list(values)}")
    if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 1:
        raise ValueError(f"resamples must be a positive int, got {resamples!r}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    idx = np.random.default_rng(seed).integers(0, x.size, size=(resamples, x.size))
    means = x[idx].mean(axis=1)
    low, high = np.quantile(means, [(1.0 - level) / 2.0, (1.0 + level) / 2.0])
    return float(low), float(high)


def sign_test(wins: int, losses: int) -> float:
    """Exact two-sided sign test: the probability, under a fair coin, of a split at least as
    uneven as ``wins`` / ``losses`` (ties are left out before calling). ``sign_test(8, 0)`` is
    ``2 / 2**8 = 0.0078125``; no pairs give 1."""
    if min(wins, losses) < 0:
        raise ValueError(f"wins and losses must be >= 0, got {wins}, {losses}")
    n = wins + losses
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(wins, losses) + 1))
    return min(1.0, 2.0 * tail / 2**n)


def paired(method: Mapping[int, float], other: Mapping[int, float], *, mode: str) -> dict:
    """The paired comparison of two ``{seed: value}`` maps over the seeds both have.

    Returns ``{"seeds", "diffs" (method - other per seed), "n", "mean", "low", "high" (the 95 %
    bootstrap interval of the mean difference), "wins", "losses", "ties" (counted in the
    direction ``mode`` calls better: a win is a positive difference for ``"max"``, a negative one
    for ``"min"``), "p_sign"}``; with no common seed, n = 0 and NaN statistics.
    """
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {list(_MODES)}, got {mode!r}")
    seeds = sorted(set(method) & set(other))
    diffs = [float(method[s]) - float(other[s]) for s in seeds]
    better = [d if mode == "max" else -d for d in diffs]
    wins, losses = sum(b > 0 for b in better), sum(b < 0 for b in better)
    out = {"seeds": seeds, "diffs": diffs, "n": len(diffs), "wins": wins, "losses": losses,
           "ties": len(diffs) - wins - losses, "p_sign": sign_test(wins, losses)}
    if not diffs:
        return {**out, "mean": math.nan, "low": math.nan, "high": math.nan}
    low, high = bootstrap_interval(diffs)
    return {**out, "mean": float(np.mean(diffs)), "low": low, "high": high}


def verdict(summary: dict, *, mode: str) -> str:
    """``"ahead"`` / ``"behind"`` (the method than the other: the interval excludes 0 in its
    favour / against it), ``"not distinguishable"`` (the interval contains 0), or
    ``"too few seeds"`` (fewer than :data:`MIN_SEEDS` pairs)."""
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {list(_MODES)}, got {mode!r}")
    if summary["n"] < MIN_SEEDS:
        return "too few seeds"
    sign = 1.0 if mode == "max" else -1.0
    low, high = sorted((sign * summary["low"], sign * summary["high"]))
    return "ahead" if low > 0 else "behind" if high < 0 else "not distinguishable"


def within_floor(effect: dict, control: dict) -> bool:
    """Whether the A/A ``control``'s interval reaches at least as far from 0 as ``effect``'s mean
    difference: seed noise alone gives paired differences as large as the effect."""
    if control["n"] == 0 or effect["n"] == 0:
        return False
    return abs(effect["mean"]) <= max(abs(control["low"]), abs(control["high"]))
