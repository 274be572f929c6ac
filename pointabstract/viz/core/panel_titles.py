"""The title of each ``--png`` panel of the classification and capsule views: what the panel
shows and what its colours mean, read off the viewer state (never fixed numbers).

:func:`neighbourhood_titles` titles the panels of a
:class:`~pointabstract.viz.classification.app.ViewerState`, :func:`capsule_titles` those of a
:class:`~pointabstract.viz.capsules.app.CapsuleViewerState` (their ``panel_titles()``), one per
panel of ``panel_scenes()``, in the same order. The colour words are those of :mod:`.colors` as
:mod:`..classification.scenes` and :mod:`..capsules.scenes` use them: the neighbours / the
highlighted capsule red (``HIGHLIGHT``; the neighbours in another colour of ``HIGHLIGHTS`` where a
class or part colouring is close to red), the query a blue sphere (``QUERY``), other points grey
(``GREY``), the input cloud behind a block's points light grey (``CONTEXT``).
"""

from __future__ import annotations

import dataclasses

from ...models import model_config

__all__ = ["capsule_titles", "figure_title", "model_label", "neighbourhood_titles", "run_label"]

_SPACE = {"feature": "feature space", "xyz": "3D"}


def model_label(config) -> str:
    """The run's registry model with every model setting it changed from that model's defaults
    (``"capsule_ae_demo_dr with decoders=0"``), so a figure or page of a variant does not read as
    the registry model itself; the plain name when nothing changed."""
    default, used = model_config(config.model), config.model_config()
    changed = [f"{f.name}={getattr(used, f.name)}" for f in dataclasses.fields(used)
               if getattr(used, f.name) != getattr(default, f.name)]
    return f"{config.model} with {', '.join(changed)}" if changed else config.model


def run_label(session) -> str:
    """``"<model_label> (<checkpoint file name>)"``: whose figure or page this is."""
    return f"{model_label(session.config)} ({session.checkpoint.name})"


def figure_title(session) -> str:
    """``"<model> (<checkpoint file name>)"``: the title above a view's panels."""
    return f"{session.config.model} ({session.checkpoint.name})"


def neighbourhood_titles(state) -> list[str]:
    """One title per panel of a classification view: the space, K, the block and its point
    count, then what red / blue and the other colours mean under the state's colouring."""
    m, n = state.points()[0].shape[0], state.sample.pos.shape[0]
    s = state.sample
    others = {"neighbours": "grey: the block's other points",
              "predicted": f"other points: the colour of the predicted class ({s.pred_name})",
              "true": f"other points: the colour of the true class ({s.label_name})",
              "part": "other points: the colour of their part",
              "distance": ""}[state.coloring]
    context = f"light grey: the {n} input points" if m < n else ""
    red = state.highlight_name()  # red, unless the class / part colours are close to it
    titles = []
    for layout in state.panel_layouts():
        head = "feature-space" if layout == "feature" else "3D"
        what = (f"colour: {head} distance to the query (blue sphere), scale on the bar"
                if state.coloring == "distance" else
                f"blue sphere: the query; {red}: its {state.k} nearest in {_SPACE[layout]} (itself included)")
        rest = "; ".join(t for t in (others, context) if t)
        titles.append(f"{head} neighbours (K = {state.k}, block {state.block}, {m} points)\n{what}"
                      + (f"\n{rest}" if rest else ""))
    return titles


def capsule_titles(state) -> list[str]:
    """One title per panel of a capsule view: input or reconstruction (points, Chamfer distance),
    then what the colours mean under the state's colouring."""
    s, c = state.sample, state.capsule
    if state.coloring == "capsule":
        explained = int((s.explained_by == c).sum())
        inp = f"red: the {explained} input points whose nearest decoded point is capsule {c}'s"
        decoded = s.describe_capsule(c).split(": ", 1)[1]  # "64 points, 50% Airplane body"
        out = f"red: what capsule {c} decodes ({decoded}); grey: the other capsules' points"
    elif state.coloring == "capsules":
        inp = "colour: the capsule of each point's nearest decoded point"
        out = f"colour: each of the {s.num_capsules} capsules its own"
    else:  # parts
        inp = "colour: the true parts"
        purity = "" if s.purity is None else f" (purity {s.purity:.3f})"
        out = f"colour: each capsule's majority part{purity}"
    cd = f"CD {s.chamfer * 1e3:.2f} x 1e-3"
    titles = {"input": f"input ({s.pos.shape[0]} points)\n{inp}",
              "reconstruction": "\n".join(filter(None, [f"reconstruction ({s.points.shape[0]} points, {cd})",
                                                         out, state.session.scores_line()]))}
    return [titles[layout] for layout in state.panel_layouts()]
