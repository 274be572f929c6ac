"""bench curves' records: paired verdicts with the A/A floor, on hand-made rows."""

import pytest

from pointabstract.bench.comparison import Comparison
from pointabstract.bench.curve_report import markdown, paired_verdicts

COMP = Comparison("a claim", {"cp": {}, "none": {}, "k32": {}}, method="cp", metric="overall_accuracy", mode="max",
                  unit="epochs", budgets=(3, 10, 30), control="none", decisive=10,
                  verdict_metrics={"chamfer": "min"}, notes=("A note on k32.",))
PROTOCOL = {"commit": "abc1234", "source": "0123456789abcdef", "threads": 1, "torch": "2.13.0", "device": "cpu"}


def _rows(values: dict[str, list[float]], budget: int = 10, metric: str = "overall_accuracy") -> list[dict]:
    rows = []
    for variant, xs in values.items():
        for seed, x in enumerate(xs):
            row = {"variant": variant, "budget": budget, "seed": seed, metric: x, "chamfer": 30.0 - x / 10}
            if variant.endswith("_aa"):
                row["trained_seed"] = seed + 1000
            rows.append(row)
    return rows


BASE = [50.0, 48.0, 52.0, 49.0, 51.0, 47.0, 50.0, 53.0]
ROWS = _rows({"cp": [x + 4.0 + (0.5 if s % 2 else -0.5) for s, x in enumerate(BASE)],  # +3.5 / +4.5 per seed
              "none": BASE,
              "k32": [x + (1.0 if s % 2 else -1.0) for s, x in enumerate(BASE)],  # +-1: mean 0
              "none_aa": [x + (0.8 if s % 2 else -0.6) for s, x in enumerate(BASE)]})  # the floor: about +-0.7


def test_paired_verdicts_hand_made():
    out = paired_verdicts(ROWS, COMP)
    vs, control = out["overall_accuracy"][10]["vs"], out["overall_accuracy"][10]["control"]
    assert vs["none"]["diffs"] == pytest.approx([3.5, 4.5] * 4)
    assert vs["none"]["mean"] == pytest.approx(4.0) and vs["none"]["verdict"] == "ahead"
    assert (vs["none"]["wins"], vs["none"]["losses"]) == (8, 0) and not vs["none"]["within_floor"]
    assert vs["k32"]["mean"] == pytest.approx(4.0) and vs["k32"]["verdict"] == "ahead"
    assert control["diffs"] == pytest.approx([-0.6, 0.8] * 4) and control["mean"] == pytest.approx(0.1)
    # the second judged metric, lower is better: cp's Chamfer is 0.4 lower, so cp is ahead there too
    chamfer = out["chamfer"][10]["vs"]["none"]
    assert chamfer["mean"] == pytest.approx(-0.4) and chamfer["verdict"] == "ahead" and chamfer["wins"] == 8


def test_the_verdict_says_when_the_floor_is_as_wide_as_the_effect():
    rows = _rows({"cp": [x + (1.5 if s % 2 else 0.3) for s, x in enumerate(BASE)], "none": BASE,
                  "k32": [x - 0.2 for x in BASE], "none_aa": [x + (2.0 if s % 2 else -2.0) for s, x in enumerate(BASE)]})
    md = markdown(rows, COMP, "tiny", "pointabstract bench curves x", 8, protocol=PROTOCOL, jobs=2)
    assert "Protocol: commit abc1234, training code 0123456789abcdef, 1 thread per run, torch 2.13.0, cpu; " \
           "2 runs at a time." in md
    # diffs 0.3 / 1.5: the mean of 8 is 0.3 + 0.15 k, k ~ Binomial(8, 1/2) ones: P(k <= 1) = 9/256 = 3.5 %,
    # so the 2.5 % and 97.5 % quantiles are k = 1 and k = 7; the A/A's +-2 give -2 + 0.5 k likewise
    assert "- vs none at 10 epochs (the decisive budget): cp ahead, mean difference +0.9 [+0.45, +1.35] (8 wins, " \
           "0 losses); the A/A interval [-1.5, +1.5] is as wide as the effect (+0.9): seed noise alone gives " \
           "paired differences this large." in md
    assert "| 10 epochs (decisive) | none | +0.9 [+0.45, +1.35] | 8 / 0 / 0 | 0.0078 | ahead; within the A/A " \
           "floor |" in md
    assert "| 10 epochs (decisive) | A/A: none seeds + 1000 | +0 [-1.5, +1.5] | 4 / 4 / 0 | 1 | (floor) |" in md
    assert "- vs k32 at 10 epochs (the decisive budget): cp ahead" in md
    assert "| none_aa (A/A control: none at seeds + 1000) |" in md and "A note on k32." in md
    assert "## Paired verdict: Chamfer x1e-3 (lower is better)" in md and "mixes protocols" not in md


def test_an_interval_with_0_is_not_distinguishable_and_few_seeds_give_no_verdict():
    rows = _rows({"cp": [x + (1.0 if s % 2 else -1.0) for s, x in enumerate(BASE)], "none": BASE,
                  "k32": BASE, "none_aa": [x + 0.1 for x in BASE]})
    md = markdown(rows, COMP, "tiny", "cmd", 8, protocol=PROTOCOL)
    assert "- vs none at 10 epochs (the decisive budget): cp and none not distinguishable at this budget, " \
           "mean difference +0 [-0.75, +0.75] (4 wins, 4 losses)" in md  # -1 + 0.25 k, k = 1 and 7
    # the A/A differences are all +0.1: its interval excludes 0, so the intervals are too narrow here
    assert "the A/A interval itself excludes 0, so these intervals are too narrow" in md
    few = markdown(_rows({"cp": [1.0, 2.0, 3.0], "none": [0.0, 0.0, 0.0], "k32": [0.0] * 3}, budget=3), COMP, "t",
                   "cmd", 3, protocol=PROTOCOL)
    assert "- vs none at 3 epochs: too few seeds for a paired verdict (3 pairs, at least 8 needed)" in few
    assert "no A/A control at this budget" in few
    assert "- The decisive budget (10 epochs) was not run: no verdict yet." in few
    # with too few seeds the A/A interval is shown, not read as a floor
    few_aa = markdown(_rows({"cp": [1.0, 2.0, 3.0], "none": [0.0] * 3, "k32": [0.0] * 3, "none_aa": [0.0] * 3}),
                      COMP, "t", "cmd", 3, protocol=PROTOCOL)
    assert "(3 pairs, at least 8 needed), mean difference +2 [+1, +3] (3 wins, 0 losses); A/A interval [+0, +0] " \
           "(3 pairs)." in few_aa and "as wide as the effect" not in few_aa


@pytest.mark.parametrize("kw, pattern", [
    ({"method": "x"}, r"method 'x' is not a variant; choose from \['cp', 'none', 'k32'\]"),
    ({"control": "x"}, r"control 'x' is not a variant"),
    ({"verdict_metrics": {"chamfer": "down"}}, r"the mode of chamfer must be one of \['max', 'min'\], got 'down'"),
])
def test_a_comparison_that_names_nothing_is_refused(kw, pattern):
    with pytest.raises(ValueError, match=pattern):
        Comparison(**{**COMP.__dict__, **kw})


def test_further_pairs_get_their_own_paired_verdict():
    # k32 minus none at the same seed: +-1, mean 0; cp minus k32: +2.5 / +5.5, ahead
    comp = Comparison("a claim", {"cp": {}, "none": {}, "k32": {}}, method="cp", metric="overall_accuracy",
                      mode="max", unit="epochs", budgets=(3, 10, 30), control="none", decisive=10,
                      pairs=(("k32", "none"),))
    entry = paired_verdicts(ROWS, comp)["overall_accuracy"][10]
    pair = entry["pairs"]["k32 - none"]
    assert (pair["first"], pair["second"]) == ("k32", "none") and pair["diffs"] == pytest.approx([-1.0, 1.0] * 4)
    assert pair["verdict"] == "not distinguishable" and entry["vs"]["none"]["first"] == "cp"
    md = markdown(ROWS, comp, "tiny", "cmd", 8, protocol=PROTOCOL)
    assert "| 10 epochs (decisive) | k32 minus none | +0 [" in md
    assert "- k32 vs none at 10 epochs (the decisive budget): k32 and none not distinguishable at this budget" in md
    with pytest.raises(ValueError, match=r"a pair must name two different variants, got \('k32', 'k32'\)"):
        Comparison("c", {"cp": {}, "k32": {}}, method="cp", metric="overall_accuracy", mode="max", unit="epochs",
                   budgets=(1,), pairs=(("k32", "k32"),))
