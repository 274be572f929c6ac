"""``pointabstract bench capsules``: the Centroid Transformers paper's Table 4 on a CPU.

Dynamic routing vs EM routing vs centroid attention in the point-capsule autoencoder at 12
latent capsules (``capsule_ae_small_*``: 512 x 16 -> 12 x 128) and 64 (``capsule_ae_base_*``:
1024 x 16 -> 64 x 64), built by :mod:`.capsule_models`. Per (routing, capsules):

- parameters (millions);
- forward + backward time of one training step (Chamfer loss) on a batch of ``--batch`` clouds
  of ``--points`` points, median of ``--repeats``, in a fresh process;
- peak memory of that step: the kernel's resident high-water mark (VmHWM, reset after a
  warm-up step) above the resident memory before it;
- the largest batch whose training step fits under ``--cap-mb`` MiB of address space above
  the warmed-up process (``RLIMIT_AS``; the paper's "maximum batch size per GPU"), found by
  doubling then bisection, each try in a fresh process;
- training columns, mean ± std over ``--seeds`` (:mod:`.seeds`), each run trained by the
  engine (``pointabstract train``'s loop, one run folder per routing and seed under ``--runs``)
  for a fixed number of Adam steps of 8 clouds (the same budget for every routing, so the
  quality numbers do not depend on the machine's load; the time it took is reported beside
  them) on the ShapeNetPart layout of the synthetic data, the hard level by default
  (``--level easy``, ``--data ROOT``): test Chamfer distance and F-score and mean capsule part
  purity on the whole test split (the task's evaluation), a capsule-by-part table of the test
  airplanes per routing, and a linear-SVM probe of the frozen latent capsules on the
  classification split (ModelNet40 layout) of the same level (:mod:`.capsule_training`,
  :mod:`.linear_probe`). Default (a few minutes): 25 steps, 12 capsules only, 1,024 input
  points, probe on 200 / 100 shapes. ``--full``: 1,500 steps, 12 and 64 capsules, 2,048 points,
  probe on 2,000 / 1,000 shapes (hours on 2 CPU cores).

The cost columns are measured by :mod:`.capsule_timing`, the training columns by
:mod:`.capsule_training`. The results go to ``runs/bench/capsules.md`` and ``.json``
(``--results``), replaced atomically; options that select nothing to measure are refused before
any work, and the previous record kept.
Everything runs on the CPU; times depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .capsule_models import ROUTINGS, SIZES, build
from .capsule_timing import (
    PAPER_TABLE4,
    PARTS,
    fits,
    format_table,
    max_batch,
    measure_step,
    ratios,
    timing_rows,
)

__all__ = ["PAPER_TABLE4", "add_arguments", "build", "fits", "format_table", "main", "max_batch",
           "measure_step"]

def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--caps", type=int, nargs="+", default=[12, 64], choices=sorted(SIZES))
    parser.add_argument("--routings", nargs="+", default=list(ROUTINGS), choices=ROUTINGS)
    parser.add_argument("--batch", type=int, default=8, help="clouds per timed step")
    parser.add_argument("--points", type=int, default=2048, help="input points per cloud (timed step)")
    parser.add_argument("--repeats", type=int, default=3, help="timed steps (median)")
    parser.add_argument("--parts", nargs="+", default=list(PARTS), choices=PARTS,
                        help="what a timed step trains: the whole autoencoder, the routing module alone "
                             "(from primary capsules), or both rows (default)")
    parser.add_argument("--cap-mb", type=float, default=1024, help="memory cap of the max-batch search")
    parser.add_argument("--cap-points", type=int, default=1024, help="input points in the max-batch search")
    parser.add_argument("--max-batch-limit", type=int, default=128, help="largest batch tried (0: skip)")
    parser.add_argument("--train-steps", type=int, default=None,
                        help=f"training steps per run for the test-Chamfer columns (default {SHORT['steps']},"
                             " "
                             f"--full {FULL['steps']}; 0: skip)")
    parser.add_argument("--train-caps", type=int, nargs="+", default=None, choices=sorted(SIZES),
                        help="capsule counts trained (default 12; --full 12 64)")
    parser.add_argument("--train-points", type=int, default=None,
                        help=f"input points in training (default {SHORT['points']}, --full {FULL['points']})")
    parser.add_argument("--probe", type=int, nargs=2, default=None, metavar=("TRAIN", "TEST"),
                        help=f"classification shapes of the linear probe (default {SHORT['probe']}, "
                             f"--full {FULL['probe']}; 0 0: skip)")
    parser.add_argument("--full", action="store_true", help="the long budget (see the defaults above)")
    parser.add_argument("--seeds", type=int, default=3, help="training runs per routing (mean ± std)")
    parser.add_argument("--level", choices=("hard", "easy"), default="hard",
                        help="synthetic level of the training columns (hard falls back to easy if missing)")
    parser.add_argument("--data", default=None, help="dataset root (default datasets/synthetic[-hard])")
    parser.add_argument("--skip-timing", action="store_true", help="only the training columns")
    parser.add_argument("--out", default=None, help="also write the rows as JSON here")
    parser.add_argument("--results", default="runs/bench", help="folder of capsules.md / capsules.json")
    parser.add_argument("--runs", default="runs/bench_capsules",
                        help="the training runs' folders (<caps>_<routing>/seed<s>, replaced on each run)")
    parser.add_argument("--tiny", action="store_true", help="registry test sizes (a smoke test of the bench)")


# why a cloud needs MIN_POINTS points (the models refuse fewer: models/capsule_autoencoder.py)
_FEWEST = "the fewest input points per cloud the capsule autoencoder's encoder takes"

# the training budgets: (steps of 8 clouds, capsule counts, input points, probe shapes)
SHORT = {"steps": 25, "caps": [12], "points": 1024, "probe": [200, 100]}
FULL = {"steps": 1500, "caps": [12, 64], "points": 2048, "probe": [2000, 1000]}


def _data_root(args) -> str:
    if args.data is not None:
        return args.data
    hard, easy = "datasets/synthetic-hard", "datasets/synthetic"
    if args.level == "hard" and not (Path(hard) / "shapenet_part_seg_hdf5_data").is_dir():
        print(f"note: {hard} is missing (pointabstract data synth --level hard); training on {easy}")
        return easy
    return hard if args.level == "hard" else easy


def _check_options(args, *, steps: int, train_caps, points: int, probe) -> None:
    """Refuse, before any work, options that are out of range or select nothing to measure."""
    from ..engine.run_dir import check_writable_file
    from ..models.capsule_autoencoder import MIN_POINTS
    from .records import check_at_least, kept

    if not args.routings:
        raise ValueError(f"--routings selects no routing; choose from {list(ROUTINGS)}")
    check_at_least("--train-steps", steps, 0, "0: no training")
    if args.skip_timing and steps == 0:
        records = [Path(args.results) / "capsules.md", Path(args.results) / "capsules.json"]
        raise ValueError(f"nothing to run: --skip-timing and --train-steps 0 select no measurement "
                         f"({kept(records)})")
    if not args.skip_timing:
        if not args.caps:
            raise ValueError(f"--caps selects no capsule count; choose from {sorted(SIZES)}")
        for option in ("batch", "repeats"):
            check_at_least(f"--{option}", getattr(args, option), 1)
        for option in ("points", "cap_points"):
            check_at_least(f"--{option.replace('_', '-')}", getattr(args, option), MIN_POINTS, _FEWEST)
        check_at_least("--max-batch-limit", args.max_batch_limit, 0, "0: skip")
        if not args.cap_mb > 0:
            raise ValueError(f"--cap-mb must be > 0, got {args.cap_mb}")
    for path in (Path(args.results) / "capsules.md", Path(args.results) / "capsules.json", args.out):
        if path:
            check_writable_file(path, what="--out" if path == args.out else "--results")
    if steps > 0:
        if not train_caps:
            raise ValueError(f"--train-caps selects no capsule count; choose from {sorted(SIZES)}")
        check_at_least("--seeds", args.seeds, 1, "training runs per routing")
        check_at_least("--train-points", points, MIN_POINTS, _FEWEST)
        check_at_least("--probe", min(probe), 0, "0 0: skip")


def main(args: argparse.Namespace) -> int:
    from .capsule_training import train_run
    from .records import write_records
    from .seeds import run_seeds, write_results

    budget = FULL if args.full else SHORT
    steps = budget["steps"] if args.train_steps is None else args.train_steps
    train_caps = budget["caps"] if args.train_caps is None else args.train_caps
    points = budget["points"] if args.train_points is None else args.train_points
    probe = budget["probe"] if args.probe is None else args.probe
    _check_options(args, steps=steps, train_caps=train_caps, points=points, probe=probe)
    rows = [] if args.skip_timing else timing_rows(args)
    runs, sections = [], []
    if steps > 0:
        data = _data_root(args)
        variants = [f"{caps}/{routing}" for caps in train_caps for routing in args.routings]

        def run_one(variant, seed):
            caps, routing = variant.split("/")
            return train_run(int(caps), routing, seed, steps=steps, data=data, points=points,
                             out=Path(args.runs) / f"{caps}_{routing}" / f"seed{seed}", probe_train=probe[0],
                             probe_test=probe[1], tiny=args.tiny)

        runs = run_seeds(variants, run_one, seeds=args.seeds)
        sections = _training_sections(runs, variants, data=data, steps=steps, points=points, probe=probe)
    for row in rows:  # the measured Chamfer beside the paper's in the cost table
        row["cd_e3"] = [r["cd_e3"] for r in runs if r["variant"] == f"{row['caps']}/{row['routing']}"]
    if rows:
        sections = ["## Cost and test Chamfer beside the paper's Table 4 (CPU here, GPU there)", "",
                    format_table(rows, batch=args.batch, points=args.points, cap_mb=args.cap_mb,
                                 cap_points=args.cap_points), "", *ratios(rows), "", *sections]
    text = "\n".join(sections)
    print(text)
    write_results("capsules", [*rows, *runs], text, out_dir=args.results,
                  command=_command(),
                  notes="Times and memory: one CPU process on a shared machine; the paper's are GPU numbers.")
    if args.out:
        write_records({args.out: json.dumps({"cost": rows, "runs": runs}, indent=1)},
                      measured=len(rows) + len(runs), what="bench capsules")
    return 0


def _command() -> str:
    """The command line that ran this benchmark (for the results file)."""
    argv = sys.argv[1:]
    tail = argv[argv.index("capsules") + 1:] if "capsules" in argv else []
    return " ".join(["pointabstract bench capsules", *tail])


def _training_sections(runs, variants, *, data, steps, points, probe) -> list[str]:
    from .capsule_training import capsule_part_table
    from .seeds import beyond_spread, summarise
    from .seeds import format_table as seed_table

    cols = ["cd_e3", "fscore", "purity", "train_s"] + (["probe_acc"] if probe[0] > 0 else [])
    labels = {"cd_e3": "test CD x 1e-3", "fscore": "F-score@0.05", "purity": "capsule part purity",
              "train_s": "train s", "probe_acc": "linear probe acc"}
    summary = summarise(runs, cols)
    out = [f"## Training: {steps} steps of 8 clouds x {points} points, Adam 1e-3, on {data}", "",
           "Test Chamfer (squared L2, mean per direction, summed) on all test shapes, BatchNorm statistics "
           "recomputed at the final weights (the reconstruction task's evaluation); "
           f"probe: linear SVM (squared hinge, C = 1, one-vs-rest) on the flattened latent capsules of "
           f"{probe[0]} classification train shapes, accuracy on {probe[1]} test shapes.", ""]
    for caps in sorted({v.split("/")[0] for v in variants}, key=int):
        mine = [s for s in summary if s["variant"].split("/")[0] == caps]
        out += [seed_table(mine, cols, labels=labels, reference=f"{caps}/dynamic", key="cd_e3"), ""]
        ref = next((s for s in mine if s["variant"] == f"{caps}/dynamic"), None)
        for s in mine:
            if ref is None or s is ref:
                continue
            for col in cols:
                if col != "train_s" and beyond_spread(s[col], ref[col]):
                    out.append(f"- {s['variant']} vs {caps}/dynamic: {labels[col]} differs beyond the "
                               "seed spread")
        out.append("")
    for variant in variants:
        first = next(r for r in runs if r["variant"] == variant)
        parts = first["category_parts"]
        out += [f"### Capsules of {variant} (seed {first['seed']}): share of each capsule's decoded points "
                f"in each part, {parts['shapes']} test {parts['category']} shapes", "",
                *capsule_part_table(parts), ""]
    return out
