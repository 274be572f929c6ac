"""Learning curves of the papers' comparisons: each trained at several budgets over seeds (``bench curves``).

A comparison at one budget cannot tell a method that is worse from one that is slower to
learn. Here every variant of a comparison is trained through the engine (the loop every user
trains with) at each budget (``optim.epochs``, or ``optim.max_steps`` for step budgets) and
each seed, with the same data, optimiser and schedule for every variant.

The verdict is paired (:mod:`.curve_report`, :mod:`.paired`): per budget, the per-seed
difference of the method and each other variant (same seed), its 95 % expanded bootstrap interval and
sign count, beside an A/A control (the comparison's baseline trained again with seeds + 1000)
that shows how large a difference seed noise alone gives. "Ahead" only where the interval
excludes 0, with at least 8 seeds; the comparison's ``decisive`` budget gives its verdict. The
mean ± std tables and the former seed-spread screen are kept beside it.

One protocol for every run (:mod:`.protocol`): each run records the training code's hash, the
commit, the thread count (``--threads``, default 1), torch, the device and a fingerprint of the
dataset folders it reads, and a finished run is reused only when they match; runs of another
protocol are trained again (or, with ``--keep-stale``, kept and labelled in every table).
``--jobs J`` trains J runs at a time in worker processes, one queue: "one run per core". Each
budget is a complete run with its own schedule, not a checkpoint of a longer run. Runs live under
``--runs/<comparison>/<variant>/<unit><budget>/seed<s>``, so a curve that takes hours can be
stopped and continued with the same command. Records: ``runs/bench/curves_<name>.md``,
``.json`` (rows, protocol, paired verdicts), ``.png`` (mean ± std per variant over the budgets) and
``_paired.png`` (every seed's paired difference, the mean with its interval and the A/A floor, at
the decisive budget). ``--from-ledger`` writes the records from a ``--ledger``'s runs alone.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from .comparison import AA_OFFSET, LABELS, Comparison
from .curve_report import markdown, paired_verdicts, plot_curves, plot_paired, verdicts
from .ledger import Ledger
from .parts import budget as parts_budget
from .records import check_at_least

__all__ = ["COMPARISONS", "Comparison", "add_arguments", "curve_rows", "main", "plot_curves", "verdicts"]

HARD = "datasets/synthetic-hard"  # `pointabstract data synth --level hard --out datasets/synthetic-hard`
_FOREVER = 10**6  # epochs of a step-budget run (the step budget ends it first)
# the Sequoia pairs train on bench parts' own budget (points, batch, AdamW + cosine); epochs vary
_PARTS_BUDGET = {**parts_budget(epochs=1, points=256, batch=32, lr=0.003), "data.root": HARD,
                 "data.workers": 0}
# the softmax baseline at Sequoia's parameter count: its feed-forward hidden width 404 instead of 96
# (48 x 8.42), the only difference (tests/bench/test_curves.py prints both counts)
_MATCHED_MLP_RATIO = 8.42
_MATCHED_NOTE = ("Mechanism check: `softmax_matched_params` is {model} with its feed-forward hidden width "
                 "raised from 96 to 404 (`model.mlp_ratio=8.42`), which gives it Sequoia's parameter count "
                 "within 0.1 %; embedding, attention, depth and head are unchanged.")


def _capsule_variants(size: str) -> dict[str, dict]:
    """Table 4's three routings and the floor (a plain autoencoder) at one registry size ("small":
    the paper's; "demo": `make demo`'s), each also at the paper's lr (labelled ``_lr1e-4``)."""
    models = {"centroid": f"capsule_ae_{size}_ca", "dynamic": f"capsule_ae_{size}_dr",
              "em": f"capsule_ae_{size}_em", "plain_autoencoder": f"pointnet_ae_{size}"}
    return {**{label: {"model": m} for label, m in models.items()},
            **{f"{label}_lr1e-4": {"model": m, "optim.lr": 1e-4} for label, m in models.items()}}


# the paired verdicts every capsule comparison adds to centroid attention's against each variant: the
# routings at the paper's learning rate against each other and the floor, and each other routing
# against the floor
_CAPSULE_PAIRS = (("centroid_lr1e-4", "dynamic_lr1e-4"), ("centroid_lr1e-4", "em_lr1e-4"),
                  ("centroid_lr1e-4", "plain_autoencoder_lr1e-4"), ("dynamic", "plain_autoencoder"),
                  ("em", "plain_autoencoder"))
# mechanism check at make demo's size: each routing with 3D-PointCapsNet's decoder (one MLP per point
# slot, `model.decoders=0`) instead of the demo's one shared MLP, paired with the same routing as is
_DECODER_CHECK = {f"{label}_per_slot_decoder": {**_capsule_variants("demo")[label], "model.decoders": 0}
                  for label in ("centroid", "dynamic")}
_DECODER_PAIRS = (("centroid_per_slot_decoder", "centroid"), ("dynamic_per_slot_decoder", "dynamic"))
# the scores every capsule comparison shows beside its verdicts on Chamfer and retrieval
_CAPSULE_EXTRA = ("specificity", "diversity", "sampling_floor", "capsule_spread", "purity", "fscore")
EASY = "datasets/synthetic"  # `pointabstract data synth --out datasets/synthetic` (make demo makes it)
_RETRIEVAL_NOTE = ("Retrieval: the share of 64 fixed test shapes whose reconstruction is nearest (Chamfer) "
                   "to its own input; chance 1/64.")
COMPARISONS: dict[str, Comparison] = {
    "table3": Comparison(
        "Centroid Transformers Table 3: centroid attention (FPS init, T = 1) beats FPS / random / k-means "
        "subsets and matches full self-attention",
        {"centroid_attention_t1": {"model": "centroid_transformer"},
         "centroid_attention_t2": {"model": "ct_t2"}, "centroid_attention_t3": {"model": "ct_t3"},
         "fps_subset": {"model": "ct_fps_only"}, "random_subset": {"model": "ct_random"},
         "kmeans_subset": {"model": "ct_kmeans"},
         "full_self_attention": {"model": "self_attention_transformer", "model.k": None},
         # mechanism checks (labelled variants, never the default): eq. 2's softmax over each centroid's
         # inputs instead of eq. 4's over the centroids, and neighbours found in xyz instead of features
         "centroid_attention_t1_normalize_inputs": {"model": "centroid_transformer",
                                                    "model.normalize": "inputs"},
         "centroid_attention_t1_knn_xyz": {"model": "centroid_transformer", "model.knn_space": "xyz"}},
        method="centroid_attention_t1", metric="overall_accuracy", mode="max", unit="epochs",
        budgets=(3, 10, 30), preset="demo", base={"data.root": HARD}, extra=("mean_class_accuracy",),
        control="fps_subset", decisive=10,
        notes=("Mechanism checks: `centroid_attention_t1_normalize_inputs` (`model.normalize=inputs`: the "
               "softmax over each centroid's inputs, eq. 2, instead of eq. 4's over the centroids) and "
               "`centroid_attention_t1_knn_xyz` (`model.knn_space=xyz`: the centroid blocks' neighbours in "
               "xyz, not in feature space); each is centroid attention T = 1 with one setting changed.",)),
    "capsules": Comparison(
        "Centroid Transformers Table 4: with 12 latent capsules, centroid-attention routing reconstructs "
        "better than dynamic routing (Chamfer 1.6 vs 2.7 x1e-3)",
        _capsule_variants("small"), method="centroid", metric="chamfer", mode="min", unit="steps",
        budgets=(25, 250, 2500),
        base={"task": "reconstruction", "data.dataset": "shapenet_part", "data.root": HARD,
              "data.num_points": 2048, "data.batch_size": 8, "data.eval_batch_size": 16, "data.workers": 0,
              "optim.optimizer": "adam", "optim.lr": 1e-3, "optim.schedule": "step",
              "optim.step_size": _FOREVER, "optim.epochs": _FOREVER, "log.eval_every": _FOREVER,
              "task.bn_batches": 20},
        extra=_CAPSULE_EXTRA, pairs=_CAPSULE_PAIRS,
        verdict_metrics={"retrieval": "max"}, control="dynamic", decisive=2500,
        notes=("`plain_autoencoder` is the floor: a PointNet encoder and a fully connected decoder, no "
               "capsules (`pointnet_ae_small`), trained with the same data, loss, optimiser and steps. The "
               "`_lr1e-4` rows are the same models at the paper's learning rate (the others: 1e-3). "
               + _RETRIEVAL_NOTE,)),
    "capsules_demo": Comparison(
        "Centroid Transformers Table 4 at make demo's size: centroid-attention routing reconstructs better "
        "than dynamic routing",
        {**_capsule_variants("demo"), **_DECODER_CHECK}, method="centroid", metric="chamfer", mode="min",
        unit="epochs", budgets=(1, 5, 10),
        preset="capsules_demo_dr", base={"data.root": EASY, "log.eval_every": _FOREVER},
        extra=_CAPSULE_EXTRA, pairs=_CAPSULE_PAIRS + _DECODER_PAIRS,
        verdict_metrics={"retrieval": "max"}, control="dynamic", decisive=5,
        notes=("The demo-sized models of `make demo` (64 x 8 primary -> 8 x 32 latent capsules, decoder "
               "width 256, centroid attention's mean update; 512 points of the easy level, batch 16, Adam "
               "with a cosine decay over the run's steps), where they reconstruct within minutes of CPU; "
               "`capsules` is the paper-sized comparison. `plain_autoencoder` is the floor "
               "(`pointnet_ae_demo`); `_lr1e-4` rows start the decay from the paper's learning rate (the "
               "others: from make demo's 2e-3). " + _RETRIEVAL_NOTE,
               "Mechanism check: `*_per_slot_decoder` decodes with 3D-PointCapsNet's decoder, one MLP per "
               "point slot (`model.decoders=0`, each capsule's 64 points from 64 MLPs), instead of the "
               "demo's one shared MLP (`decoders=1`); each is paired with its own routing as is.")),
    "sequoia_seg": Comparison(
        "Sequoia: tree attention segments parts better than softmax attention (82.7 vs 78.8 instance mIoU)",
        {"sequoia": {"model": "sequoia_seg_demo"}, "softmax": {"model": "softmax_seg_demo"},
         # the paper's eq. 1-2 as printed: no relative-position terms, like the softmax baseline
         "sequoia_no_positions": {"model": "sequoia_seg_demo", "model.rel_pos": False},
         "softmax_matched_params": {"model": "softmax_seg_demo", "model.mlp_ratio": _MATCHED_MLP_RATIO}},
        method="sequoia", metric="instance_miou", mode="max", unit="epochs", budgets=(3, 10, 30),
        base={**_PARTS_BUDGET, "task": "part_segmentation", "data.dataset": "shapenet_part"},
        extra=("class_miou",), control="softmax", decisive=10,
        notes=(_MATCHED_NOTE.format(model="softmax_seg_demo"),)),
    "sequoia_cls": Comparison(
        "Sequoia: tree attention classifies better than softmax attention (92.0 vs 89.5)",
        {"sequoia": {"model": "sequoia_cls_demo"}, "softmax": {"model": "softmax_cls_demo"},
         "softmax_matched_params": {"model": "softmax_cls_demo", "model.mlp_ratio": _MATCHED_MLP_RATIO}},
        method="sequoia", metric="overall_accuracy", mode="max", unit="epochs", budgets=(3, 10, 30),
        base={**_PARTS_BUDGET, "task": "classification", "data.dataset": "modelnet40"},
        extra=("mean_class_accuracy",), control="softmax", decisive=10,
        notes=(_MATCHED_NOTE.format(model="softmax_cls_demo"),)),
    "contextpool": Comparison(
        "ContextPool: pooling each token's context before attention improves the host model",
        {"context_pool": {"model.context_pool": True}, "none": {},
         "context_pool_paper_sizes": {"model.context_pool": True, "model.context_pool_sizes": "softmax"},
         # mechanism check: a larger support than 16 neighbours (sigma = r K s h grows with K too)
         "context_pool_k32": {"model.context_pool": True, "model.context_pool_k": 32}},
        method="context_pool", metric="overall_accuracy", mode="max", unit="epochs", budgets=(3, 10, 30),
        preset="demo", base={"data.root": HARD}, extra=("mean_class_accuracy",), control="none", decisive=10,
        notes=("Mechanism check: `context_pool_k32` pools each point's 32 nearest points instead of 16 "
               "(`model.context_pool_k=32`); the Gaussian's width sigma = r K s h grows with K as well, so "
               "both the hard bound and the default support double.",)),
}


def curve_rows(comp: Comparison, *, budgets, seeds, runs: Path, extra: dict | None = None, threads: int = 1,
               jobs: int = 1, control: bool = True, keep_stale: bool = False, protocol: dict | None = None,
               ledger=None, train: bool = True, progress=print) -> list[dict]:
    """One row per (budget, seed, variant) and, with ``control``, per A/A cell, budget-major:
    ``{"variant", "budget", "seed", ["trained_seed",] metric: value (scaled), ..., ["stale"]}``
    (:func:`.curve_runs.run_cells`), every run under ``protocol`` (default: the current one with
    ``threads`` threads); with a ``ledger`` (:class:`.ledger.Ledger`), its runs are taken from it
    and the others recorded in it."""
    from .curve_runs import plan, run_cells
    from .protocol import current_protocol
    from .seeds import seed_list

    device = str({**comp.base, **(extra or {})}.get("device", "auto"))
    protocol = protocol or current_protocol(threads, device=device)
    cells = plan(comp, budgets, seed_list(seeds), control=control)
    return run_cells(comp, cells, runs=Path(runs), extra=extra or {}, protocol=protocol, jobs=jobs,
                     keep_stale=keep_stale, ledger=ledger, train=train, progress=progress)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The benchmark's options (``pointabstract bench curves``)."""
    parser.add_argument("comparison", choices=sorted(COMPARISONS), help="which comparison")
    parser.add_argument("--budgets", type=int, nargs="+",
                        help="budgets in the comparison's unit (epochs; capsules: steps); default: its own")
    parser.add_argument("--seeds", type=int, default=3,
                        help="runs per variant and budget (seeds 0..N-1); a paired verdict needs at least 8")
    parser.add_argument("--data", help=f"dataset root (default: {HARD}, the hard synthetic level; "
                                       f"capsules_demo: {EASY}, make demo's)")
    parser.add_argument("--variants", nargs="+",
                        help="train only these variants (the method and the A/A control's baseline are "
                             "always kept)")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads of every run (part of the protocol)")
    parser.add_argument("--jobs", type=int, default=1,
                        help="runs trained at a time, each in its own worker process (one per core)")
    parser.add_argument("--no-control", action="store_true",
                        help=f"skip the A/A control (the baseline trained again with seeds + {AA_OFFSET})")
    parser.add_argument("--keep-stale", action="store_true",
                        help="reuse finished runs of another protocol (labelled in the records) instead of "
                             "training them again")
    parser.add_argument("--runs", default="runs/bench/curves", help="run folders (reused and resumed)")
    parser.add_argument("--results", default="runs/bench", help="where curves_<name>.md/.json/.png go")
    parser.add_argument("--ledger", help="a JSON Lines record of finished runs (one line each: cell, "
                        "settings, protocol, final metrics): runs it holds under the current protocol are "
                        "not trained again, every other finished run is appended; a curve continues "
                        "from it on another machine or after its run folders are gone")
    parser.add_argument("--from-ledger", action="store_true",
                        help="train nothing: write the records from the --ledger's runs alone, under the "
                             "protocol they were trained with (one protocol, whatever the current code); "
                             "every cell must be in it")
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
    check_at_least("--threads", args.threads, 1)
    check_at_least("--jobs", args.jobs, 1)
    check_at_least("--workers", args.workers, 0)
    if comp.control and not args.no_control and args.seeds > AA_OFFSET:
        raise ValueError(f"--seeds {args.seeds} would reach the A/A control's seeds (seed + {AA_OFFSET}); "
                         f"give at most {AA_OFFSET}, or --no-control")
    unknown = sorted(set(args.variants or []) - set(comp.variants))
    if unknown:
        raise ValueError(f"--variants {unknown} are not in {args.comparison}; "
                         f"choose from {list(comp.variants)}")
    chosen = set(args.variants or comp.variants) | {comp.method}
    if comp.control and not args.no_control:
        chosen.add(comp.control)
    keep = {v: o for v, o in comp.variants.items() if v in chosen}
    if len(keep) < 2:
        raise ValueError(f"--variants leaves only {list(keep)}: a comparison needs the method and another "
                         "variant")
    return sorted(budgets), keep


def _records(rows: list[dict], comp: Comparison, args: argparse.Namespace, budgets: list[int], extra: dict,
             protocol: dict, ledger: Ledger | None = None) -> dict:
    command = "pointabstract " + " ".join(sys.argv[1:]) if sys.argv[1:2] == ["bench"] else \
        f"pointabstract bench curves {args.comparison}"
    jobs = None if args.from_ledger else args.jobs  # None: every row came from the ledger
    paired = paired_verdicts(rows, comp)
    data = {"comparison": args.comparison, "claim": comp.doc, "unit": comp.unit, "budgets": budgets,
            "seeds": args.seeds, "method": comp.method, "metric": comp.metric, "mode": comp.mode,
            "verdict_metrics": comp.judged, "control": None if args.no_control else comp.control,
            "decisive": comp.decisive, "protocol": protocol, "jobs": jobs, "overrides": dict(extra),
            "rows": rows, "paired": paired, "spread_screen": verdicts(rows, comp),
            "ledger": str(ledger.path) if ledger is not None else None}
    md = markdown(rows, comp, args.comparison, command, args.seeds, protocol=protocol, jobs=jobs)
    if ledger is not None:
        mine = [e for e in ledger.entries if e["comparison"] == args.comparison]
        commits = sorted({str(e["protocol"].get("commit")) for e in mine})
        plural = "s" if len(commits) != 1 else ""
        md += (f"\nThe runs of this protocol are recorded in the ledger `{ledger.path}` ({len(mine)} runs of "
               f"{args.comparison}, trained at commit{plural} {', '.join(commits)}; the training code and "
               "thread count of each match the protocol above).\n")
    return {"md": md, "json": json.dumps(data, indent=2), "paired": paired}


def selected(args: argparse.Namespace) -> tuple[list[int], Comparison]:
    """The budgets and the comparison that ``args`` (this command's options, checked) train: the
    variants ``--variants`` keeps, the A/A control unless ``--no-control``, and only the further
    pairs whose two variants are both kept."""
    base = COMPARISONS[args.comparison]
    budgets, variants = _check(args, base)
    return budgets, Comparison(**{**base.__dict__, "variants": variants,
                                  "control": None if args.no_control else base.control,
                                  "pairs": tuple(p for p in base.pairs if set(p) <= set(variants))})


def _data_roots(comp: Comparison, budgets: list[int], extra: dict) -> list[str]:
    """The dataset folders the comparison's runs read (each variant's resolved ``data.root``)."""
    from ..engine import load_config

    return sorted({str(load_config(comp.preset, comp.overrides(v, budgets[0], 0, "unused", extra)).data.root)
                   for v in comp.variants})


def main(args: argparse.Namespace) -> int:
    """Train the curves (or reuse finished runs), then write and print the records."""
    from .protocol import current_protocol
    from .records import write_records

    budgets, comp = selected(args)
    variants = comp.variants
    extra = {"data.workers": args.workers, **({"data.root": args.data} if args.data else {})}
    root = Path(extra.get("data.root", comp.base.get("data.root", "")))
    if comp.base.get("data.root") and not root.is_dir():
        hard = comp.base["data.root"] == HARD
        level = "the hard level with: pointabstract data synth --level hard" if hard else \
            "it with: pointabstract data synth"
        raise FileNotFoundError(f"no dataset at {root}; generate {level} --out {comp.base['data.root']} "
                                f"(or give --data)")
    runs = Path(args.runs) / args.comparison
    control = f" + A/A control ({comp.control} at seeds + {AA_OFFSET})" if comp.control else ""
    count = len(budgets) * args.seeds * (len(variants) + bool(comp.control))
    if args.dry_run:
        print(f"{count} runs: {', '.join(variants)}{control} x {comp.unit} {budgets} x {args.seeds} seeds, "
              f"under {runs}; {args.threads} thread(s) per run, {args.jobs} at a time")
        return 0
    ledger = Ledger(args.ledger, args.comparison) if args.ledger else None
    if args.from_ledger and ledger is None:
        raise ValueError("--from-ledger needs --ledger FILE")
    protocol = ledger.protocol() if args.from_ledger else \
        current_protocol(args.threads, device=str(comp.base.get("device", "auto")),
                         data=_data_roots(comp, budgets, extra))
    rows = curve_rows(comp, budgets=budgets, seeds=args.seeds, runs=runs, extra=extra, jobs=args.jobs,
                      control=bool(comp.control), keep_stale=args.keep_stale, protocol=protocol,
                      ledger=ledger, train=not args.from_ledger)
    name, results = f"curves_{args.comparison}", Path(args.results)
    texts = _records(rows, comp, args, budgets, extra, protocol, ledger)
    write_records({results / f"{name}.md": texts["md"], results / f"{name}.json": texts["json"]},
                  measured=len(rows), what="bench curves")
    plot_curves(rows, comp, results / f"{name}.png", f"{args.comparison}: {LABELS.get(comp.metric)}, "
                f"mean ± std over {args.seeds} seeds")
    drawn = plot_paired(rows, comp, results / f"{name}_paired.png",
                        f"{args.comparison}: the paired differences behind the verdict",
                        paired=texts["paired"])
    print(texts["md"])
    print(f"(also {results / name}.json, .png{f' and {name}_paired.png' if drawn else ''})")
    return 0 if all(not math.isnan(r.get(comp.metric, math.nan)) for r in rows) else 1
