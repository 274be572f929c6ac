"""The classification viewer as one self-contained HTML page (:mod:`..core.html`).

For each shown test shape (true and predicted class) and each block of the model, the page holds
the block's points, every point's K nearest neighbours in that block's feature space and in 3D
space (:func:`all_neighbours`: row q is what :func:`~.scenes.feature_knn` /
:func:`~.scenes.xyz_knn`, the neighbourhood figure's functions, give for query q), the base
colours of every colouring and the colour the neighbours are painted in (those of
:class:`~.app.ViewerState`, the window's), and the part-agreement numbers of the report
(:func:`~.part_agreement.part_agreement`). The page draws the two panels side by side with linked
cameras; clicking a point makes it the query and highlights its two neighbourhoods.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from ... import _validate as V
from ...engine.tasks.base import dataset_points
from ...ops import knn
from ..core.colors import CONTEXT, QUERY, contrasting_highlight, part_palette
from ..core.geometry import float_points
from ..core.html import encode_array, rgb8, write_page
from ..core.panel_titles import run_label
from .app import COLORINGS, ViewerState
from .figures import FAINT, PartSamples
from .neighbourhood_text import verdict
from .part_agreement import open_part_dataset, part_agreement
from .scenes import LAYOUTS
from .session import ViewSession

__all__ = ["HTML_COLORINGS", "all_neighbours", "classification_data", "classification_page",
           "measured_agreement", "part_session"]

# the window's colourings the page offers ("distance" changes with every query: window and PNG only)
HTML_COLORINGS = tuple(c for c in COLORINGS if c != "distance")


def _session_parts(session: ViewSession):
    """The part-labelled test split under the session's data root at its N and inputs
    (:func:`~.part_agreement.open_part_dataset`), or None when the root has none: the page then
    offers no part colouring and measures no agreement."""
    cfg = session.config
    try:
        return open_part_dataset(cfg.data.root, num_points=dataset_points(cfg.data),
                                 use_normals=cfg.data.use_normals)
    except (FileNotFoundError, ValueError):
        return None


def part_session(session: ViewSession) -> ViewSession:
    """``session`` over the part-labelled copy of its test shapes when its data root has one (the
    built-in synthetic data: same shapes, same order, at the session's N), else ``session``."""
    parts = _session_parts(session)
    if parts is None or len(parts) != len(session.dataset):
        return session
    return replace(session, dataset=PartSamples(parts, session.class_names))


def classification_data(session: ViewSession, indices: Sequence[int], *, block: int | None = None,
                        k: int | None = None, coloring: str = "neighbours", query: int | None = None,
                        agreement: dict | None = None, layout: str = "side_by_side") -> dict:
    """What the page shows, as its JSON document.

    Args:
        session: the classifier and its split (samples with ``part`` get the ``part`` colouring
            and faint part colours behind the block's points).
        indices: shapes of the split, one entry of the shape selector each.
        block: the block shown first (default: the second centroid-attention block).
        k: neighbours per space (default :func:`~.scenes.default_k` of each block; clamped to M).
        coloring: the colouring shown first, one of :data:`HTML_COLORINGS`.
        query: the query point shown first, in the first block shown (default: the window's).
        agreement: ``part_agreement`` results to show (None: none).
        layout: the panels shown first, one of :data:`~.scenes.LAYOUTS`.

    Returns:
        ``{"task", "shapes": [{..., "blocks": [{"pos", "feature_knn", "xyz_knn", "colors",
        "highlight", "k", "m", "query"}]}], ...}``; ``feature_knn[q]`` is
        ``feature_knn(features, q, k)`` of that block.
    """
    V.check_choice("coloring", coloring, HTML_COLORINGS, note=" in the page")
    V.check_choice("layout", layout, LAYOUTS)
    shapes, first_block = [], None
    for i in indices:
        state = ViewerState(session, index=int(i), block=block, k=k)
        first_block = state.block if first_block is None else first_block
        shapes.append(_shape(state))
    if query is not None:
        entry = shapes[0]["blocks"][first_block]
        V.check_int_in("query", query, 0, entry["m"] - 1, note=f" (block {first_block})")
        entry["query"] = int(query)
    available = [c for c in HTML_COLORINGS if all(c in b["colors"] for s in shapes for b in s["blocks"])]
    if coloring not in available:
        raise ValueError(f"coloring {coloring!r} needs labels this dataset does not have; choose from "
                         f"{available}")
    return {"task": "classification", "model": session.config.model, "checkpoint": str(session.checkpoint),
            "split": session.split, "class_names": list(session.class_names), "shapes": shapes,
            "block": first_block, "coloring": coloring, "colorings": available,
            "query_color": list(QUERY), "agreement": _agreement(agreement), "layout": layout,
            "layouts": list(LAYOUTS)}


def _shape(state: ViewerState) -> dict:
    s = state.sample
    if s.part is not None:
        context = 1 - FAINT + FAINT * part_palette()[np.asarray(s.part)]  # (N, 3) faint parts, as the figure
    else:
        context = np.tile(CONTEXT, (s.pos.shape[0], 1))
    blocks = []
    for b in range(len(s.blocks)):
        state._set_block(b, keep_query=False)  # the window's block change: order, default query, K
        pos, feats = state.points()
        m, kk = pos.shape[0], state.k
        colors, highlight = {}, {}
        for coloring in HTML_COLORINGS:
            if not state._available(coloring):
                continue
            state.coloring = coloring
            base = state._base_colors(pos, feats)[0]  # the window's and --png's base colours
            colors[coloring] = rgb8(np.broadcast_to(np.asarray(base, dtype=float), (m, 3)))
            name, rgb = contrasting_highlight(base)  # what state.highlight_name() names
            highlight[coloring] = name, [float(v) for v in rgb]
        f_knn, x_knn = all_neighbours(feats, kk), all_neighbours(pos, kk)  # (M, K) each
        blocks.append({"m": int(m), "k": int(kk), "query": int(state.query), "pos": encode_array(pos, "f4"),
                       "feature_knn": encode_array(f_knn, _index_dtype(m)),
                       "xyz_knn": encode_array(x_knn, _index_dtype(m)),
                       "colors": colors, "highlight": {c: h[1] for c, h in highlight.items()},
                       "highlight_name": {c: h[0] for c, h in highlight.items()}})
    return {"index": s.index, "title": s.title, "label": s.label, "pred": s.pred, "pred_name": s.pred_name,
            "label_name": s.label_name, "prob": float(s.probs[s.pred]), "pos": encode_array(s.pos, "f4"),
            "context": rgb8(context), "blocks": blocks}


def all_neighbours(points, k: int) -> np.ndarray:
    """Every point's ``k`` nearest points, nearest first, in one :func:`~pointabstract.ops.knn` call.

    Args:
        points: (M, C) features, or (M, 3) positions.
        k: neighbours, 1 <= k <= M.

    Returns:
        (M, K) int64; row ``q`` equals ``feature_knn(points, q, k)`` (``xyz_knn`` for positions):
        the same op and backend on the same rows, the queries batched (knn orders neighbours by
        exact distance, then index, whatever the batch).
    """
    x = float_points("points", points)
    V.check_int_in("k", k, 1, x.shape[0])
    _, idx = knn(x[None].clone(), x[None], int(k))  # (1, M, K); a copy: not a self-query
    return idx[0].numpy()


def _index_dtype(m: int) -> str:
    """The smallest page dtype that indexes ``m`` points (uint16 up to 65,536 points)."""
    return "u2" if m <= 65536 else "i4"


def _agreement(agreement: dict | None) -> dict | None:
    if not agreement:
        return None
    blocks = {key.split("_")[1]: {**entry, "verdict": verdict(entry)}
              for key, entry in agreement.items() if key.startswith("block_")}
    return {"shapes": agreement.get("shapes"), "num_points": agreement.get("num_points"), "blocks": blocks}


def measured_agreement(session: ViewSession, *, shapes: int = 64) -> dict | None:
    """Part agreement of every block on the first ``shapes`` part-labelled test shapes at the
    session's N (None when the data root has no part labels)."""
    parts = _session_parts(session)
    if parts is None:
        return None
    return part_agreement(session.model, parts, max_shapes=shapes,
                          use_normals=session.config.data.use_normals, device=session.device)


def classification_page(session: ViewSession, out: str | Path, *, indices: Sequence[int],
                        block: int | None = None, k: int | None = None, coloring: str | None = None,
                        query: int | None = None, agreement: dict | None = None,
                        measure_agreement: bool = True, layout: str | None = None) -> Path:
    """Write the classification page of ``session`` to ``out`` (see :func:`classification_data`).

    ``agreement`` None and ``measure_agreement``: measured here (:func:`measured_agreement`).
    Returns the path written.
    """
    shown = part_session(session)
    if agreement is None and measure_agreement:
        agreement = measured_agreement(session)
    data = classification_data(shown, indices, block=block, k=k, coloring=coloring or "neighbours",
                               query=query, agreement=agreement, layout=layout or "side_by_side")
    title = f"{run_label(session)}: feature-space vs 3D neighbours"
    return write_page(out, title=title, data=data, script=SCRIPT, help_html=HELP)


HELP = """<b>Controls.</b> <i>shape</i>: a test shape (true and predicted class). <i>block</i>: the block
whose points and features are shown (M points, K neighbours). <i>colouring</i>: the colour of the
points that are not neighbours (grey; the predicted or true class; the part of each point).
<i>panels</i>: both, the feature-space panel or the 3D one. <b>Click a point</b> in either panel to
make it the query (the larger blue point): the left panel paints its K nearest neighbours in the
block's <i>feature space</i>, the right panel its K nearest in <i>3D space</i> (itself included).
Drag to rotate (both panels turn together), scroll to zoom. Small points: the input cloud. The
table: the share of a point's K nearest neighbours that lie in its part, mean over the points of a
block and over the test shapes (chance: all other points of the block)."""

SCRIPT = r"""
(function () {
  const V = paViewer, D = V.data;
  const st = {shape: 0, block: D.block, coloring: D.coloring, query: D.shapes[0].blocks[D.block].query};
  V.state = st;
  V.panel('feature', ''); V.panel('xyz', '');
  const cur = function () { return D.shapes[st.shape].blocks[st.block]; };
  const knnOf = function (space) { const b = cur(), a = V.decode(b[space + '_knn']);
    return Array.from(a.slice(st.query * b.k, (st.query + 1) * b.k)); };
  V.neighbours = knnOf;
  const draw = function () {
    const s = D.shapes[st.shape], b = cur(), hl = V.css(b.highlight[st.coloring]);
    const range = V.range([s.pos, b.pos]);
    const ctx = V.cloud(s.pos, V.rgb(s.context), 2.5);
    const base = V.rgb(b.colors[st.coloring]), p = V.decode(b.pos), at = 3 * st.query;
    const xyz = [[p[at]], [p[at + 1]], [p[at + 2]]];
    const jobs = ['feature', 'xyz'].map(function (space) {
      const colors = base.slice(), size = new Array(b.m).fill(5);
      knnOf(space).forEach(function (i) { colors[i] = hl; size[i] = 7; });
      const text = Array.from({length: b.m}, function (_, i) { return 'point ' + i; });
      const pts = V.cloud(b.pos, colors, size, {hoverinfo: 'text', text: text});
      const q = {x: xyz[0], y: xyz[1], z: xyz[2], marker: {color: V.css(D.query_color), size: 11},
                 hoverinfo: 'skip', ontop: true};
      const where = space === 'feature' ? 'feature space (block ' + st.block + ')' : '3D space';
      V.panels[space].title.textContent = 'K = ' + b.k + ' nearest neighbours in ' + where + ' of query ' +
        st.query + '\n' + b.highlight_name[st.coloring] + ': the neighbours; blue: the query';
      return V.draw(space, [ctx, pts, q], range);
    });
    const f = knnOf('feature'), x = new Set(knnOf('xyz'));
    const shared = f.filter(function (i) { return x.has(i); }).length;
    V.status(s.title + ' | block ' + st.block + ' (' + b.m + ' points) | K = ' + b.k +
             ' | query ' + st.query +
             ' | ' + shared + '/' + b.k + ' neighbours shared by both spaces');
    table();
    return Promise.all(jobs);
  };
  V.setQuery = function (q) { st.query = q; return draw(); };
  V.highlighted = function (space) {  // indices painted in the highlight colour in that panel, as drawn
    const b = cur(), hl = V.css(b.highlight[st.coloring]), colors = V.panels[space].div.data[1].marker.color;
    const out = [];
    colors.forEach(function (c, i) { if (c === hl) out.push(i); });
    return out;
  };
  ['feature', 'xyz'].forEach(function (space) {
    V.panels[space].onclick = function (p) { if (p.curveNumber === 1) V.setQuery(p.pointNumber); };
  });
  const shapeSel = V.select('shape', D.shapes.map(function (s, i) { return [i, s.title]; }), 0, function (v) {
    st.shape = +v; st.query = cur().query; draw(); }, 'sel-shape');
  const blockSel = V.select('block', D.shapes[0].blocks.map(function (b, i) {
    return [i, 'block ' + i + ' (' + b.m + ' points, K = ' + b.k + ')']; }), st.block, function (v) {
    st.block = +v; st.query = cur().query; draw(); }, 'sel-block');
  V.select('colouring', D.colorings.map(function (c) { return [c, c]; }), st.coloring, function (v) {
    st.coloring = v; draw(); }, 'sel-coloring');
  const table = function () {
    const A = D.agreement, side = document.getElementById('side');
    if (!A) { side.textContent = 'No part labels at this data root: part agreement not measured.'; return; }
    let h = '<b>Part agreement</b> (' + A.shapes + ' test shapes of ' + A.num_points + ' points)<table><tr>' +
      '<th>block</th><th>points</th><th>K</th><th>feature space</th><th>3D space</th><th>chance</th></tr>';
    Object.keys(A.blocks).forEach(function (k) { const e = A.blocks[k];
      const cells = [k, e.points, e.k, e.feature.toFixed(3), e.xyz.toFixed(3), e.chance.toFixed(3)];
      h += '<tr' + (+k === st.block ? ' style="font-weight:bold"' : '') + '><td>' + cells.join('</td><td>') +
        '</td></tr>'; });
    h += '</table>';
    const e = A.blocks[String(st.block)];
    if (e) h += '<div>Block ' + st.block + ': ' + e.verdict + '.</div>';
    side.innerHTML = h;
  };
  const showLayout = function (v) {
    st.layout = v; V.hide('feature', v === 'xyz'); V.hide('xyz', v === 'feature'); return draw();
  };
  st.layout = D.layout;
  V.select('panels', D.layouts.map(function (l) { return [l, l]; }), st.layout, showLayout, 'sel-layout');
  V.finish(showLayout(D.layout));
})();
"""
