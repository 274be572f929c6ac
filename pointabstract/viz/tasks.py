"""The per-task dispatch of the viewer, in one place: a checkpoint's task -> its session, its
window state, its ``--figure`` writer, its ``--png`` writer and the options only its runs take.

The tasks are :mod:`.classification` (feature-space vs 3D neighbourhoods), :mod:`.capsules`
(``reconstruction``: input vs reconstruction by latent capsule) and :mod:`.segmentation`
(``part_segmentation``: true vs predicted parts, tree clusters). This module imports them;
none of them imports it (nor :mod:`.cli`): a new task is a subpackage with the same files
(``session.py``, ``scenes.py``, ``figures.py``, ``app.py``, ``html.py``) and one row in each table
below. :data:`HTMLS` holds each task's browser page writer (``view --html``, ``eval``'s viewer.html).

A state class offers: ``KEYMAP`` (token -> (GLFW code, what it does)), ``TITLE``,
``from_args(session, args)`` (the state ``pointabstract view`` asks for), ``press(key) -> status``,
``status()``, ``scene()`` (drawables under ``.geometries``), ``session`` (``.config.model``,
``.checkpoint``), ``sample`` (``.title``) and ``screenshot_name(number)``; for the default
``--png`` writer also ``panel_scenes()`` and ``panel_camera()`` (the panels and the camera they
share, None: each panel fitted on its own) and ``panel_titles()`` (one per panel); a task with a
writer of its own in :data:`PNGS` (part segmentation) needs none of those.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

import torch

from .. import _validate as V
from .capsules.app import CapsuleViewerState
from .capsules.session import CapsuleSession
from .classification.app import ViewerState
from .classification.session import ViewSession
from .core.loading import not_shown, restore_run
from .segmentation.app import SegViewerState
from .segmentation.session import SegSession

__all__ = ["FIGURES", "HTMLS", "OPTIONS", "PAGE_HELP", "PNGS", "SESSIONS", "STATES", "html_indices",
           "load_input_session", "load_session", "viewer_state", "write_html"]

# task -> the viewer's session of its runs, built from the restored run (engine.restored.Restored)
SESSIONS: dict[str, Callable] = {
    "classification": ViewSession.from_restored,
    "reconstruction": CapsuleSession.from_restored,
    "part_segmentation": SegSession.from_restored,
}

# task -> the viewer state class of its runs
STATES: dict[str, type] = {
    "classification": ViewerState,
    "reconstruction": CapsuleViewerState,
    "part_segmentation": SegViewerState,
}

# task -> the options only its runs take (any other task's run refuses them)
OPTIONS = {
    "classification": ("block", "k", "query"),
    "reconstruction": ("capsule", "compare"),
    "part_segmentation": ("level", "category"),
}


def load_session(checkpoint: str | Path, *, data_root: str | Path | None = None, split: str = "test",
                 device: str = "cpu", task: str | None = None):
    """Rebuild the model saved in ``checkpoint`` and open its dataset split (as ``eval`` does,
    through :func:`pointabstract.engine.restore`), wrapped in its task's session (:data:`SESSIONS`).

    Args:
        checkpoint: a trainer checkpoint (``last.pt`` / ``best.pt``).
        data_root: dataset root (default: the one it was trained on).
        split: dataset split, ``"test"`` or ``"train"`` (never augmented here).
        device: torch device of the model.
        task: the one task the caller can show (e.g. ``"classification"`` for the neighbourhood
            figure); None: any task of :data:`SESSIONS`.

    Returns:
        A ``ViewSession`` for classification runs, a ``CapsuleSession`` for reconstruction,
        a ``SegSession`` for part segmentation.

    Raises:
        FileNotFoundError: no such checkpoint, or no dataset at the root.
        ValueError: not a checkpoint, classes or weights that do not fit, unknown split, a task
            the viewer (or the caller) cannot show.
    """
    shown = list(SESSIONS) if task is None else [task]
    run = restore_run(checkpoint, shown=shown, data_root=data_root, split=split, device=device)
    if run.config.task not in SESSIONS:
        raise not_shown(checkpoint, shown, run.config.task)
    return SESSIONS[run.config.task](run)


class _InputSample(torch.utils.data.Dataset):
    """A one-sample dataset: an input file prepared for the model (what ``view --input`` shows)."""

    def __init__(self, sample: dict):
        self.sample = sample

    def __len__(self) -> int:
        return 1

    def __getitem__(self, index: int) -> dict:
        if index != 0:
            raise IndexError(f"index {index} out of range: --input shows one file (index 0)")
        return self.sample


def load_input_session(checkpoint: str | Path, path: str | Path, *, device: str = "cpu", category=None,
                       up: str = "y"):
    """The session of ``checkpoint``'s task (:data:`SESSIONS`) on one file instead of a dataset split:
    the file read and prepared by the predictor (:meth:`pointabstract.predict.Predictor.prepare`:
    N points, centred and scaled into the unit sphere), shown as sample 0 with the same panels as
    a dataset sample (no true label or parts).

    Args:
        checkpoint: a trainer checkpoint; path: a shape file (docs/predict.md lists the formats).
        device: torch device of the model.
        category: part segmentation: the ShapeNetPart category (default: the file's synset folder).
        up: the file's up axis, ``"y"`` or ``"z"`` (turned to y up, as ``predict --up``).

    Raises:
        FileNotFoundError / ValueError: one line naming the checkpoint or the file.
    """
    from ..engine.restored import Restored
    from ..predict import load

    predictor = load(checkpoint, device=device)
    predictor.check_options(flags=True, category=category)
    if predictor.task not in SESSIONS:
        raise not_shown(checkpoint, list(SESSIONS), predictor.task)
    prepared = predictor.prepare([path], up=up)[0]
    sample = {"pos": prepared.pos, **({"normal": prepared.normal} if prepared.normal is not None else {})}
    if predictor.task == "part_segmentation":
        sample["category"] = predictor.category_of(prepared.cloud.path, str(path), category)
    t = predictor.trained
    run = Restored(t.model, t.task, t.config, _InputSample(sample), t.checkpoint, t.path, f"file {path}",
                   t.device)
    return SESSIONS[predictor.task](run)


def viewer_state(session, args):
    """The state of ``session``'s task (:data:`STATES`) asked for by ``pointabstract view`` ``args``."""
    task = session.config.task
    if task not in STATES:
        raise ValueError(f"the viewer shows {' and '.join(STATES)} runs; this is a '{task}' run")
    return STATES[task].from_args(session, args)


def _neighbourhood_figure(session, args: argparse.Namespace, indices: list[int]) -> Path:
    from .classification.figures import neighbourhood_figure

    return neighbourhood_figure(session, args.figure, indices=indices, queries=3, block=args.block, k=args.k)


def _capsule_figure(session, args: argparse.Namespace, indices: list[int]) -> Path:
    from .capsules.figures import capsule_figure

    if args.capsule is not None:
        raise ValueError("--capsule applies to the window and --png; --figure shows every capsule")
    others = [] if args.compare is None else [args.compare]
    return capsule_figure([session, *others], args.figure, split=args.split, indices=indices,
                          device=args.device)


def _segmentation_figure(session, args: argparse.Namespace, indices: list[int]) -> Path:
    from .segmentation.figures import segmentation_figure

    return segmentation_figure(session, args.figure, indices=indices,
                               levels=None if args.level is None else [args.level])


def _segmentation_png(state, path: Path, *, width: int, height: int) -> Path:
    from .segmentation.app import render_state_png

    return render_state_png(state, path, width=width, height=height)


# task -> the --figure writer of its runs: (session, parsed arguments, sample indices) -> PNG path
FIGURES = {
    "classification": _neighbourhood_figure,
    "reconstruction": _capsule_figure,
    "part_segmentation": _segmentation_figure,
}
# task -> its --png writer where it is not the default (cli: the state's titled panels)
PNGS = {
    "part_segmentation": _segmentation_png,
}


def _classification_html(session, args: argparse.Namespace, indices: list[int], out: Path, *,
                         agreement: dict | None = None) -> Path:
    from .classification.html import classification_page

    return classification_page(session, out, indices=indices, block=args.block, k=args.k,
                               coloring=args.color, query=args.query, agreement=agreement, layout=args.layout)


def _capsule_html(session, args: argparse.Namespace, indices: list[int], out: Path, **_) -> Path:
    from .capsules.html import capsule_page

    return capsule_page(session, out, indices=indices, capsule=args.capsule, coloring=args.color,
                        layout=args.layout)


def _segmentation_html(session, args: argparse.Namespace, indices: list[int], out: Path, **_) -> Path:
    from .segmentation.html import segmentation_page

    if args.color is not None:
        raise ValueError("--color does not apply to a part-segmentation checkpoint (its panels show the true "
                         "parts, the predicted parts and the tree's clusters; --layout all|parts|tree picks "
                         "which)")
    return segmentation_page(session, out, indices=indices, level=args.level, layout=args.layout)


# task -> its browser page writer: (session, arguments, sample indices, out path, agreement=) -> path
HTMLS = {
    "classification": _classification_html,
    "reconstruction": _capsule_html,
    "part_segmentation": _segmentation_html,
}

# task -> what its browser page (viewer.html) lets a reader do, for the eval report's link to it
PAGE_HELP = {
    "classification": "pick a test shape and a block, click a point: its K nearest neighbours in the block's "
                      "feature space beside its K nearest in 3D space, with the part agreement",
    "reconstruction": "pick a test shape and a latent capsule (or click a reconstructed point): the points "
                      "it decodes, the capsules by majority part, each capsule's purity",
    "part_segmentation": "pick a test shape: true | predicted parts (wrong points black) | the tree's "
                         "clusters at any level, with the category's part names",
}

HTML_ARGS = {"block": None, "k": None, "color": None, "query": None, "capsule": None, "level": None,
             "layout": None}  # what write_html passes when the caller gives no view arguments


def html_indices(session, *, index: int = 0, samples: int = 16) -> list[int]:
    """The shapes a page shows: ``samples`` consecutive shapes of the split from ``index`` (fewer
    when the split ends first)."""
    V.check_int("samples", samples, low=1)
    n = len(session)
    V.check_int_in("index", index, 0, n - 1, note=f" (the {session.split} split has {n} samples)")
    return list(range(index, min(n, index + samples)))


def write_html(session, out: str | Path, *, args: argparse.Namespace | None = None, index: int = 0,
               samples: int = 16, agreement: dict | None = None) -> Path:
    """The browser page of ``session``'s task (:data:`HTMLS`) written to ``out``.

    Args:
        session: a task's session (:func:`load_session`, or ``SESSIONS[task](restored run)``).
        out: the HTML file to write (its folder created; written atomically).
        args: ``pointabstract view`` arguments (``--block --k --color --query --capsule --level
            --layout``); None: every default.
        index, samples: the shapes shown (:func:`html_indices`).
        agreement: classification: the part-agreement numbers to show (None: measured on the
            part-labelled copy of the test split when the data root has one).
    """
    task = session.config.task
    if task not in HTMLS:
        raise ValueError(f"the browser viewer shows {' and '.join(HTMLS)} runs; this is a '{task}' run")
    args = argparse.Namespace(**HTML_ARGS) if args is None else args
    return HTMLS[task](session, args, html_indices(session, index=index, samples=samples), Path(out),
                       agreement=agreement)
