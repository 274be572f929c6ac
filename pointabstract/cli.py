"""The ``pointabstract`` command line: parse, build, run (logic lives in the library).

User errors (a bad value, a missing or unreadable file, an output folder that cannot be
written, a dataset layout not found, a run that diverged) end with one ``error: ...`` line on
stderr and exit code 2, also when they were raised in a worker process. Any other exception is
a bug and keeps its traceback; ``POINTABSTRACT_DEBUG=1`` shows the traceback of user errors too.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import signal
import sys
from pathlib import Path

from ._log import cli_notes

# what a user can cause and fix: bad values / types (validation), files and folders (OSError
# covers FileNotFoundError, PermissionError, NotADirectoryError, IsADirectoryError, h5py's
# unreadable files; MissingDatasetError and LayoutNotFoundError are among them)
USER_ERRORS = (ValueError, TypeError, OSError)


class Terminated(KeyboardInterrupt):
    """SIGTERM (a job scheduler ending the job), handled like Ctrl-C."""


def _terminate(signum, frame) -> None:
    raise Terminated()


def _train(args: argparse.Namespace) -> int:
    from .engine import load_config, task_class, train

    if args.resume and args.overwrite:
        raise ValueError("--resume continues the run in log.out_dir and --overwrite replaces it: give one")
    cfg = load_config(args.config, args.overrides)
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        metrics = train(cfg, resume=args.resume, allow_config_change=args.allow_config_change,
                        overwrite=args.overwrite)
    except KeyboardInterrupt as err:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second signal must not cut the line below short
        if int(os.environ.get("RANK", "0")) == 0:
            said = _interrupted(args, cfg.log.out_dir, isinstance(err, Terminated))
            print(said, file=sys.stderr, flush=True)
        return 143 if isinstance(err, Terminated) else 130
    except RuntimeError as err:
        if not _peer_failed(err):
            raise
        # torchrun ends the other processes with SIGTERM: one arriving now must not cut this line short
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        rank = int(os.environ.get("RANK", "0"))
        kept = _interrupted(args, cfg.log.out_dir, False).split(": ", 1)[1] if rank == 0 else ""
        kept = f"; {kept}" if kept else ""
        print(f"error: process {rank} stopped because another training process failed or was killed (its "
              f"error, if it could print one, is above, or in its own node's output){kept}", file=sys.stderr,
              flush=True)
        return 2
    finally:
        signal.signal(signal.SIGTERM, previous)
    if metrics and int(os.environ.get("RANK", "0")) == 0:  # under torchrun: rank 0 only
        print(f"{task_class(cfg.task).summary(metrics)}; outputs in {cfg.log.out_dir}")
    return 0


# how a collective call reports that another process of the run is gone (gloo's TCP pairs, NCCL)
_PEER_GONE = ("Connection closed by peer", "Connection reset by peer", "Broken pipe", "remote process exited",
              "communicator was aborted")


def _peer_failed(err: RuntimeError) -> bool:
    """Whether ``err`` is a collective call failing because another process of a DDP run ended."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return False
    return any(marker in str(err) for marker in _PEER_GONE)


def _interrupted(args: argparse.Namespace, out_dir: str, terminated: bool) -> str:
    """What an interrupted training kept and the command that continues it (one line)."""
    from .engine import load_checkpoint

    how = "terminated (SIGTERM)" if terminated else "interrupted"
    last = Path(out_dir) / "last.pt"
    command = " ".join(shlex.quote(str(w)) for w in ["pointabstract", "train", args.config, *args.overrides])
    try:
        epoch = load_checkpoint(last)["epoch"]
    except (OSError, ValueError):
        return f"{how}: no checkpoint was written yet in {out_dir}; start again with: {command}"
    flags = " --resume" + (" --allow-config-change" if args.allow_config_change else "")
    return f"{how}: {last} (epoch {epoch}) is kept; continue with: {command}{flags}"


def _eval(args: argparse.Namespace) -> int:
    from .engine import default_eval_dir, evaluate_checkpoint, task_class

    # the figure sections the viewer draws, by name: each run's task says which of them its report
    # carries (engine/tasks/base.py::Task.figures); the neighbourhood figure only when asked for
    found: dict = {}  # the neighbourhood section's metrics, shown again by the page
    shared = _SharedSession()  # the capsule figure and the page score the retrieval pool once
    sections = {"capsules": lambda run, out: _capsule_section(run, out, shared),
                "segmentation": _segmentation_section,
                "neighbourhoods": lambda run, out: _kept(_neighbourhood_section(run, out), found),
                "viewer": lambda run, out: _render_section(
                    "browser viewer", lambda r, o: _viewer_section(r, o, found.get(AGREEMENT), shared),
                    run, out)}
    if not args.neighbourhoods:
        del sections["neighbourhoods"]
    metrics = evaluate_checkpoint(args.checkpoint, data_root=args.data, out_dir=args.out, votes=args.votes,
                                  device=args.device, sections=sections,
                                  asked=["neighbourhoods"] if args.neighbourhoods else [])
    out = args.out or default_eval_dir(args.checkpoint)
    print(f"{task_class(metrics['task']).summary(metrics)}; report in {Path(out) / 'report.md'}")
    return 0


def _export(args: argparse.Namespace) -> int:
    from .engine.pretrained import check_export_target, tensor_summary
    from .predict import load_trained

    check_export_target(args.out, args.overwrite)  # before the checkpoint is read
    trained = load_trained(args.checkpoint)
    out = trained.save_pretrained(args.out, overwrite=args.overwrite)
    print(f"exported '{trained.config.model}' ({trained.config.task}, "
          f"{tensor_summary(trained.model.state_dict())}) to {out}/config.json + model.safetensors; "
          f"predict, view and eval take {out} as they take a checkpoint")
    return 0


_NO_CAPSULES = "_No {what}: {model} is a plain autoencoder with no capsules to show._"
AGREEMENT = "part_agreement_training_points"  # the neighbourhood metrics the viewer page shows again


def _kept(section: tuple[str, dict], found: dict) -> tuple[str, dict]:
    found.update(section[1])
    return section


class _SharedSession:
    """One eval's viewer session of its run, built on first use: the capsule figure's caption and
    the browser page then share its pool scores (``CapsuleSession.pool_scores``, computed once)
    instead of each scoring the 64-shape retrieval pool again."""

    def __init__(self):
        self._run, self._session = None, None

    def __call__(self, run):
        from .viz.tasks import SESSIONS

        if self._run is not run:
            self._run, self._session = run, SESSIONS[run.config.task](run)
        return self._session


def _viewer_section(run, out: Path, agreement: dict | None = None,
                    session: _SharedSession | None = None) -> tuple[str, dict]:
    """The browser viewer (viewer.html beside report.md: 16 test shapes, every task) and the
    report's link to it. ``session`` builds (or hands back) the run's viewer session."""
    from .viz.tasks import PAGE_HELP, SESSIONS, write_html

    if run.config.task not in SESSIONS:
        return "", {}
    if not getattr(run.model, "has_capsules", True):  # the reconstruction viewer shows capsules
        return _NO_CAPSULES.format(what="viewer page", model=run.config.model), {}
    page = write_html((session or _SharedSession())(run), out / "viewer.html", agreement=agreement)
    size = page.stat().st_size / 1e6
    what = PAGE_HELP[run.config.task]
    return ("## Interactive viewer\n\n"
            f"[viewer.html]({page.name}) ({size:.1f} MB, one self-contained file: opens offline in any "
            f"browser): {what}. Other shapes or options: `pointabstract view {run.path} --html OUT.html` "
            "(docs/browser_viewer.md)."), {}


def _render_section(what: str, build, run, out: Path) -> tuple[str, dict]:
    """``build(run, out)`` (a viz figure section of the eval report), or one line saying why not
    when this machine has no working offscreen renderer or no open3d (the figures' scenes are
    open3d geometry; eval itself needs only the train extra): report, don't fail."""
    from .viz import RenderError

    try:
        return build(run, out)
    except (RenderError, ModuleNotFoundError) as err:
        if isinstance(err, ModuleNotFoundError) and err.name != "open3d":
            raise
        first = str(err).splitlines()[0] if isinstance(err, RenderError) else \
            'open3d is not installed (pip install "pointabstract[viz]")'
        print(f"warning: no {what} ({first})")
        return f"_No {what}: {first}_", {}


def _neighbourhood_section(run, out: Path) -> tuple[str, dict]:
    """The viewer's feature-space vs 3D neighbourhood figure and the part-agreement numbers
    (metrics ``part_agreement``) as an eval report section."""
    from .viz import neighbourhood_report

    def build(run, out):
        nb = neighbourhood_report(run.path, out, data_root=run.config.data.root, device=str(run.device))
        return nb.markdown, nb.metrics

    return _render_section("neighbourhood figure", build, run, out)


def _capsule_section(run, out: Path, session: _SharedSession | None = None) -> tuple[str, dict]:
    """The viewer's capsule figure (capsules.png: the points each latent capsule decodes, as in
    Centroid Transformers Fig. 5) as an eval report section (of the runs whose task names
    ``capsules`` in its ``figures``: reconstruction). ``session``: see :func:`_viewer_section`."""
    from .viz import capsule_section

    if not getattr(run.model, "has_capsules", True):
        return _NO_CAPSULES.format(what="capsule figure", model=run.config.model), {}
    shared = session or _SharedSession()
    return _render_section("capsule figure", lambda r, o: capsule_section(shared(r), o), run, out)


def _segmentation_section(run, out: Path) -> tuple[str, dict]:
    """Renders of true vs predicted parts (wrong points highlighted) and of the tree's clusters as
    an eval report section (of the runs whose task names ``segmentation``: part segmentation)."""
    from .viz.segmentation.figures import segmentation_section

    return _render_section("part-segmentation figure", segmentation_section, run, out)


def _tasks_taking(name: str, declared: str) -> str:
    """The tasks whose ``declared`` attribute (``eval_options`` or ``figures``) names ``name``."""
    from .engine.tasks import TASKS

    return " and ".join(task for task, cls in TASKS.items() if name in getattr(cls, declared))


def _train_choices() -> str:
    """What ``train`` accepts by name, for its ``--help``: the presets and each registry model
    with its one-line description (``ModelSpec.doc``)."""
    from .engine.config import PRESETS
    from .models import MODELS

    width = max(map(len, MODELS)) + 2
    presets = ", ".join(sorted(p.stem for p in PRESETS.glob("*.yaml")))
    models = "\n".join(f"  {name:<{width}}{spec.doc}" for name, spec in MODELS.items())
    return f"presets: {presets}\n\nmodels (a name trains on its task's usual dataset):\n{models}"


class _TrainHelp(argparse.Action):
    """``train --help`` with :func:`_train_choices` below it, read only when asked for (it imports
    the registry and the configs, which commands needing fewer extras must not)."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        parser.epilog = _train_choices()
        parser.print_help()
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pointabstract",
        description="Point-cloud abstractions: datasets, training, evaluation, viewer, benchmarks.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    train = sub.add_parser("train", help="train a model from a preset and key=value overrides",
                           add_help=False, formatter_class=argparse.RawDescriptionHelpFormatter)
    train.add_argument("-h", "--help", action=_TrainHelp, help="show this help message and exit")
    train.add_argument("config", help="preset name (e.g. demo), YAML file, or a model name (e.g. "
                       "capsule_ae_small_ca: its task's usual dataset, outputs in runs/<name>)")
    train.add_argument("overrides", nargs="*", metavar="key=value",
                       help="config overrides, e.g. optim.lr=3e-4 model.k=16")
    train.add_argument("--resume", action="store_true",
                       help="continue from <log.out_dir>/last.pt (or finish a run whose last epoch is done)")
    train.add_argument("--overwrite", action="store_true",
                       help="replace the run already in log.out_dir (its checkpoints, logs and report; says "
                            "what it removes); without it, training into a folder holding a run is refused")
    train.add_argument("--allow-config-change", action="store_true",
                       help="with --resume: accept a config that differs from the checkpoint's "
                            "(recorded in <log.out_dir>/config_changes.yaml)")
    train.set_defaults(func=_train)

    ev = sub.add_parser("eval", help="evaluate a checkpoint; writes metrics.json and report.md")
    ev.add_argument("checkpoint", type=Path)
    ev.add_argument("--data", help="dataset root (default: the one it was trained on)")
    ev.add_argument("--out", type=Path,
                    help="report folder (default: <run>/eval_<checkpoint name>/, never the run's own report)")
    ev.add_argument("--votes", type=int,
                    help=f"{_tasks_taking('votes', 'eval_options')} runs: average over this many augmented "
                         "copies (default: the run's task.votes)")
    ev.add_argument("--device", default="cpu")
    ev.add_argument("--neighbourhoods", action="store_true",
                    help=f"{_tasks_taking('neighbourhoods', 'figures')} runs: add the feature-space vs 3D "
                         "KNN figure (neighbourhoods.png) to the report (autoencoder reports always get the "
                         "capsule figure, capsules.png)")
    ev.set_defaults(func=_eval)

    ex = sub.add_parser("export", help="a checkpoint's model as DIR/config.json + DIR/model.safetensors "
                        "(weights only, no optimiser, no pickle)")
    ex.add_argument("checkpoint", type=Path, help="a trainer checkpoint (last.pt / best.pt)")
    ex.add_argument("out", type=Path, metavar="DIR", help="the folder to write (new or empty)")
    ex.add_argument("--overwrite", action="store_true", help="replace an earlier export in DIR")
    ex.set_defaults(func=_export)

    bench = sub.add_parser("bench", help="benchmarks printed as tables")
    bench_sub = bench.add_subparsers(dest="what", required=True, metavar="WHAT")
    from .bench import BENCHES, bench_module

    for name in BENCHES:
        module = bench_module(name)
        doc = (module.__doc__ or name).strip().splitlines()[0]
        sub_parser = bench_sub.add_parser(name, help=doc, description=doc)
        module.add_arguments(sub_parser)
        sub_parser.set_defaults(func=module.main)

    from .data.cli import add_parser as add_data_parser
    from .predict.cli import add_parser as add_predict_parser
    from .viz.cli import add_parser as add_view_parser

    add_data_parser(sub)
    add_predict_parser(sub)
    add_view_parser(sub)
    return parser


KERNEL_COMMANDS = ("train", "eval", "bench", "view", "predict")  # commands that run the compiled ops


def uncompiled_kernels(modules=None) -> list[str]:
    """Names of the numba kernels (in ``pointabstract.ops.kernels``) that have no entry in
    numba's on-disk cache yet, i.e. will be compiled on first use (seconds each; about 90 s
    in all on a fresh install on 2 busy cores, 3 s when cached)."""
    if modules is None:
        try:
            from .ops.kernels import fps, kdtree, kdtree_build, neighbour_attention, select
        except ImportError:  # numba missing: the ops use other backends
            return []
        modules = (fps, kdtree_build, kdtree, neighbour_attention, select)
    missing, seen = [], set()
    for module in modules:
        for name, fn in vars(module).items():
            index = getattr(getattr(getattr(fn, "_cache", None), "_cache_file", None), "_index_path", None)
            if index is not None and id(fn) not in seen and not fn.signatures and not os.path.exists(index):
                missing.append(f"{module.__name__}.{name}")
            seen.add(id(fn))  # a kernel one module imports from another is named once
    return missing


def _compile_notice(command: str) -> None:
    if command in KERNEL_COMMANDS and int(os.environ.get("RANK", "0")) == 0 and uncompiled_kernels():
        print("compiling pointabstract kernels (once per install, up to a minute or two)...", file=sys.stderr,
              flush=True)


def _one_line(err: BaseException) -> str:
    text = str(err) or type(err).__name__
    text = _worker_message(text)
    if isinstance(err, OSError) and err.filename is not None and str(err.filename) not in text:
        text = f"{text}: {err.filename}"
    return text


# what torch puts before a worker's traceback when a DataLoader re-raises the worker's exception
_WORKER = re.compile(r"Caught (\w+) in DataLoader worker process \d+\.\n"
                     r"Original Traceback \(most recent call last\):\n")


def _worker_message(text: str) -> str:
    """``text`` with each exception a DataLoader re-raised from a worker process (torch: ``Caught
    X in DataLoader worker process N.`` + ``Original Traceback ...``, the worker's traceback
    ending in ``[module.]X: message``) replaced by the worker's own message, also where another
    error's message quotes it; other text unchanged."""
    while (found := _WORKER.search(text)) is not None:
        lines = text[found.end():].split("\n")
        pattern = re.compile(rf"(?:[\w.]+\.)?{re.escape(found.group(1))}(?:: (.*))?")
        frames = [i for i, line in enumerate(lines) if line.startswith('  File "')]
        ends = [i for i, line in enumerate(lines) if pattern.fullmatch(line) and i > max(frames, default=-1)]
        if not ends:
            return text
        message = pattern.fullmatch(lines[ends[0]]).group(1) or found.group(1)
        rest = "\n".join([message, *lines[ends[0] + 1:]]).strip()
        # the traceback ends in a newline: where another message quotes it, its ')' follows
        text = text[:found.start()] + re.sub(r"\n+(?=\))", "", rest, count=1)
    return text


# optional dependencies -> the extra that installs them (pyproject.toml)
OPTIONAL = {"yaml": "train", "matplotlib": "train", "tensorboard": "train", "PIL": "train",
            "h5py": "data", "trimesh": "data", "tqdm": "data", "open3d": "viz",
            "torch_geometric": "pyg", "scipy": "backends", "fpsample": "backends", "pykdtree": "backends"}
# the extras each command needs (pyproject.toml); `train` includes `data`
COMMAND_EXTRAS = {"train": ("train",), "eval": ("train",), "bench": ("train",), "view": ("viz", "train"),
                  "data": ("data",), "predict": ("train",)}
_INCLUDED = {"train": ("train", "data")}


def missing_dependency_message(err: ModuleNotFoundError, argv: list[str]) -> str | None:
    """The ``error:`` line for an optional dependency missing under ``pointabstract <argv>``: the
    command and the extras to install (the command's own, plus the module's extra when they do
    not include it), e.g. ``pip install "pointabstract[train]"``; None for any other module."""
    module = (err.name or "").split(".")[0]
    extra = OPTIONAL.get(module)
    if extra is None:
        return None
    command = next((a for a in argv if not a.startswith("-")), None)
    extras = list(COMMAND_EXTRAS.get(command, ()))
    if not any(extra in _INCLUDED.get(e, (e,)) for e in extras):
        extras.append(extra)
    who = f"pointabstract {command}" if command in COMMAND_EXTRAS else "this command"
    return (f"error: {who} needs {module}, which is not installed (an optional dependency): "
            f'pip install "pointabstract[{",".join(extras)}]"')


def main(argv: list[str] | None = None) -> int:
    """Run one command; user errors and missing optional dependencies are one ``error:`` line. The
    library's notes (``logging``, :mod:`pointabstract._log`) are printed as plain lines meanwhile."""
    try:
        with cli_notes():
            return _main(argv)
    except ModuleNotFoundError as err:
        message = missing_dependency_message(err, sys.argv[1:] if argv is None else argv)
        if message is None:
            raise
        print(message, file=sys.stderr)
        return 2


def _main(argv: list[str] | None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # key=value overrides after an option (train demo --resume optim.lr=1e-3)
        if hasattr(args, "overrides") and all("=" in e and not e.startswith("-") for e in extra):
            args.overrides = [*args.overrides, *extra]
        else:
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
    _compile_notice(args.command)
    try:
        return args.func(args)
    except USER_ERRORS as err:
        if os.environ.get("POINTABSTRACT_DEBUG", "") not in ("", "0"):
            raise
        print(f"error: {_one_line(err)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
