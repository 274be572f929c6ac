"""Learning curves of the papers' comparisons: each trained at several budgets over seeds (``bench curves``).

A comparison at one budget cannot tell a method that is worse from one that is slower to
learn. Here every variant of a comparison is trained through the engine (the loop every user
trains with) at each budget (``optim.epochs``, or ``optim.max_steps`` for step budgets) and
each seed, with the same data, optimiser and schedule for every variant, and the final test
metric is reported as mean ± std per budget, with a verdict per budget (the paper's method
better / worse than each other variant beyond the seed spread, or within it) and in words
(at which budget the ordering settles, whether it crosses over).

Each budget is a complete run with its own schedule, not a checkpoint of a longer run. Runs
live under ``--runs/<comparison>/<variant>/<unit><budget>/seed<s>``; a finished run found there
with the same settings is reused and an interrupted one resumed, so a curve that takes hours
can be stopped and continued with the same command. Records: ``runs/bench/curves_<name>.md``,
``.json`` and ``.png`` (mean with a ±std band per variant over the budgets, log-scaled).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .parts import budget as parts_budget
from .records import check_at_least

__all__ = ["COMPARISONS", "Comparison", "add_arguments", "curve_rows", "main", "plot_curves", "verdicts"]

HARD = "datasets/synthetic-hard"  # `pointabstract data synth --level hard --out datasets/synthetic-hard`
_QUIET = {"log.progress": False, "log.tensorboard": False}


@dataclass(frozen=True)
class Comparison:
    """One of the papers' comparisons, as data: what is trained and what is compared."""

    doc: str  # one line: what the paper claims
    variants: dict[str, dict]  # label -> config overrides ({"model": ..., "model.k": ...})
    method: str  # the label of the paper's method
    metric: str  # the task metric compared (a key of the task's evaluate())
    mode: str  # "max" or "min": which direction is better
    unit: str  # "epochs" or "steps"
    budgets: tuple[int, ...]  # default budgets (>= 3, spanning >= 10x)
    preset: str | None = None  # preset the overrides start from (None: the defaults)
    base: dict = field(default_factory=dict)  # overrides shared by every variant
    scale: float = 1.0  # the metric is shown times this (100 for %, 1e3 for Chamfer)
    extra: tuple[str, ...] = ()  # further metrics shown (same scale rules: see _SCALES)

    @property
    def budget_key(self) -> str:
        return "optim.max_steps" if self.unit == "steps" else "optim.epochs"


_SCALES = {"overall_accuracy": 100, "mean_class_accuracy": 100, "instance_miou": 100, "class_miou": 100,
           "chamfer": 1e3, "fscore": 1, "purity": 1}
_LABELS = {"overall_accuracy": "overall accuracy %", "mean_class_accuracy": "mean class accuracy %",
           "instance_miou": "instance mIoU %", "class_miou": "class mIoU %", "chamfer": "Chamfer x1e-3",
           "fscore": "F-score", "purity": "capsule part purity"}
_FOREVER = 10**6  # epochs of a step-budget run (the step budget ends it first)
# the Sequoia pairs train on bench parts' own budget (points, batch, AdamW + cosine); epochs vary
_PARTS_BUDGET = {**parts_budget(epochs=1, points=256, batch=32, lr=0.003), "data.root": HARD,
                 "data.workers": 0}

COMPARISONS: dict[str, Comparison] = {
    "table3": Comparison(
        "Centroid Transformers Table 3: centroid attention (FPS init, T = 1) beats FPS / random / k-means "
        "subsets and matches full self-attention",
        {"centroid_attention_t1": {"model": "centroid_transformer"},
         "centroid_attention_t2": {"model": "ct_t2"}, "centroid_attention_t3": {"model": "ct_t3"},
         "fps_subset": {"model": "ct_fps_only"}, "random_subset": {"model": "ct_random"},
         "kmeans_subset": {"model": "ct_kmeans"},
         "full_self_attention": {"model": "self_attention_transformer", "model.k": None}},
        method="centroid_attention_t1", metric="overall_accuracy", mode="max", unit="epochs",
        budgets=(3, 10, 30), preset="demo", base={"data.root": HARD}, extra=("mean_class_accuracy",)),
    "capsules": Comparison(
        "Centroid Transformers Table 4: with 12 latent capsules, centroid-attention routing reconstructs "
        "better than dynamic routing (Chamfer 1.6 vs 2.7 x1e-3)",
        {"centroid": {"model": "capsule_ae_small_ca"}, "dynamic": {"model": "capsule_ae_small_dr"},
         "em": {"model": "capsule_ae_small_em"}},
        method="centroid", metric="chamfer", mode="min", unit="steps", budgets=(25, 250, 2500),
        base={"task": "reconstruction", "data.dataset": "shapenet_part", "data.root": HARD,
              "data.num_points": 2048, "data.batch_size": 8, "data.eval_batch_size": 16, "data.workers": 0,
              "optim.optimizer": "adam", "optim.lr": 1e-3, "optim.schedule": "step",
              "optim.step_size": _FOREVER, "optim.epochs": _FOREVER, "log.eval_every": _FOREVER,
              "task.bn_batches": 20},
        extra=("purity", "fscore")),
    "sequoia_seg": Comparison(
        "Sequoia: tree attention segments parts better than softmax attention (82.7 vs 78.8 instance mIoU)",
        {"sequoia": {"model": "sequoia_seg_demo"}, "softmax": {"model": "softmax_seg_demo"},
         # the paper's eq. 1-2 as printed: no relative-position terms, like the softmax baseline
         "sequoia_no_positions": {"model": "sequoia_seg_demo", "model.rel_pos": False}},
        method="sequoia", metric="instance_miou", mode="max", unit="epochs", budgets=(3, 10, 30),
        base={**_PARTS_BUDGET, "task": "part_segmentation", "data.dataset": "shapenet_part"},
        extra=("class_miou",)),
    "sequoia_cls": Comparison(
        "Sequoia: tree attention classifies better than softmax attention (92.0 vs 89.5)",
        {"sequoia": {"model": "sequoia_cls_demo"}, "softmax": {"model": "softmax_cls_demo"}},
        method="sequoia", metric="overall_accuracy", mode="max", unit="epochs", budgets=(3, 10, 30),
        base={**_PARTS_BUDGET, "task": "classification", "data.dataset": "modelnet40"},
        extra=("mean_class_accuracy",)),
    "contextpool": Comparison(
        "ContextPool: pooling each token's context before attention improves the host model",
        {"context_pool": {"model.context_pool": True}, "none": {},
         "context_pool_paper_sizes": {"model.context_pool": True, "model.context_pool_sizes": "softmax"}},
        method="context_pool", metric="overall_accuracy", mode="max", unit="epochs", budgets=(3, 10, 30),
        preset="demo", base={"data.root": HARD}, extra=("mean_class_accuracy",)),
}


def _overrides(comp: Comparison, variant: str, budget: int, seed: int, out: Path, extra: dict) -> dict:
    return {**comp.base, **comp.variants[variant], **extra, **_QUIET, "seed": seed, comp.budget_key: budget,
            "log.out_dir": str(out)}


def _train_one(comp: Comparison, variant: str, budget: int, seed: int, out: Path, extra: dict) -> dict:
    """Train (or reuse / resume the run in ``out``) and return its final metrics."""
    from ..engine import load_config, train

    cfg = load_config(comp.preset, _overrides(comp, variant, budget, seed, out, extra))
    if (out / "last.pt").is_file():
        finished = _finished_metrics(cfg, out)
        if finished is not None:  # never retrained, nor replaced when it cannot be resumed
            return finished
        try:  # an interrupted run with these settings continues
            return train(cfg, resume=True)
        except ValueError:  # other settings (or a damaged file) in the benchmark's own folder
            pass
    return train(cfg, overwrite=True)


def _finished_metrics(cfg, out: Path) -> dict | None:
    """The final metrics (``metrics.json``) of a run in ``out`` that reached ``cfg``'s budget with
    the same settings, or None. Read without resuming: a run written with older parameter names
    cannot be resumed (its optimiser state does not match), but its result stands."""
    from ..engine.trainer import _resume_from

    if not (out / "metrics.json").is_file():
        return None
    try:
        ckpt, _ = _resume_from(cfg, out, allow_config_change=False)
    except (OSError, ValueError):  # another model or settings, a damaged file, not finished
        return None
    budget = cfg.optim.max_steps
    done = ckpt["step"] >= budget if budget > 0 else ckpt["epoch"] >= cfg.optim.epochs
    try:
        metrics = json.loads((out / "metrics.json").read_text())
    except (OSError, ValueError):
        return None
    return metrics if done and metrics.get("epoch") == ckpt["epoch"] else None  # not an older evaluation's


def curve_rows(comp: Comparison, *, budgets, seeds, runs: Path, extra: dict | None = None,
               progress=print) -> list[dict]:
    """One row per (budget, seed, variant), budget-major (a stopped curve has its short budgets):
    ``{"variant", "budget", "seed", metric: value (scaled), ...}``."""
    from .seeds import seed_list

    rows = []
    for budget in budgets:
        for seed in seed_list(seeds):
            for variant in comp.variants:
                out = runs / variant / f"{comp.unit}{budget}" / f"seed{seed}"
                metrics = _train_one(comp, variant, budget, seed, out, extra or {})
                row = {"variant": variant, "budget": budget, "seed": seed}
                for key in (comp.metric, *comp.extra):
                    if isinstance(metrics.get(key), (int, float)):
                        row[key] = float(metrics[key]) * _SCALES.get(key, 1)
                rows.append(row)
                shown = row.get(comp.metric, "n/a")
                progress(f"{variant} {comp.unit} {budget} seed {seed}: {comp.metric} {shown}")
    return rows


def _summaries(rows: list[dict], comp: Comparison) -> dict[int, dict[str, dict]]:
    """{budget: {variant: {metric: {"mean", "std", "values"}}}}."""
    from .seeds import summarise

    out: dict[int, dict[str, dict]] = {}
    for budget in dict.fromkeys(r["budget"] for r in rows):
        mine = [r for r in rows if r["budget"] == budget]
        out[budget] = {s["variant"]: s for s in summarise(mine, [comp.metric, *comp.extra])}
    return out


def verdicts(rows: list[dict], comp: Comparison) -> dict[str, list[str]]:
    """For each other variant: per budget ``"better"`` / ``"worse"`` (the method than it, beyond
    the seed spread) or ``"within"``; the order follows the budgets."""
    from .seeds import beyond_spread

    table = _summaries(rows, comp)
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


def _in_words(marks: list[str], budgets: list[int], comp: Comparison, other: str) -> str:
    """One line: the per-budget verdicts against ``other`` and where the ordering settles."""
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


def _markdown(rows: list[dict], comp: Comparison, name: str, command: str, seeds: int) -> str:
    table = _summaries(rows, comp)
    budgets = list(table)
    lines = [f"# Learning curves: {name}", "", f"`{command}`", "", f"Claim: {comp.doc}.", ""]
    for key in (comp.metric, *comp.extra):
        better = f" ({'higher' if comp.mode == 'max' else 'lower'} is better)" if key == comp.metric else ""
        lines += [f"## {_LABELS.get(key, key)}{better}", "",
                  "| variant | " + " | ".join(f"{b} {comp.unit}" for b in budgets) + " |",
                  "|---|" + "---:|" * len(budgets)]
        for variant in comp.variants:
            cells = []
            for b in budgets:
                s = table[b].get(variant, {}).get(key)
                cells.append(f"{s['mean']:.4g} ± {s['std']:.2g}" if s and s["values"] else "n/a")
            lines.append(f"| {variant}{' (paper method)' if variant == comp.method else ''} | "
                         + " | ".join(cells) + " |")
        lines.append("")
    lines += ["## Verdict", "", f"{comp.method} against each other variant on {_LABELS.get(comp.metric)}, "
              "per budget (better / worse: beyond the seed spread; within: the mean ± std intervals "
              "overlap):", ""]
    lines += [_in_words(m, budgets, comp, other) for other, m in verdicts(rows, comp).items()]
    lines += ["", f"mean ± sample std over {seeds} seeds; each budget is a full run with its own schedule; "
              "every variant has the same data, optimiser, schedule and budget. 'beyond the seed spread' is "
              "a rough screen with few seeds, not a significance test.", ""]
    return "\n".join(lines)


def plot_curves(rows: list[dict], comp: Comparison, path: Path, title: str) -> None:
    """Mean ± std band per variant over the budgets (x log-scaled) for the compared metric."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    table = _summaries(rows, comp)
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
    better = " (lower is better)" if comp.mode == "min" else ""
    ax.set_ylabel(_LABELS.get(comp.metric, comp.metric) + better)
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}.png")
    fig.savefig(tmp)
    plt.close(fig)
    os.replace(tmp, path)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The benchmark's options (``pointabstract bench curves``)."""
    parser.add_argument("comparison", choices=sorted(COMPARISONS), help="which comparison")
    parser.add_argument("--budgets", type=int, nargs="+",
                        help="budgets in the comparison's unit (epochs; capsules: steps); default: its own")
    parser.add_argument("--seeds", type=int, default=3, help="runs per variant and budget (mean ± std)")
    parser.add_argument("--data", help=f"dataset root (default: {HARD}, the hard synthetic level)")
    parser.add_argument("--variants", nargs="+", help="train only these variants (the method is always kept)")
    parser.add_argument("--runs", default="runs/bench/curves", help="run folders (reused and resumed)")
    parser.add_argument("--results", default="runs/bench", help="where curves_<name>.md/.json/.png go")
    parser.add_argument("--workers", type=int, default=0, help="DataLoader workers of every run")
    parser.add_argument("--dry-run", action="store_true", help="list the runs and write nothing")


def _check(args: argparse.Namespace, comp: Comparison) -> tuple[list[int], dict[str, dict]]:
    budgets = list(args.budgets or comp.budgets)
    if not budgets:
        raise ValueError("--budgets selects no budget; give at least one")
    for b in budgets:
        check_at_least("--budgets", b, 1)
    if len(set(budgets)) != len(budgets):
        raise ValueError(f"--budgets must be distinct, got {budgets}")
    check_at_least("--seeds", args.seeds, 1)
    unknown = sorted(set(args.variants or []) - set(comp.variants))
    if unknown:
        raise ValueError(f"--variants {unknown} are not in {args.comparison}; "
                         f"choose from {list(comp.variants)}")
    chosen = set(args.variants or comp.variants) | {comp.method}
    keep = {v: o for v, o in comp.variants.items() if v in chosen}
    if len(keep) < 2:
        raise ValueError(f"--variants leaves only {list(keep)}: a comparison needs the method and another "
                         "variant")
    return sorted(budgets), keep


def main(args: argparse.Namespace) -> int:
    """Train the curves (or reuse finished runs), then write and print the records."""
    from .records import write_records

    base = COMPARISONS[args.comparison]
    budgets, variants = _check(args, base)
    check_at_least("--workers", args.workers, 0)
    extra = {"data.workers": args.workers, **({"data.root": args.data} if args.data else {})}
    comp = Comparison(**{**base.__dict__, "variants": variants})
    root = Path(extra.get("data.root", comp.base.get("data.root", "")))
    if comp.base.get("data.root") and not root.is_dir():
        raise FileNotFoundError(f"no dataset at {root}; generate the hard level with: pointabstract data "
                                f"synth --level hard --out {HARD} (or give --data)")
    runs = Path(args.runs) / args.comparison
    count = len(budgets) * args.seeds * len(variants)
    if args.dry_run:
        print(f"{count} runs: {', '.join(variants)} x {comp.unit} {budgets} x {args.seeds} seeds, "
              f"under {runs}")
        return 0
    rows = curve_rows(comp, budgets=budgets, seeds=args.seeds, runs=runs, extra=extra)
    command = "pointabstract " + " ".join(sys.argv[1:]) if sys.argv[1:2] == ["bench"] else \
        f"pointabstract bench curves {args.comparison}"
    name = f"curves_{args.comparison}"
    md = _markdown(rows, comp, args.comparison, command, args.seeds)
    results = Path(args.results)
    data = {"comparison": args.comparison, "claim": comp.doc, "unit": comp.unit, "budgets": budgets,
            "seeds": args.seeds, "method": comp.method, "metric": comp.metric, "mode": comp.mode,
            "overrides": {k: v for k, v in extra.items()}, "rows": rows, "verdicts": verdicts(rows, comp)}
    write_records({results / f"{name}.md": md, results / f"{name}.json": json.dumps(data, indent=2)},
                  measured=len(rows), what="bench curves")
    plot_curves(rows, comp, results / f"{name}.png", f"{args.comparison}: {_LABELS.get(comp.metric)}, "
                f"mean ± std over {args.seeds} seeds")
    print(md)
    print(f"(also {results / name}.json and .png)")
    return 0 if all(not math.isnan(r.get(comp.metric, math.nan)) for r in rows) else 1
