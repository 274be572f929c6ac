"""The ``pointabstract`` command line: parse, build, run (logic lives in the library)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _train(args: argparse.Namespace) -> int:
    from .engine import MissingDatasetError, load_config, task_class, train

    try:
        cfg = load_config(args.config, args.overrides)
        metrics = train(cfg, resume=args.resume)
    except (MissingDatasetError, FileNotFoundError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if metrics:
        print(f"{task_class(cfg.task)(cfg).summary(metrics)}; outputs in {cfg.log.out_dir}")
    return 0


def _eval(args: argparse.Namespace) -> int:
    from .engine import MissingDatasetError, default_eval_dir, evaluate_checkpoint, load_config, task_class

    sections = []
    if args.neighbourhoods:
        sections.append(_neighbourhood_section)
    try:
        metrics = evaluate_checkpoint(args.checkpoint, data_root=args.data, out_dir=args.out,
                                      votes=args.votes, device=args.device, sections=sections)
        cfg = load_config(None, {"model": metrics["model"], "task": metrics["task"]})
    except (MissingDatasetError, FileNotFoundError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    out = args.out or default_eval_dir(args.checkpoint)
    print(f"{task_class(cfg.task)(cfg).summary(metrics)}; report in {Path(out) / 'report.md'}")
    return 0


def _neighbourhood_section(run, out: Path) -> tuple[str, dict]:
    """The viewer's feature-space vs 3D neighbourhood figure and the part-agreement numbers
    (metrics ``part_agreement``) as an eval report section."""
    from .viz import RenderError, neighbourhood_report

    try:
        nb = neighbourhood_report(run.path, out, data_root=run.config.data.root, device=str(run.device))
        return nb.markdown, nb.metrics
    except RenderError as err:  # a machine without offscreen rendering: report, don't fail
        first = str(err).splitlines()[0]
        print(f"warning: no neighbourhood figure ({first})")
        return f"_No neighbourhood figure: {first}_", {}


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
    ev.add_argument("--out", type=Path,
                    help="report folder (default: <run>/eval_<checkpoint name>/, never the run's own report)")
    ev.add_argument("--votes", type=int,
                    help="classification: average over this many augmented copies "
                         "(default: the run's task.votes)")
    ev.add_argument("--device", default="cpu")
    ev.add_argument("--neighbourhoods", action="store_true",
                    help="add the feature-space vs 3D KNN figure (neighbourhoods.png) to the report")
    ev.set_defaults(func=_eval)

    bench = sub.add_parser("bench", help="benchmarks printed as tables")
    bench_sub = bench.add_subparsers(dest="what", required=True, metavar="WHAT")
    from .bench import BENCHES, bench_module

    for name in BENCHES:
        module = bench_module(name)
        doc = (module.main.__doc__ or module.__doc__ or name).strip().splitlines()[0]
        sub_parser = bench_sub.add_parser(name, help=doc, description=doc)
        module.add_arguments(sub_parser)
        sub_parser.set_defaults(func=module.main)

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
