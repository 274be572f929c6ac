"""The records of ``bench curves``: paired verdicts with their A/A floor, the mean ± std tables,
the former seed-spread screen and the plot.

The verdict of a comparison is paired (:mod:`.paired`): per budget and judged metric, the
per-seed difference of the method and each other variant, its 95 % expanded bootstrap interval and sign
count, and the A/A control's (the baseline trained again with seeds + 1000) as the floor. The
method is *ahead* only where the interval excludes 0 with at least 8 seeds. Runs kept from
another protocol (``--keep-stale``) are marked in every table and the verdict says it mixes them.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from .comparison import AA_OFFSET, LABELS, Comparison
from .paired import MIN_SEEDS, RESAMPLES, paired, verdict, within_floor
from .protocol import describe

__all__ = ["in_words", "markdown", "paired_budget", "paired_verdicts", "plot_curves", "plot_paired",
           "summaries", "verdicts"]

_STALE = "†"


def summaries(rows: list[dict], comp: Comparison) -> dict[int, dict[str, dict]]:
    """{budget: {variant: {metric: {"mean", "std", "values"}}}}."""
    from .seeds import summarise

    out: dict[int, dict[str, dict]] = {}
    for budget in dict.fromkeys(r["budget"] for r in rows):
        mine = [r for r in rows if r["budget"] == budget]
        out[budget] = {s["variant"]: s for s in summarise(mine, list(comp.recorded))}
    return out


def verdicts(rows: list[dict], comp: Comparison) -> dict[str, list[str]]:
    """The former screen: for each other variant, per budget ``"better"`` / ``"worse"`` (the method
    than it, the means differing by more than the two stds together) or ``"within"``."""
    from .seeds import beyond_spread

    table = summaries(rows, comp)
    sign = 1 if comp.mode == "max" else -1
    out = {}
    for other in comp.variants:
        if other == comp.method:
            continue
        marks = []
        for per in table.values():
            a, b = per[comp.method][comp.metric], per[other][comp.metric]
            marks.append("within" if not beyond_spread(a, b) else
                         "better" if sign * (a["mean"] - b["mean"]) > 0 else "worse")
        out[other] = marks
    return out


def in_words(marks: list[str], budgets: list[int], comp: Comparison, other: str) -> str:
    """One line of the former screen: the per-budget marks against ``other``, where they settle."""
    shown = ", ".join(f"{b}: {m}" for b, m in zip(budgets, marks))
    last, settled = marks[-1], len(marks) - 1
    while settled > 0 and marks[settled - 1] == last:
        settled -= 1
    what = {"better": f"{comp.method} better than {other}", "worse": f"{comp.method} worse than {other}",
            "within": f"{comp.method} and {other} within the seed spread"}[last]
    words = f"{what} at every budget run" if settled == 0 else \
        f"{what} from {budgets[settled]} {comp.unit} on"
    if "better" in marks and "worse" in marks:
        words += "; the ordering crosses over within the budgets run"
    elif last != "better":
        words += f"; not in {comp.method}'s favour up to {budgets[-1]} {comp.unit}"
    return f"- vs {other} ({shown}): {words}."


def _values(rows: list[dict], budget: int, variant: str, metric: str) -> dict[int, float]:
    return {r["seed"]: r[metric] for r in rows
            if r["budget"] == budget and r["variant"] == variant and isinstance(r.get(metric), float)}


def paired_verdicts(rows: list[dict], comp: Comparison) -> dict[str, dict[int, dict]]:
    """``{metric: {budget: {"control": A/A summary or None, "vs": {other: summary}, "pairs":
    {"first - second": summary}}}}`` for every judged metric: ``vs`` pairs the method with every
    other variant, ``pairs`` the comparison's further pairs (:attr:`Comparison.pairs`). A summary is
    :func:`.paired.paired`'s plus ``"first"``, ``"second"``, ``"verdict"`` and ``"within_floor"``."""
    aa = f"{comp.control}_aa" if comp.control else None
    out: dict[str, dict[int, dict]] = {}
    for metric, mode in comp.judged.items():
        per_budget = {}
        for budget in dict.fromkeys(r["budget"] for r in rows):
            control = None
            if aa and any(r["variant"] == aa and r["budget"] == budget for r in rows):
                control = paired(_values(rows, budget, aa, metric),
                                 _values(rows, budget, comp.control, metric), mode=mode)
            at = (rows, budget, metric, mode, control)
            vs = {other: _summary(*at, comp.method, other) for other in comp.variants if other != comp.method}
            pairs = {f"{a} - {b}": _summary(*at, a, b) for a, b in comp.pairs}
            per_budget[budget] = {"control": control, "vs": vs, "pairs": pairs}
        out[metric] = per_budget
    return out


def _summary(rows: list[dict], budget: int, metric: str, mode: str, control: dict | None, first: str,
             second: str) -> dict:
    """The paired summary of ``first`` minus ``second`` at ``budget``, with its verdict and floor."""
    s = paired(_values(rows, budget, first, metric), _values(rows, budget, second, metric), mode=mode)
    return {**s, "first": first, "second": second, "verdict": verdict(s, mode=mode),
            "within_floor": within_floor(s, control) if control else None}


def _ci(s: dict) -> str:
    return f"{s['mean']:+.3g} [{s['low']:+.3g}, {s['high']:+.3g}]" if s["n"] else "n/a"


def _words(comp: Comparison, budget: int, s: dict, control: dict | None) -> str:
    unit = f"{budget} {comp.unit}" + (" (the decisive budget)" if budget == comp.decisive else "")
    first, other = s["first"], s["second"]
    head = {"ahead": f"{first} ahead", "behind": f"{first} behind",
            "not distinguishable": f"{first} and {other} not distinguishable at this budget",
            "too few seeds": f"too few seeds for a paired verdict ({s['n']} pairs, at least {MIN_SEEDS} "
                             "needed)"}[s["verdict"]]
    line = (f"- {'' if first == comp.method else first + ' '}vs {other} at {unit}: {head}, mean difference "
            f"{_ci(s)} ({s['wins']} wins, {s['losses']} losses)")
    floor = f"[{control['low']:+.3g}, {control['high']:+.3g}]" if control else ""
    if control is None:
        return line + "; no A/A control at this budget."
    if s["verdict"] == "too few seeds" or control["n"] < MIN_SEEDS:
        return line + f"; A/A interval {floor} ({control['n']} pairs)."
    if s["within_floor"]:
        line += (f"; the A/A interval {floor} is as wide as the effect ({s['mean']:+.3g}): seed noise alone "
                 "gives paired differences this large")
    else:
        line += f"; the A/A interval {floor} is narrower than the effect"
    if control["low"] > 0 or control["high"] < 0:
        line += ("; the A/A interval itself excludes 0, so these intervals are too narrow: read this "
                 "budget's verdicts as not distinguishable")
    return line + "."


def _paired_section(rows: list[dict], comp: Comparison) -> list[str]:
    lines = []
    for metric, per_budget in paired_verdicts(rows, comp).items():
        mode = comp.judged[metric]
        better = "higher" if mode == "max" else "lower"
        control = (f"A/A: {comp.control} trained again with seeds + {AA_OFFSET}, minus {comp.control} (the "
                   "noise floor)." if comp.control else "No A/A control in this comparison.")
        lines += [f"## Paired verdict: {LABELS.get(metric, metric)} ({better} is better)", "",
                  f"Per budget: the per-seed difference ({comp.method} minus the other variant, same seed; "
                  "a row 'A minus B' pairs two other variants), "
                  f"its mean with a 95 % expanded percentile bootstrap interval ({RESAMPLES:,} resamples, "
                  "fixed RNG; as wide as Student's t interval on symmetric data), wins / "
                  f"losses / ties and the exact sign test. {control} 'ahead' / 'behind' only where the "
                  f"interval excludes 0, with at least {MIN_SEEDS} seeds.", "",
                  "| budget | vs | mean difference [95 % CI] | wins / losses / ties | sign test p | "
                  "verdict |", "|---:|---|---|---|---:|---|"]
        for budget, entry in per_budget.items():
            mark = f"{budget} {comp.unit}" + (" (decisive)" if budget == comp.decisive else "")
            for s in [*entry["vs"].values(), *entry["pairs"].values()]:
                word = s["verdict"] + ("; within the A/A floor" if s["within_floor"] else "")
                who = s["second"] if s["first"] == comp.method else f"{s['first']} minus {s['second']}"
                lines.append(f"| {mark} | {who} | {_ci(s)} | {s['wins']} / {s['losses']} / {s['ties']} | "
                             f"{s['p_sign']:.2g} | {word} |")
            if entry["control"]:
                c = entry["control"]
                lines.append(f"| {mark} | A/A: {comp.control} seeds + {AA_OFFSET} | {_ci(c)} | {c['wins']} / "
                             f"{c['losses']} / {c['ties']} | {c['p_sign']:.2g} | (floor) |")
        lines += ["", "In words:", ""]
        for budget, entry in per_budget.items():
            lines += [_words(comp, budget, s, entry["control"])
                      for s in [*entry["vs"].values(), *entry["pairs"].values()]]
        if comp.decisive is not None and comp.decisive not in per_budget:
            lines.append(f"- The decisive budget ({comp.decisive} {comp.unit}) was not run: no verdict yet.")
        lines.append("")
    return lines


def _protocol_lines(rows: list[dict], protocol: dict, jobs: int | None) -> list[str]:
    how = ("every run taken from the ledger, none trained by this command (--from-ledger)" if jobs is None
           else f"{jobs} run{'s' if jobs != 1 else ''} at a time")
    lines = [f"Protocol: {describe(protocol)}; {how}. A run is reused only when its recorded protocol "
             "matches (training code, threads, torch, device, and the data where it records a "
             "fingerprint).", ""]
    stale = [r for r in rows if "stale" in r]
    if stale:
        lines += [f"**This record mixes protocols**: {len(stale)} of {len(rows)} runs were trained under "
                  f"another protocol and kept with --keep-stale (marked {_STALE}); its verdicts are not "
                  "under one protocol:", ""]
        lines += [f"- {r['variant']} {r['budget']} seed {r.get('trained_seed', r['seed'])}: {r['stale']}"
                  for r in stale] + [""]
    return lines


def _mean_tables(rows: list[dict], comp: Comparison) -> list[str]:
    table = summaries(rows, comp)
    budgets = list(table)
    labels = {comp.method: " (paper method)"}
    if comp.control:
        labels[f"{comp.control}_aa"] = f" (A/A control: {comp.control} at seeds + {AA_OFFSET})"
    lines = []
    for key in comp.recorded:
        mode = comp.judged.get(key)
        better = f" ({'higher' if mode == 'max' else 'lower'} is better)" if mode else ""
        lines += [f"## {LABELS.get(key, key)}{better}: mean ± std", "",
                  "| variant | " + " | ".join(f"{b} {comp.unit}" for b in budgets) + " |",
                  "|---|" + "---:|" * len(budgets)]
        for variant in dict.fromkeys(r["variant"] for r in rows):
            cells = []
            for b in budgets:
                s = table[b].get(variant, {}).get(key)
                stale = sum("stale" in r for r in rows if r["variant"] == variant and r["budget"] == b)
                cell = f"{s['mean']:.4g} ± {s['std']:.2g}" if s and s["values"] else "n/a"
                cells.append(cell + (f" {_STALE}{stale}" if stale else ""))
            lines.append(f"| {variant}{labels.get(variant, '')} | " + " | ".join(cells) + " |")
        lines.append("")
    return lines


def markdown(rows: list[dict], comp: Comparison, name: str, command: str, seeds: int, *, protocol: dict,
             jobs: int | None = 1) -> str:
    """The record ``curves_<name>.md``; ``jobs=None``: the rows came from a ledger alone."""
    budgets = list(dict.fromkeys(r["budget"] for r in rows))
    lines = [f"# Learning curves: {name}", "", f"`{command}`", "", f"Claim: {comp.doc}.", ""]
    lines += _protocol_lines(rows, protocol, jobs)
    lines += _paired_section(rows, comp)
    lines += list(comp.notes) + ([""] if comp.notes else [])
    lines += _mean_tables(rows, comp)
    lines += ["## Seed-spread screen (the former rule)", "",
              f"{comp.method} against each other variant on {LABELS.get(comp.metric, comp.metric)}: better / "
              "worse when the means differ by more than the two stds together, else within. A rough screen, "
              "not a test; the paired verdict above decides.", ""]
    lines += [in_words(m, budgets, comp, other) for other, m in verdicts(rows, comp).items()]
    lines += ["", f"mean ± sample std over {seeds} seeds; each budget is a full run with its own schedule; "
              "every variant has the same data, optimiser, schedule and budget.", ""]
    return "\n".join(lines)


def plot_curves(rows: list[dict], comp: Comparison, path: Path, title: str) -> None:
    """Mean ± std band per variant over the budgets (x log-scaled) for the compared metric."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    table = summaries(rows, comp)
    budgets = list(table)
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=110)
    for variant in comp.variants:
        means = [table[b][variant][comp.metric]["mean"] for b in budgets]
        stds = [table[b][variant][comp.metric]["std"] for b in budgets]
        width = 2.4 if variant == comp.method else 1.2
        (line,) = ax.plot(budgets, means, marker="o", linewidth=width, label=variant)
        ax.fill_between(budgets, [m - s for m, s in zip(means, stds)], [m + s for m, s in zip(means, stds)],
                        color=line.get_color(), alpha=0.18)
    ax.set_xscale("log")
    ax.minorticks_off()
    ax.set_xticks(budgets, [str(b) for b in budgets])
    ax.set_xlabel(f"budget ({comp.unit})")
    ax.set_ylabel(LABELS.get(comp.metric, comp.metric) + (" (lower is better)" if comp.mode == "min" else ""))
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    _save(fig, path)


def _save(fig, path: Path, *, tight: bool = True) -> None:
    """Write ``fig`` to ``path`` through a temporary file (a reader never sees half a PNG), close it;
    ``tight=False``: keep the layout the caller set."""
    import matplotlib.pyplot as plt

    if tight:
        fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}.png")
    fig.savefig(tmp)
    plt.close(fig)
    os.replace(tmp, path)


# the colour of a paired row by its verdict; the A/A control's row and floor band in grey
_VERDICT_COLOURS = {"ahead": "#1b7837", "behind": "#b2182b", "not distinguishable": "#4d4d4d",
                    "too few seeds": "#9e9e9e"}


def paired_budget(rows: list[dict], comp: Comparison) -> int | None:
    """The budget a paired plot shows: the decisive one where it was run, else the largest run."""
    budgets = sorted({r["budget"] for r in rows})
    if not budgets:
        return None
    return comp.decisive if comp.decisive in budgets else budgets[-1]


def _paired_note(s: dict, is_control: bool, unsure: bool) -> str:
    """The numbers and the verdict written to the right of one row of the paired plot."""
    floor = "; within the A/A floor" if s.get("within_floor") else ""
    floor += "; the A/A interval excludes 0: read as not distinguishable" if unsure else ""
    word = "(floor)" if is_control else s["verdict"] + floor
    return f"{s['mean']:+.3g} [{s['low']:+.3g}, {s['high']:+.3g}]  {s['wins']}/{s['losses']}  {word}"


def plot_paired(rows: list[dict], comp: Comparison, path: Path, title: str, *,
                paired: dict | None = None) -> bool:
    """The evidence behind the paired verdict, one row per difference at :func:`paired_budget`: every
    seed's difference (dots), their mean (diamond) with its 95 % interval (bar), coloured by the
    verdict, and the A/A control's interval as a grey band across all rows (the noise floor), for the
    comparison's main metric. ``paired``: :func:`paired_verdicts` of ``rows`` when the caller has it
    already (computed here otherwise). Returns False (and draws nothing) when no difference has a
    seed pair."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    budget = paired_budget(rows, comp)
    if budget is None:
        return False
    entry = (paired if paired is not None else paired_verdicts(rows, comp)).get(comp.metric, {}).get(budget)
    if not entry:
        return False
    shown = [(f"{s['first']} - {s['second']}", s) for s in [*entry["vs"].values(), *entry["pairs"].values()]]
    control = entry["control"]
    if control is not None:
        shown.append((f"A/A: {comp.control} (seeds + {AA_OFFSET}) - {comp.control}", control))
    shown = [(label, s) for label, s in shown if s["n"]]
    if not shown:
        return False
    # a fixed 4.5-inch plot area whatever the text's length: the row labels to its left and the
    # numbers to its right get their own margins (8 pt: about 0.06 inch a character)
    # an A/A interval that itself excludes 0 makes every interval at this budget too narrow to trust
    unsure = control is not None and control["n"] >= MIN_SEEDS and (control["low"] > 0 or control["high"] < 0)
    notes = [_paired_note(s, s is control, unsure) for _, s in shown]
    left = 0.25 + 0.065 * max(len(label) for label, _ in shown)
    right = 0.2 + 0.055 * max(len(n) for n in notes)
    width, height = left + 4.5 + right, 1.6 + 0.55 * len(shown)
    fig, ax = plt.subplots(figsize=(width, height), dpi=110)
    fig.subplots_adjust(left=left / width, right=(left + 4.5) / width, bottom=0.75 / height,
                        top=1 - 0.75 / height)
    if control is not None and control["n"]:
        ax.axvspan(control["low"], control["high"], color="0.85", zorder=0,
                   label=f"A/A interval (noise floor) [{control['low']:+.3g}, {control['high']:+.3g}]")
    ax.axvline(0, color="black", linewidth=0.8, zorder=1)
    for y, ((_, s), note) in enumerate(zip(reversed(shown), reversed(notes))):
        is_control = s is control
        colour = "#7f7f7f" if is_control else \
            _VERDICT_COLOURS["not distinguishable" if unsure else s["verdict"]]
        offsets = (np.arange(s["n"]) - (s["n"] - 1) / 2) * (0.3 / max(s["n"], 1))
        ax.scatter(s["diffs"], y + offsets, s=14, color=colour, alpha=0.55, zorder=2)
        ax.hlines(y, s["low"], s["high"], color=colour, linewidth=3, zorder=3)
        ax.scatter([s["mean"]], [y], marker="D", s=46, color=colour, edgecolor="black", zorder=4)
        ax.annotate(note, (1.01, y), xycoords=("axes fraction", "data"), va="center", fontsize=8,
                    color=colour)
    ax.set_yticks(range(len(shown)), [label for label, _ in reversed(shown)], fontsize=8)
    ax.set_ylim(-0.7, len(shown) - 0.3)
    better = "higher" if comp.mode == "max" else "lower"
    n = max(s["n"] for _, s in shown)
    ax.set_xlabel(f"paired difference in {LABELS.get(comp.metric, comp.metric)} ({better} is better for the "
                  f"first), {budget} {comp.unit}, {n} seeds: dots = seeds, diamond + bar = mean and 95 % "
                  "interval",
                  fontsize=8)
    ax.set_title(title, fontsize=10, pad=18)
    ax.grid(axis="x", alpha=0.3)
    if control is not None and control["n"]:  # above the rows, under the title: never over a point
        ax.legend(fontsize=7, loc="lower left", bbox_to_anchor=(0, 1.0), frameon=False, borderaxespad=0.2)
    _save(fig, path, tight=False)
    return True
