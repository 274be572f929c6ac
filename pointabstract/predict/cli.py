"""``pointabstract predict CHECKPOINT INPUT...``: a trained model on files, folders and globs.

Inputs are read, prepared and predicted in batches of the run's ``data.eval_batch_size``. Each
file gets one line (classification: its row of the table of top-k classes; the others: what was
written), under a progress bar when stderr is a terminal. A file that cannot be used (unreadable,
too few points, no category, ...) is reported on stderr as ``skipped FILE: reason`` and the
others are still predicted and written; the exit code is then 1 (0: every file predicted; 2: a
user error stopped the command, e.g. a bad checkpoint or an option of another task).

It never replaces a file it did not write in this run: when ``--out`` already holds a file this
run would write (an earlier ``predictions.csv``, a ``chair.recon.ply``), the command stops before
reading any input, naming the files; ``--overwrite`` replaces them and says which. A run folder
given as the checkpoint means its ``last.pt`` (said in one line).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .. import _validate as V
from .writers import existing_outputs, output_names, write_classes, write_parts, write_reconstruction

__all__ = ["add_parser", "run"]

USER_ERRORS = (ValueError, TypeError, OSError)
EPILOG = """examples:
  pointabstract predict runs/demo/last.pt chair.ply scans/*.off --top-k 3 --out preds
  pointabstract predict runs/demo/last.pt ModelNet40/chair/test/ --up z   z-up meshes
  pointabstract predict runs/demo/capsules_ca/last.pt mug.obj --out recon --per-capsule
  pointabstract predict runs/demo/parts/last.pt mug.ply --category Mug --out parts
"""


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``predict`` to the main CLI's subparsers (``func`` = :func:`run`)."""
    p = subparsers.add_parser("predict", help="use a trained model on your own files (docs/predict.md)",
                              description="Classify, reconstruct or part-segment shape files with a trained "
                                          "checkpoint; no dataset needed.", epilog=EPILOG,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("checkpoint", type=Path, help="a trainer checkpoint (last.pt / best.pt), or a run folder "
                                                 "(its last.pt)")
    p.add_argument("inputs", nargs="+", metavar="INPUT", help="shape files, folders or globs")
    p.add_argument("--top-k", type=int, dest="top_k",
                   help="classification: classes shown per file (default 5)")
    p.add_argument("--votes", type=int, help="classification / part segmentation: test-time copies averaged, "
                                             "as eval (default: the run's task.votes)")
    p.add_argument("--out", type=Path, help="output folder (classification: predictions.json / .csv, none "
                                            "without it; the others: default ./predictions)")
    p.add_argument("--category", help="part segmentation: the ShapeNetPart category of every input (default: "
                                      "the synset folder a file lies in)")
    p.add_argument("--up", default="y", help="the files' up axis: y (default, as the built-in data) or z "
                                             "(ModelNet's OFF meshes, many scans; turned to y up)")
    p.add_argument("--per-capsule", action="store_true", dest="per_capsule",
                   help="reconstruction: also one PLY per latent capsule")
    p.add_argument("--overwrite", action="store_true",
                   help="replace files of an earlier predict in --out (without it they are refused, "
                        "before any work)")
    p.add_argument("--device", default="cpu", help="torch device (default cpu)")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    """Predict every input file; returns the exit code (module docstring)."""
    from . import load
    from .loading import checkpoint_file

    if args.out is not None and args.out.exists() and not args.out.is_dir():
        raise ValueError(f"--out {args.out} is a file, not a folder")
    from .prepare import UP_ROTATIONS

    V.check_choice("--up", args.up, UP_ROTATIONS, note=" (the files' up axis)")
    checkpoint = checkpoint_file(args.checkpoint)
    if checkpoint != args.checkpoint:
        print(f"{args.checkpoint} is a run folder: using its {checkpoint.name}", file=sys.stderr, flush=True)
    predictor = load(checkpoint, device=args.device)
    predictor.check_options(flags=True, top_k=args.top_k, votes=args.votes, category=args.category,
                            per_capsule=args.per_capsule or None)
    files, skipped = _files(args.inputs)
    out = args.out if args.out is not None or predictor.task == "classification" else Path("predictions")
    names = dict(zip(files, output_names([str(f) for f in files])))
    there = _check_out(out, predictor.task, list(names.values()), args)
    results, written = [], []
    for chunk in _chunks(files, predictor.batch_size, progress=sys.stderr.isatty()):
        prepared = [p for f in chunk if (p := _prepared(predictor, f, args, skipped)) is not None]
        if prepared:
            found = predictor.run(prepared, top_k=args.top_k, votes=args.votes, category=args.category)
            for p, r in zip(prepared, found):
                written += _report(predictor, p, r, out, names[p.cloud.path], args)
                results.append(r)
    if predictor.task == "classification" and out is not None and results:
        tables = write_classes(results, out)
        written += tables
        print(f"wrote {tables[0]} and {tables[1]}")
    replaced = [p for p in there if p in set(written)]
    if replaced:
        print(f"replaced {len(replaced)} file(s) that were in {out} before (--overwrite): "
              f"{', '.join(p.name for p in replaced[:5])}{' ...' if len(replaced) > 5 else ''}")
    return _summary(len(results), skipped)


def _check_out(out: Path | None, task: str, names: list[str], args) -> list[Path]:
    """Create ``out`` (a folder under a file fails here, before any work); ValueError when it holds
    files this run would write and ``--overwrite`` is not given. Returns those files (the ones
    ``--overwrite`` may replace)."""
    if out is None:
        return []
    out.mkdir(parents=True, exist_ok=True)
    there = existing_outputs(out, task, names, per_capsule=args.per_capsule)
    folders = [p for p in there if p.is_dir()]
    if folders:
        raise ValueError(f"--out {out}: {folders[0]} is a folder where this predict writes a file; move it "
                         "or choose another --out")
    if there and not args.overwrite:
        shown = ", ".join(p.name for p in there[:3]) + (" ..." if len(there) > 3 else "")
        raise ValueError(f"--out {out} already holds {len(there)} file(s) this predict would write "
                         f"({shown}): choose another --out, or give --overwrite to replace them")
    return there


def _files(inputs: list[str]) -> tuple[list[Path], list[str]]:
    """The files of each input (file, folder, glob); an input that lists none is a skip."""
    from ..data.files import find_shape_files

    files, skipped = {}, []  # dict: each file once, in order
    for item in inputs:
        try:
            found = find_shape_files([item])
        except USER_ERRORS as err:
            skipped.append(_skip(item, err))
            continue
        if not found:
            skipped.append(_skip(item, "no shape file found"))
        files.update(dict.fromkeys(found))
    return list(files), skipped


def _skip(what, reason) -> str:
    text = " ".join(str(reason).split())
    line = f"skipped {text}" if str(what) in text else f"skipped {what}: {text}"
    print(line, file=sys.stderr, flush=True)
    return line


def _chunks(files: list[Path], size: int, *, progress: bool):
    try:
        from tqdm.auto import tqdm
    except ImportError:  # the core install (no data / train extra): no progress bar
        yield from (files[start:start + size] for start in range(0, len(files), size))
        return
    with tqdm(total=len(files), desc="predict", unit="file", disable=not progress, file=sys.stderr,
              leave=False) as bar:
        for start in range(0, len(files), size):
            yield files[start:start + size]
            bar.update(min(size, len(files) - start))


def _prepared(predictor, path: Path, args, skipped: list[str]):
    """``path`` read and prepared (its category checked for part segmentation), or None after
    reporting why it is skipped."""
    try:
        prepared = predictor.prepare([path], up=args.up)[0]
        if predictor.task == "part_segmentation":
            predictor.category_of(path, str(path), args.category)
        return prepared
    except USER_ERRORS as err:
        skipped.append(_skip(path, err))
        return None


def _report(predictor, prepared, result, out: Path | None, name: str, args) -> list[Path]:
    """Write ``result``'s files and print its line; returns the files written."""
    notes = f"  [{'; '.join(result.notes)}]" if result.notes else ""
    if predictor.task == "classification":
        row = "  ".join(f"{n} {p:.3f}" for n, p in zip(result.names, result.probabilities))
        _print(f"{result.source}: {row}{notes}")
        return []
    if predictor.task == "reconstruction":
        paths = write_reconstruction(result, out, name, per_capsule=args.per_capsule)
        _print(f"{result.source}: Chamfer {result.chamfer * 1e3:.3f} x 1e-3 (unit sphere), wrote {paths[0]}"
               f"{f' and {len(paths) - 1} capsule files' if len(paths) > 1 else ''}{notes}")
    else:
        paths = write_parts(result, out, name, faces=prepared.cloud.faces)
        _print(f"{result.source}: {len(result.labels)} points, {result.category}, wrote {paths[0]} and "
               f"{paths[1].name}{notes}")
    return paths


def _print(line: str) -> None:
    try:
        from tqdm.auto import tqdm
    except ImportError:  # the core install: no bar to print around
        print(line, flush=True)
        return
    tqdm.write(line, file=sys.stdout)


def _summary(done: int, skipped: list[str]) -> int:
    if not skipped:
        return 0
    print(f"error: {len(skipped)} input(s) skipped (listed above), {done} predicted", file=sys.stderr)
    return 1
