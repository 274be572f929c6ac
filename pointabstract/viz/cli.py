"""``pointabstract view``: the neighbourhood viewer on a checkpoint (window, or ``--png``).

Wired into the main CLI with ``add_parser(subparsers)``; also runnable on its own as
``python -m pointabstract.viz.cli CHECKPOINT ...`` (what ``viz/viewer.py`` calls).
Errors (bad checkpoint, index or block out of range, a model without per-block features,
no display and no ``--png``) print one ``error:`` line and return exit code 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = ["add_arguments", "add_parser", "build_parser", "main", "run"]

DESCRIPTION = ("Show what a trained model groups together: a query point's K nearest neighbours in a "
               "block's feature space next to its K nearest neighbours in 3D space.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from .app import COLORINGS, KEYMAP
    from .scenes import LAYOUTS

    parser.add_argument("checkpoint", type=Path, help="a trainer checkpoint (last.pt / best.pt)")
    parser.add_argument("--data", type=Path, help="dataset root (default: the one it was trained on)")
    parser.add_argument("--split", default="test", help="dataset split (default: test)")
    parser.add_argument("--index", type=int, default=0, help="sample of the split (default: 0)")
    parser.add_argument("--block", type=int, help="block whose features are used (default: the second "
                                                  "centroid-attention block, as in the paper)")
    parser.add_argument("--k", type=int, help="neighbours per space (default: the paper's K = 40 among "
                                              "128 points, in proportion for smaller blocks)")
    parser.add_argument("--query", type=int, help="query point index in the block (default: a spread-out "
                                                  "first choice)")
    parser.add_argument("--color", default="neighbours", choices=COLORINGS, help="colouring")
    parser.add_argument("--layout", default="side_by_side", choices=LAYOUTS, help="panels shown")
    parser.add_argument("--png", type=Path, metavar="OUT",
                        help="render the scene offscreen to this PNG instead of opening a window")
    parser.add_argument("--figure", type=Path, metavar="OUT",
                        help="write the report figure instead (3 samples from --index on, 3 query points "
                             "each, feature-space vs 3D-space panels) to this PNG")
    parser.add_argument("--width", type=int, default=1280, help="window / PNG width in pixels")
    parser.add_argument("--height", type=int, default=720, help="window / PNG height in pixels")
    parser.add_argument("--keys", metavar="KEYS",
                        help=f"scripted run: press these space-separated keys one per frame, then close "
                             f"the window (keys: {' '.join(KEYMAP)})")
    parser.add_argument("--screenshot-dir", type=Path, default=Path("."), help="where S saves screenshots")
    parser.add_argument("--device", default="cpu", help="torch device of the model")
    # --- part-segmentation checkpoints (pointabstract/viz/segmentation_app.py) ---
    from .segmentation_app import add_arguments as add_segmentation_arguments

    add_segmentation_arguments(parser)


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add the ``view`` subcommand to the main CLI's subparsers (``func`` = :func:`run`)."""
    parser = subparsers.add_parser("view", help="viewer: feature-space vs 3D neighbourhoods of a checkpoint",
                                   description=DESCRIPTION)
    add_arguments(parser)
    parser.set_defaults(func=run)
    return parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pointabstract view", description=DESCRIPTION)
    add_arguments(parser)
    return parser


def run(args: argparse.Namespace) -> int:
    """Load the checkpoint, then show the window or write the PNG. Returns the exit code."""
    from ..engine import MissingDatasetError
    from .app import KEYMAP, NO_DISPLAY, NoDisplayError, ViewerState, has_display, run_viewer
    from .loading import load_session
    from .render import RenderError, png_backend, render_panels_png

    # --- part-segmentation checkpoints: their own view (pointabstract/viz/segmentation_app.py) ---
    from .segmentation_view import is_segmentation_checkpoint

    if is_segmentation_checkpoint(args.checkpoint):
        from .segmentation_app import run_segmentation

        return run_segmentation(args)
    if getattr(args, "level", None) is not None:
        print("error: --level applies to part-segmentation checkpoints only", file=sys.stderr)
        return 2
    # --- end part segmentation ---
    keys = args.keys.split() if args.keys is not None else None
    try:
        unknown = [k for k in keys or [] if k not in KEYMAP]
        if unknown:
            raise ValueError(f"keys {unknown} are not in the key map {list(KEYMAP)}")
        if args.figure is not None:
            return _figure(args)
        if args.png is None and not has_display():  # say so before spending time on loading
            raise NoDisplayError(NO_DISPLAY)
        session = load_session(args.checkpoint, data_root=args.data, split=args.split, device=args.device)
        state = ViewerState(session, index=args.index, block=args.block, k=args.k, coloring=args.color,
                            layout=args.layout)
        if args.query is not None:
            state.set_query(args.query)
        if args.png is not None:
            scenes = state.panel_scenes()  # side by side: two panels drawn separately, then joined
            out = render_panels_png([s.geometries for s in scenes], args.png, width=args.width,
                                    height=args.height, legend=scenes[0].legend)
            print(state.status())
            print(f"wrote {out} (drawn by the {png_backend(out)} renderer)")
            return 0
        saved = run_viewer(state, keys=keys, screenshot_dir=args.screenshot_dir, width=args.width,
                           height=args.height)
    except (MissingDatasetError, FileNotFoundError, ValueError, RenderError, NoDisplayError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if keys is not None:
        print(f"scripted run done ({len(keys)} keys, {len(saved)} screenshots)")
    return 0


def _figure(args: argparse.Namespace) -> int:
    from .figures import neighbourhood_figure
    from .loading import load_session

    session = load_session(args.checkpoint, data_root=args.data, split=args.split, device=args.device)
    indices = [i for i in range(args.index, args.index + 3) if i < len(session)] or [args.index]
    out = neighbourhood_figure(session, args.figure, indices=indices, queries=3, block=args.block, k=args.k)
    print(f"wrote {out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    return run(build_parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
