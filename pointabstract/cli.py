"""The ``pointabstract`` command line: parse, build, run (logic lives in the library)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

DEFAULT_REALDATA = Path(__file__).resolve().parents[2] / "shared" / "realdata"


def _bench_ops(args: argparse.Namespace) -> int:
    import torch

    from .bench import ops as bench

    if args.threads:
        torch.set_num_threads(args.threads)
    realdata = args.realdata if args.realdata.is_dir() else None
    env = bench.environment(args.device)
    print(f"# ops benchmark ({env})", flush=True)
    rows = bench.run(quick=args.quick, repeats=args.repeats, realdata=realdata, device=args.device,
                     progress=lambda s: print(s, flush=True))
    table = bench.format_table(rows)
    worst = bench.slowest_peer_ratio(rows)
    summary = ("no peer was faster on any workload" if worst is not None and worst >= 1.0
               else f"a peer was faster somewhere (lowest peer / ours ratio {worst:.2f})"
               if worst is not None else "no peer importable")
    print("\n" + table + "\n\n" + summary)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        command = ("pointabstract bench ops" + (" --quick" if args.quick else "")
                   + (f" --device {args.device}" if args.device != "cpu" else ""))
        args.out.write_text(f"# Ops benchmark\n\n`{command}` on {env}; medians of "
                            f"{args.repeats} runs after a warm-up, in milliseconds.\n\n"
                            f"{table}\n\n{summary}\n")
        print(f"wrote {args.out}")
    return 0


def _train(args: argparse.Namespace) -> int:
    from .engine import load_config, train
    from .engine.classification import MissingDatasetError

    try:
        cfg = load_config(args.config, args.overrides)
        metrics = train(cfg, resume=args.resume)
    except (MissingDatasetError, FileNotFoundError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if metrics:
        print(f"test overall accuracy {metrics['overall_accuracy']:.4f}, mean class accuracy "
              f"{metrics['mean_class_accuracy']:.4f}; outputs in {cfg.log.out_dir}")
    return 0


def _eval(args: argparse.Namespace) -> int:
    from .engine import evaluate_checkpoint
    from .engine.classification import MissingDatasetError

    try:
        metrics = evaluate_checkpoint(args.checkpoint, data_root=args.data, out_dir=args.out,
                                      votes=args.votes, device=args.device,
                                      neighbourhoods=args.neighbourhoods)
    except (MissingDatasetError, FileNotFoundError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    out = args.out or Path(args.checkpoint).parent
    print(f"overall accuracy {metrics['overall_accuracy']:.4f}, mean class accuracy "
          f"{metrics['mean_class_accuracy']:.4f}; report in {Path(out) / 'report.md'}")
    return 0


def _bench_models(args: argparse.Namespace) -> int:
    from .bench import models as bench

    cost = bench.model_cost("centroid_transformer", n=1024)
    paper = bench.PAPER_COST
    text = [f"## Size\n\ncentroid_transformer at the paper's widths, N = 1024, 40 classes: "
            f"{cost['params_m']:.2f} M parameters, {cost['gmacs']:.2f} GMACs per cloud "
            f"(paper: {paper['params_m']} M, {paper['gmacs']} GMACs)"]
    print(text[0], flush=True)
    if not args.table3_only:
        rows = bench.scaling(tuple(args.points), batch=args.batch, repeats=args.repeats)
        text.append("## Scaling: centroid transformer vs full self-attention\n\n"
                    + bench.format_scaling(rows, batch=args.batch))
    if args.table3 or args.table3_only:
        rows = bench.ablation_table(args.preset, overrides=args.overrides)
        lines = ["| downsampling | test overall accuracy | mean class accuracy | train samples/s |",
                 "|---|---:|---:|---:|"]
        lines += [f"| {r['model']} | {r['overall_accuracy']:.4f} | {r['mean_class_accuracy']:.4f} | "
                  f"{r['samples_per_s']:.0f} |" for r in rows]
        text.append(f"## Table 3 on preset '{args.preset}' {' '.join(args.overrides)}\n\n" + "\n".join(lines))
    report = "\n\n".join(text)
    print("\n" + report)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        command = "pointabstract " + " ".join(sys.argv[1:])
        args.out.write_text(f"# Model benchmarks\n\n`{command}`\n\n{report}\n")
    return 0


def _bench_data(args: argparse.Namespace) -> int:
    from .bench import data as bench

    return bench.main(args, command="pointabstract bench data")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pointabstract",
        description="Point-cloud abstractions: datasets, training, evaluation, viewer, benchmarks.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    train = sub.add_parser("train", help="train a model from a preset and key=value overrides")
    train.add_argument("config", help="preset name (e.g. demo) or YAML file")
    train.add_argument("overrides", nargs="*", metavar="key=value",
                       help="config overrides, e.g. optim.lr=3e-4 model.k=16")
    train.add_argument("--resume", action="store_true", help="continue from <log.out_dir>/last.pt")
    train.set_defaults(func=_train)

    ev = sub.add_parser("eval", help="evaluate a checkpoint; writes metrics.json and report.md")
    ev.add_argument("checkpoint", type=Path)
    ev.add_argument("--data", help="dataset root (default: the one it was trained on)")
    ev.add_argument("--out", type=Path, help="report folder (default: beside the checkpoint)")
    ev.add_argument("--votes", type=int, help="average over this many augmented copies")
    ev.add_argument("--device", default="cpu")
    ev.add_argument("--neighbourhoods", action="store_true",
                    help="add the feature-space vs 3D KNN figure (neighbourhoods.png) to the report")
    ev.set_defaults(func=_eval)

    bench = sub.add_parser("bench", help="benchmarks printed as tables")
    bench_sub = bench.add_subparsers(dest="what", required=True, metavar="WHAT")
    ops = bench_sub.add_parser("ops", help="FPS / KNN / Chamfer against every importable peer")
    ops.add_argument("--quick", action="store_true",
                     help="fewer workloads (no 100k-point clouds) for a short run")
    ops.add_argument("--repeats", type=int, default=5, help="timed runs per entry (median)")
    ops.add_argument("--threads", type=int, default=0, help="torch threads (default: torch's)")
    ops.add_argument("--realdata", type=Path, default=DEFAULT_REALDATA,
                     help="folder with scenes/*_xyzrgb.npy for the real-scene rows")
    ops.add_argument("--device", default="cpu",
                     help="cpu, or cuda: the same workloads on the GPU against peers that take CUDA tensors")
    ops.add_argument("--out", type=Path, help="also write the table to this markdown file")
    ops.set_defaults(func=_bench_ops)

    models = bench_sub.add_parser("models", help="centroid vs full attention scaling; Table 3")
    models.add_argument("--points", type=int, nargs="+", default=[512, 1024, 2048, 4096])
    models.add_argument("--batch", type=int, default=8, help="clouds per batch in the scaling runs")
    models.add_argument("--repeats", type=int, default=3)
    models.add_argument("--table3", action="store_true",
                        help="also train the downsampling variants (minutes each)")
    models.add_argument("--table3-only", action="store_true", help="skip the scaling runs")
    models.add_argument("--preset", default="demo", help="training preset of the Table 3 runs")
    models.add_argument("overrides", nargs="*", metavar="key=value", help="Table 3 config overrides")
    models.add_argument("--out", type=Path, help="also write the tables to this markdown file")
    models.set_defaults(func=_bench_models)

    from .bench import data as bench_data

    data = bench_sub.add_parser("data", help="samples/s through a DataLoader per layout")
    bench_data.add_arguments(data)
    data.set_defaults(func=_bench_data)

    from .data.cli import add_parser as add_data_parser
    from .viz.cli import add_parser as add_view_parser

    add_data_parser(sub)
    add_view_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
