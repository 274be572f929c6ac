"""``pointabstract view``: the viewer on a checkpoint (window, ``--png`` or ``--figure``).

What is shown depends on the checkpoint's task: a classification run shows feature-space vs 3D
neighbourhoods (:class:`~pointabstract.viz.classification.app.ViewerState`), a capsule autoencoder
(``reconstruction``) its input, reconstruction and latent capsules
(:class:`~pointabstract.viz.capsules.app.CapsuleViewerState`), a part segmenter true vs predicted
parts and its tree's clusters (:class:`~pointabstract.viz.segmentation.app.SegViewerState`). The
per-task pieces are looked up by the run's task in :mod:`.tasks`: the session (``SESSIONS``), the
window's state (``STATES``), the ``--figure`` writer (:data:`FIGURES`), the ``--png`` writer where
it is not the default titled panels (:data:`PNGS`) and the options only that task's runs take
(:data:`OPTIONS`). ``--context-pool BLOCK`` is a view of its own on any ContextPool model.

Wired into the main CLI with ``add_parser(subparsers)``; also runnable on its own as
``python -m pointabstract.viz.cli CHECKPOINT ...`` (what ``viz/viewer.py`` calls).
Errors (bad checkpoint, index or block out of range, a model without per-block features, an
option of another task, no display and no ``--png``) print one ``error:`` line and return exit
code 2.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path

from .._log import cli_notes
from .tasks import FIGURES, OPTIONS, PNGS

__all__ = ["FIGURES", "OPTIONS", "PNGS", "add_arguments", "add_parser", "build_parser", "main", "run",
           "show_state"]

DESCRIPTION = textwrap.fill(
    "Show what a trained model groups together. Classification checkpoints: a query point's K nearest "
    "neighbours in a block's feature space next to its K nearest neighbours in 3D space. Capsule-autoencoder "
    "checkpoints (task reconstruction): the input next to its reconstruction, with the points one latent "
    "capsule decodes highlighted (the rest grey), every capsule in its own colour, or the capsules grouped "
    "by majority part (part-labelled data). Part-segmentation checkpoints: true vs predicted parts (wrong "
    "points black) and the tree's clusters at one level ([ / ] or --level).", 88)
EPILOG = """examples:
  pointabstract view runs/demo/parts/last.pt --level 3 --png parts.png  true | predicted parts | tree level 3
  pointabstract view runs/demo/last.pt --index 3 --png view.png         neighbourhoods of a classifier
  pointabstract view runs/ae_ca/last.pt                                 window: N / B cycle the capsules
  pointabstract view runs/demo/last.pt --html viewer.html               the same in a browser, 16 shapes
  pointabstract view runs/demo/last.pt --input chair.ply --png chair.png  a file of your own instead
  pointabstract view runs/ae_ca/last.pt --capsule 2 --png caps.png      input | reconstruction, capsule 2
  pointabstract view runs/ae_ca/last.pt --color parts --png parts.png   capsules by majority part
  pointabstract view runs/ae_dr/last.pt --compare runs/ae_ca/last.pt --figure fig5.png
      Fig. 5 (a) / (b): both autoencoders on the same 3 shapes from --index, one row per checkpoint
"""

def add_arguments(parser: argparse.ArgumentParser) -> None:
    from .capsules import app as capsule_app
    from .capsules import scenes as capsule_scenes
    from .classification.app import COLORINGS, KEYMAP
    from .classification.scenes import LAYOUTS
    from .segmentation import app as segmentation_app
    from .segmentation import scenes as segmentation_scenes

    parser.add_argument("checkpoint", type=Path, help="a trainer checkpoint (last.pt / best.pt)")
    parser.add_argument("--data", type=Path, help="dataset root (default: the one it was trained on)")
    parser.add_argument("--split", default="test", help="dataset split (default: test)")
    parser.add_argument("--index", type=int, default=0, help="sample of the split (default: 0)")
    parser.add_argument("--input", type=Path, metavar="FILE",
                        help="show a shape file instead of a dataset sample (any format of docs/predict.md, "
                             "read and prepared as pointabstract predict does): window, --png or --html")
    parser.add_argument("--up", help="with --input: the file's up axis, y (default) or z (turned to y up)")
    parser.add_argument("--color", help=f"colouring; classification: {', '.join(COLORINGS)} (default "
                                         f"{COLORINGS[0]}); autoencoder: "
                                         f"{', '.join(capsule_scenes.COLORINGS)} (default capsule)")
    parser.add_argument("--layout", help=f"panels shown; classification: {', '.join(LAYOUTS)}; autoencoder: "
                                         f"{', '.join(capsule_scenes.LAYOUTS)} (default side_by_side); part "
                                         f"segmentation: {', '.join(segmentation_scenes.LAYOUTS)} "
                                         "(default all)")
    parser.add_argument("--png", type=Path, metavar="OUT",
                        help="render the scene offscreen to this PNG instead of opening a window: each "
                             "panel titled (what it shows, what its colours mean; under about 245 "
                             "pixels high: the panels alone)")
    parser.add_argument("--html", type=Path, metavar="OUT",
                        help="write one self-contained interactive HTML page instead (opens offline in any "
                             "browser): --samples shapes from --index, every block / capsule / tree level "
                             "selectable, a click picks the query point (classification) or the capsule")
    parser.add_argument("--samples", type=int, default=16,
                        help="with --html: shapes in the page's shape selector (default: 16)")
    parser.add_argument("--figure", type=Path, metavar="OUT",
                        help="write the report figure instead, 3 samples from --index on: classification: "
                             "3 query points each, feature-space vs 3D-space panels; autoencoder: the input, "
                             "all capsules, capsules by part, then one panel per capsule (Centroid "
                             "Transformers Fig. 5); part segmentation: true | predicted parts | tree levels")
    cls = parser.add_argument_group("classification checkpoints")
    cls.add_argument("--block", type=int, help="block whose features are used (default: the second "
                                               "centroid-attention block, as in the paper)")
    cls.add_argument("--k", type=int, help="neighbours per space (default: the paper's K = 40 among "
                                           "128 points, in proportion for smaller blocks)")
    cls.add_argument("--query", type=int, help="query point index in the block (default: a spread-out "
                                               "first choice)")
    ae = parser.add_argument_group("capsule-autoencoder checkpoints (task reconstruction)")
    ae.add_argument("--capsule", type=int,
                    help="the latent capsule highlighted in the window / --png (default: the first of the "
                         "capsules grouped by majority part)")
    ae.add_argument("--compare", type=Path, metavar="CKPT",
                    help="with --figure: a second autoencoder checkpoint (e.g. dynamic routing vs centroid "
                         "attention) reconstructing the same shapes, one row per checkpoint")
    seg = parser.add_argument_group("part-segmentation checkpoints")
    seg.add_argument("--category", help="with --input: the file's ShapeNetPart category (default: the synset "
                                        "folder it lies in)")
    seg.add_argument("--level", type=int, help="the tree level whose clusters are shown (1: smallest groups; "
                                               "default: two below the root; window: [ / ])")
    parser.add_argument("--width", type=int, default=1280, help="window / PNG width in pixels")
    parser.add_argument("--height", type=int, default=720, help="window / PNG height in pixels")
    parser.add_argument("--keys", metavar="KEYS",
                        help=f"scripted run: press these space-separated keys one per frame, then close "
                             f"the window (classification: {' '.join(KEYMAP)}; autoencoder: "
                             f"{' '.join(capsule_app.KEYMAP)}; part segmentation: "
                             f"{' '.join(segmentation_app.SEG_KEYMAP)})")
    parser.add_argument("--overwrite", action="store_true", help="let --png/--html/--figure replace any file")
    parser.add_argument("--screenshot-dir", type=Path, default=Path("."), help="where S saves screenshots")
    parser.add_argument("--device", default="cpu", help="torch device of the model")
    parser.add_argument("--context-pool", type=int, metavar="BLOCK", dest="context_pool",
                        help="instead: colour the points of ContextPool BLOCK (model.context_pool=true) by "
                             "pooling weight and support size")


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add the ``view`` subcommand to the main CLI's subparsers (``func`` = :func:`run`)."""
    parser = subparsers.add_parser("view", help="viewer: feature-space vs 3D neighbourhoods of a classifier, "
                                                "the capsules of an autoencoder, the parts of a segmenter",
                                   description=DESCRIPTION, epilog=EPILOG,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    parser.set_defaults(func=run)
    return parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pointabstract view", description=DESCRIPTION, epilog=EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    return parser


def run(args: argparse.Namespace) -> int:
    """Load the checkpoint, then show the window or write the PNG / figure. Returns the exit code."""
    from ..engine import MissingDatasetError
    from .core.outputs import check_outputs
    from .core.render import RenderError
    from .core.window import NO_DISPLAY, NoDisplayError, has_display
    from .tasks import STATES, viewer_state

    keys = args.keys.split() if args.keys is not None else None
    try:
        known = {k for state in STATES.values() for k in state.KEYMAP}
        unknown = [k for k in keys or [] if k not in known]
        if unknown:
            raise ValueError(f"keys {unknown} are not in the key map {sorted(known)}")
        _check_input(args)
        if args.compare is not None and args.figure is None:
            raise ValueError("--compare needs --figure OUT.png (the figure of both checkpoints)")
        outputs = {f"--{o}": getattr(args, o) for o in ("html", "figure", "png")}  # checked before any work
        for path in check_outputs(outputs, overwrite=args.overwrite):
            print(f"replacing {path}, a file pointabstract view did not write (--overwrite)")
        if args.html is not None:
            return _html(args)
        if args.figure is not None:
            return _figure(args)
        if args.context_pool is not None:
            return _context_pool(args)
        if args.png is None and not has_display():  # say so before spending time on loading
            raise NoDisplayError(NO_DISPLAY)
        session = _session(args)
        _check_options(args, session.config.task)
        state = viewer_state(session, args)
        unknown = [k for k in keys or [] if k not in state.KEYMAP]
        if unknown:
            raise ValueError(f"keys {unknown} are not in the key map of a {session.config.task} run "
                             f"{list(state.KEYMAP)}")
        return show_state(state, args, keys, PNGS.get(session.config.task, _panels_png))
    except (MissingDatasetError, FileNotFoundError, ValueError, RenderError, NoDisplayError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


def _session(args: argparse.Namespace):
    """The session of ``args``: a dataset split (``--data``, ``--split``), or one file (``--input``)."""
    from .tasks import load_input_session, load_session

    if args.input is None:
        return load_session(args.checkpoint, data_root=args.data, split=args.split, device=args.device)
    return load_input_session(args.checkpoint, args.input, device=args.device, category=args.category,
                              up=args.up or "y")


def _check_input(args: argparse.Namespace) -> None:
    """``--input`` shows one file in the window, ``--png`` or ``--html``: refuse the dataset options
    and the views of several samples beside it; ``--category`` needs it."""
    if args.input is None:
        if args.category is not None:
            raise ValueError("--category applies with --input FILE (a dataset sample has its category)")
        if args.up is not None:
            raise ValueError("--up applies with --input FILE (a dataset sample is in the model's frame)")
        return
    names = ("data", "figure", "compare", "context_pool")
    given = [f"--{n.replace('_', '-')}" for n in names if getattr(args, n) is not None]
    given += ["--split"] if args.split != "test" else []
    given += ["--index"] if args.index != 0 else []
    if given:
        raise ValueError(f"--input shows one file in the window, --png or --html; drop {' and '.join(given)}")


def _panels_png(state, path: Path, *, width: int, height: int) -> Path:
    """The state's panels drawn separately, each under its title, the sample's title beside them,
    ``"<model> (<checkpoint>)"`` above (:func:`~.figure_compose.titled_panels_png`)."""
    from .core.figure_compose import titled_panels_png
    from .core.panel_titles import figure_title

    scenes = state.panel_scenes()
    return titled_panels_png([s.geometries for s in scenes], state.panel_titles(), path, width=width,
                             height=height, row_label=state.sample.title, title=figure_title(state.session),
                             camera=state.panel_camera(), legend=scenes[0].legend)


def show_state(state, args: argparse.Namespace, keys: list[str] | None, render_png) -> int:
    """The last step of every task's view: ``--png`` through ``render_png(state, path, width=,
    height=)``, else the window (scripted when ``keys`` is given). Errors propagate to the caller,
    which turns the user's ones into one ``error:`` line."""
    from .core.render import png_backend
    from .core.window import run_viewer

    if args.png is not None:
        out = render_png(state, args.png, width=args.width, height=args.height)
        print(state.status())
        print(f"wrote {out} (drawn by the {png_backend(out)} renderer)")
        return 0
    saved = run_viewer(state, keys=keys, screenshot_dir=args.screenshot_dir, width=args.width,
                       height=args.height)
    if keys is not None:
        print(f"scripted run done ({len(keys)} keys, {len(saved)} screenshots)")
    return 0


def _check_options(args: argparse.Namespace, task: str) -> None:
    """Refuse an option that only another task's runs take (:data:`OPTIONS`)."""
    own = OPTIONS.get(task, ())
    for other, names in OPTIONS.items():
        for name in names:
            if name not in own and getattr(args, name, None) is not None:
                raise ValueError(f"--{name} applies to {other} checkpoints; {args.checkpoint} is a "
                                 f"'{task}' run")


def _figure(args: argparse.Namespace) -> int:
    from .tasks import load_session

    session = load_session(args.checkpoint, data_root=args.data, split=args.split, device=args.device)
    task = session.config.task
    _check_options(args, task)
    if task not in FIGURES:
        raise ValueError(f"--figure shows {' and '.join(FIGURES)} runs; {args.checkpoint} is a '{task}' run")
    indices = [i for i in range(args.index, args.index + 3) if i < len(session)] or [args.index]
    out = FIGURES[task](session, args, indices)
    print(f"wrote {out}")
    return 0


def _html(args: argparse.Namespace) -> int:
    """``--html OUT``: the task's browser page (:data:`~.tasks.HTMLS`), the path checked first."""
    from .tasks import write_html

    others = [f"--{name.replace('_', '-')}" for name in ("png", "figure", "keys", "context_pool", "compare")
              if getattr(args, name, None) is not None]
    if others:
        raise ValueError(f"--html writes the page alone; drop {' and '.join(others)}")
    session = _session(args)
    _check_options(args, session.config.task)
    out = write_html(session, args.html, args=args, index=args.index, samples=args.samples)
    size = out.stat().st_size / 1e6
    print(f"wrote {out} ({size:.1f} MB, self-contained: open it in a browser, no network needed)")
    return 0


def _context_pool(args: argparse.Namespace) -> int:
    from .context_pool_view import context_pool_png, context_pool_view, show_context_pool
    from .core.window import NO_DISPLAY, NoDisplayError, has_display

    if args.png is None and not has_display():
        raise NoDisplayError(NO_DISPLAY)
    view = context_pool_view(args.checkpoint, block=args.context_pool, index=args.index, split=args.split,
                             data_root=args.data, device=args.device)
    if args.png is None:
        show_context_pool(view, width=args.width, height=args.height)
        return 0
    out = context_pool_png(view, args.png, width=args.width, height=args.height)
    print(f"wrote {out}: ContextPool {view.block}, {len(view.pos)} points, weight | size")
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python viz/viewer.py ...``: :func:`run`, with the library's notes printed as by ``pointabstract``."""
    with cli_notes():
        return run(build_parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
