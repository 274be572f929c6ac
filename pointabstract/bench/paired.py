"""Paired seeds: the per-seed difference of two variants, its bootstrap interval and sign count.

Two variants trained with the same seed see the same data order and the same augmentation
draws, so their difference at one seed carries less noise than the difference of two means:
``d_s = method_s - other_s`` for every seed ``s`` both ran. A comparison is summarised by the
mean of the ``d_s``, an *expanded* percentile bootstrap 95 % interval of that mean
(``RESAMPLES`` resamples drawn from a generator with a fixed seed, so a record is reproduced
exactly), the sign count (wins / losses / ties, in the direction the metric improves) and the
exact two-sided sign test.

Why expanded: the plain percentile interval of a mean is too narrow for a handful of seeds. Its
width follows the plug-in spread ``s * sqrt((n - 1) / n)`` and a normal quantile, where Student's
interval has ``s`` and ``t(n - 1)``; at n = 8 it is about 22 % narrower, and on normal
differences it covers the true mean about 90 % of the time, not 95 % (measured in
``tests/bench/test_paired.py``). The expanded interval (Hesterberg 2015, "What teachers should
know about the bootstrap", section 4.2) takes the resample quantiles at the wider level
``2 * Phi(t(n - 1) * sqrt(n / (n - 1))) - 1`` instead: the same width as Student's interval on
symmetric data, with the bootstrap's skew kept.

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

__all__ = ["MIN_SEEDS", "RESAMPLES", "bootstrap_interval", "expanded_level", "paired", "sign_test",
           "student_t_quantile", "verdict", "within_floor"]

RESAMPLES = 10_000  # bootstrap resamples of every interval
MIN_SEEDS = 8  # fewer pairs give no verdict
_MODES = ("max", "min")


def _student_t_two_sided(t: float, df: int) -> float:
    """P(|T| <= t) for Student's t with an integer ``df`` >= 1: the finite series of Abramowitz and
    Stegun 26.7.3-26.7.4 in theta = atan(t / sqrt(df))."""
    theta = math.atan(t / math.sqrt(df))
    c2, sin = math.cos(theta) ** 2, math.sin(theta)
    if df % 2 == 0:  # sin(theta) * (1 + 1/2 cos^2 + 1*3/(2*4) cos^4 + ... up to cos^(df-2))
        term = total = 1.0
        for k in range(1, df // 2):
            term *= c2 * (2 * k - 1) / (2 * k)
            total += term
        return sin * total
    if df == 1:
        return 2.0 * theta / math.pi
    # (2/pi) * (theta + sin * cos * (1 + 2/3 cos^2 + 2*4/(3*5) cos^4 + ... up to cos^(df-3)))
    term = total = 1.0
    for k in range(1, (df - 1) // 2):
        term *= c2 * (2 * k) / (2 * k + 1)
        total += term
    return 2.0 / math.pi * (theta + sin * math.cos(theta) * total)


def student_t_quantile(p: float, df: int) -> float:
    """The ``p`` quantile (``0.5 < p < 1``) of Student's t with an integer ``df`` >= 1, by bisection
    of the exact distribution function; ``student_t_quantile(0.975, 7)`` is 2.3646."""
    if isinstance(df, bool) or not isinstance(df, int) or df < 1:
        raise ValueError(f"df must be a positive int, got {df!r}")
    if not 0.5 < p < 1.0:
        raise ValueError(f"p must be in (0.5, 1), got {p!r}")
    target, low, high = 2.0 * p - 1.0, 0.0, 1.0
    while _student_t_two_sided(high, df) < target:
        high *= 2.0
    for _ in range(200):
        mid = 0.5 * (low + high)
        low, high = (mid, high) if _student_t_two_sided(mid, df) < target else (low, mid)
    return 0.5 * (low + high)


def expanded_level(level: float, n: int) -> float:
    """The level at which the expanded percentile interval of ``n`` values takes its resample
    quantiles: ``2 * Phi(t * sqrt(n / (n - 1))) - 1`` with ``t`` Student's ``(1 + level) / 2``
    quantile at ``n - 1`` degrees of freedom (0.9885 for 95 % at n = 8); ``level`` itself for n < 2."""
    if n < 2:
        return level
    z = student_t_quantile((1.0 + level) / 2.0, n - 1) * math.sqrt(n / (n - 1))
    return math.erf(z / math.sqrt(2.0))  # 2 * Phi(z) - 1


def bootstrap_interval(values: Sequence[float], *, resamples: int = RESAMPLES, level: float = 0.95,
                       seed: int = 0, expanded: bool = True) -> tuple[float, float]:
    """Bootstrap interval of the mean of ``values``: expanded percentile (the default) or plain.

    ``resamples`` means of ``n`` values drawn with replacement (``numpy.random.default_rng(seed)``,
    one ``(resamples, n)`` index draw); the interval is their ``(1 - a) / 2`` and ``(1 + a) / 2``
    quantiles (numpy's linear interpolation), with ``a`` = :func:`expanded_level` ``(level, n)``
    or, with ``expanded=False``, ``level`` itself. The same values, level and seed always give the
    same interval.

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
    a = expanded_level(level, x.size) if expanded else level
    idx = np.random.default_rng(seed).integers(0, x.size, size=(resamples, x.size))
    means = x[idx].mean(axis=1)
    low, high = np.quantile(means, [(1.0 - a) / 2.0, (1.0 + a) / 2.0])
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

    Returns ``{"seeds", "diffs" (method - other per seed), "n", "mean", "low", "high" (the expanded
    95 % bootstrap interval of the mean difference), "wins", "losses", "ties" (counted in the
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
