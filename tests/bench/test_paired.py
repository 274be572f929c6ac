"""Paired seeds: bootstrap interval, sign test and verdicts, on hand-computed cases; the interval's
coverage on simulated seeds."""

import math

import numpy as np
import pytest

from pointabstract.bench.paired import (
    MIN_SEEDS,
    bootstrap_interval,
    expanded_level,
    paired,
    sign_test,
    student_t_quantile,
    verdict,
    within_floor,
)


def test_bootstrap_interval_hand_computed():
    # every resample of equal values has the same mean
    assert bootstrap_interval([2.0, 2.0, 2.0]) == (2.0, 2.0)
    # [1, 2, 6]: the all-1 and all-6 resamples each have probability 1/27 = 3.7 % > 2.5 %, so with
    # 10,000 draws the 2.5 % and 97.5 % quantiles are the extreme means themselves
    assert bootstrap_interval([1.0, 2.0, 6.0]) == (1.0, 6.0)
    # [0, 1]: resample means 0, 0.5, 1 with probability 1/4, 1/2, 1/4
    assert bootstrap_interval([0.0, 1.0]) == (0.0, 1.0)
    assert bootstrap_interval([0.0, 1.0], level=0.5, expanded=False) == (0.5, 0.5)
    # expanded, the 50 % interval of two values is taken at 2 * Phi(t(1) * sqrt(2)) - 1 = 84 %:
    # quantiles 0.079 / 0.921, which fall on the 0 and 1 means
    assert bootstrap_interval([0.0, 1.0], level=0.5) == (0.0, 1.0)


def test_bootstrap_interval_is_the_fixed_seed_percentiles():
    values = [0.3, -1.2, 2.5, 0.9, 1.1, -0.4, 0.7, 1.8]
    low, high = bootstrap_interval(values, resamples=500, seed=3, expanded=False)
    idx = np.random.default_rng(3).integers(0, 8, size=(500, 8))  # the documented draw
    means = np.sort(np.asarray(values)[idx].mean(1))
    # linear interpolation between order statistics: position 0.025 * 499 = 12.475
    assert low == pytest.approx(means[12] + 0.475 * (means[13] - means[12]), abs=1e-12)
    assert high == pytest.approx(means[486] + 0.525 * (means[487] - means[486]), abs=1e-12)
    assert bootstrap_interval(values) == bootstrap_interval(values)  # reproducible
    assert low < float(np.mean(values)) < high
    # expanded: the same draw, quantiles at the wider level (0.9885 at n = 8)
    a = expanded_level(0.95, 8)
    e_low, e_high = bootstrap_interval(values, resamples=500, seed=3)
    assert (e_low, e_high) == tuple(np.quantile(means, [(1 - a) / 2, (1 + a) / 2]))
    assert e_low < low and e_high > high


def test_student_t_quantiles_and_the_expanded_level():
    # printed tables: t(0.975) at 1, 2, 7, 30 degrees of freedom; t(0.75) at 1 is 1
    for df, t in [(1, 12.7062), (2, 4.3027), (7, 2.3646), (30, 2.0423)]:
        assert student_t_quantile(0.975, df) == pytest.approx(t, abs=1e-4)
    assert student_t_quantile(0.75, 1) == pytest.approx(1.0, abs=1e-12)
    # 2 * Phi(2.3646 * sqrt(8 / 7)) - 1 = 2 * Phi(2.5279) - 1
    assert expanded_level(0.95, 8) == pytest.approx(0.98853, abs=1e-5)
    assert expanded_level(0.95, 1) == 0.95  # nothing to expand with one value
    # as n grows, t(n - 1) -> z and sqrt(n / (n - 1)) -> 1: the level returns to 95 %
    assert 0.95 < expanded_level(0.95, 1000) < 0.951


def test_the_expanded_interval_covers_95_percent_at_8_seeds_and_the_plain_one_does_not():
    # 1,000 simulated sets of 8 normal paired differences with true mean 0: the share of 95 %
    # intervals containing 0. Seeded, so the numbers are fixed: expanded 0.948, plain 0.903.
    rng = np.random.default_rng(123)
    draws = [rng.standard_normal(8) for _ in range(1000)]
    expanded = np.mean([lo <= 0 <= hi for lo, hi in
                        (bootstrap_interval(x, resamples=2000, seed=i) for i, x in enumerate(draws))])
    plain = np.mean([lo <= 0 <= hi for lo, hi in
                     (bootstrap_interval(x, resamples=2000, seed=i, expanded=False) for i, x in enumerate(draws))])
    assert 0.93 <= expanded <= 0.97  # binomial SE at 1,000 draws: 0.007
    assert plain <= 0.92  # the plain percentile interval under-covers at n = 8


def test_sign_test_hand_computed():
    assert sign_test(8, 0) == 2 / 256 == sign_test(0, 8)
    assert sign_test(7, 1) == pytest.approx(2 * (1 + 8) / 256)  # 0.0703
    assert sign_test(4, 4) == 1.0 and sign_test(0, 0) == 1.0
    assert sign_test(5, 0) == 0.0625  # five wins out of five is not significant at 5 %


def test_paired_differences_and_verdicts():
    method = {s: 50.0 + s for s in range(8)}
    other = {s: 48.0 + s + (0.5 if s % 2 else -0.5) for s in range(8)}  # method ahead by 1.5 or 2.5
    out = paired(method, other, mode="max")
    assert out["diffs"] == [2.5, 1.5, 2.5, 1.5, 2.5, 1.5, 2.5, 1.5] and out["mean"] == 2.0
    assert (out["wins"], out["losses"], out["ties"], out["p_sign"]) == (8, 0, 0, 2 / 256)
    assert 1.5 <= out["low"] < 2.0 < out["high"] <= 2.5
    assert verdict(out, mode="max") == "ahead"
    # the same numbers where lower is better: the method is behind, the sign count flips
    lower = paired(method, other, mode="min")
    assert (lower["wins"], lower["losses"]) == (0, 8) and verdict(lower, mode="min") == "behind"
    # an interval containing 0
    mixed = paired({s: float(s % 2) for s in range(8)}, {s: 0.5 for s in range(8)}, mode="max")
    assert mixed["mean"] == 0.0 and verdict(mixed, mode="max") == "not distinguishable"
    # only common seeds pair; fewer than MIN_SEEDS pairs give no verdict
    few = paired({0: 1.0, 1: 2.0, 5: 3.0}, {0: 0.0, 1: 0.0, 2: 0.0}, mode="max")
    assert few["seeds"] == [0, 1] and few["n"] == 2 < MIN_SEEDS and verdict(few, mode="max") == "too few seeds"
    none = paired({0: 1.0}, {1: 1.0}, mode="max")
    assert none["n"] == 0 and math.isnan(none["mean"])


def test_the_a_a_floor():
    effect = {"n": 8, "mean": 1.5, "low": 0.4, "high": 2.6}
    assert within_floor(effect, {"n": 8, "mean": 0.1, "low": -1.6, "high": 1.2})  # |-1.6| >= 1.5
    assert not within_floor(effect, {"n": 8, "mean": 0.1, "low": -0.9, "high": 1.2})
    assert not within_floor(effect, {"n": 0, "mean": math.nan, "low": math.nan, "high": math.nan})


@pytest.mark.parametrize("call, pattern", [
    (lambda: bootstrap_interval([]), r"values must be a non-empty list of finite numbers, got \[\]"),
    (lambda: bootstrap_interval([1.0, math.nan]), r"values must be a non-empty list of finite numbers"),
    (lambda: bootstrap_interval([1.0], resamples=0), r"resamples must be a positive int, got 0"),
    (lambda: bootstrap_interval([1.0], level=1.0), r"level must be in \(0, 1\), got 1.0"),
    (lambda: sign_test(-1, 2), r"wins and losses must be >= 0, got -1, 2"),
    (lambda: student_t_quantile(0.975, 0), r"df must be a positive int, got 0"),
    (lambda: student_t_quantile(0.4, 3), r"p must be in \(0.5, 1\), got 0.4"),
    (lambda: paired({}, {}, mode="up"), r"mode must be one of \['max', 'min'\], got 'up'"),
    (lambda: verdict({"n": 8}, mode="up"), r"mode must be one of \['max', 'min'\], got 'up'"),
])
def test_bad_arguments(call, pattern):
    with pytest.raises(ValueError, match=pattern):
        call()
