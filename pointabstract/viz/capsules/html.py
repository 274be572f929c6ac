"""The capsule-autoencoder viewer as one self-contained HTML page (:mod:`..core.html`).

For each shown test shape the page holds the input and its reconstruction, the latent capsule
that decoded each point (``capsule_index``) and the capsule of each input point's nearest decoded
point (``explained_by``), the point colours of the ``capsules`` and ``parts`` colourings
(:func:`~.scenes.capsule_colors`, what the window and the figure draw) and each capsule's
description, majority part and purity (:class:`~.session.CapsuleSample`). Selecting a capsule
(the selector, or a click on a reconstructed point) paints the points it decodes, and the input
points it explains, in the highlight colour of the ``capsule`` colouring.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ... import _validate as V
from ..core.colors import GREY, HIGHLIGHT, class_palette
from ..core.html import encode_array, rgb8, write_page
from ..core.panel_titles import model_label
from .scenes import COLORINGS, LAYOUTS, capsule_colors
from .session import CapsuleSample, CapsuleSession, part_name

__all__ = ["capsule_data", "capsule_page"]


def _shape(sample: CapsuleSample) -> dict:
    colors = {}
    for coloring in COLORINGS[1:]:  # "capsules", "parts"; "capsule" is drawn from the indices below
        if coloring == "parts" and sample.part is None:
            continue
        inp, out = capsule_colors(sample, coloring)
        colors[coloring] = {"input": rgb8(inp), "reconstruction": rgb8(out)}
    capsules = []
    for c in sample.capsule_order():
        majority = -1 if sample.capsule_parts is None else int(sample.capsule_parts[c])
        part = None if majority < 0 else majority
        capsules.append({"capsule": c, "text": sample.describe_capsule(c),
                         "points": int(len(sample.capsule_points(c))),
                         "part": "" if part is None else part_name(part),
                         "purity": None if part is None else float(sample.capsule_purity[c])})
    return {"index": sample.index, "title": sample.title, "num_capsules": sample.num_capsules,
            "chamfer": sample.chamfer, "purity": sample.purity, "groups": sample.describe_groups(),
            "pos": encode_array(sample.pos, "f4"), "points": encode_array(sample.points, "f4"),
            "capsule_index": encode_array(sample.capsule_index, "i4"),
            "explained_by": encode_array(sample.explained_by, "i4"), "colors": colors, "capsules": capsules,
            "capsule_colors": rgb8(class_palette(sample.num_capsules))}


def capsule_data(session: CapsuleSession, indices: Sequence[int], *, capsule: int | None = None,
                 coloring: str | None = None, layout: str | None = None) -> dict:
    """What the page shows, as its JSON document.

    Args:
        session: the autoencoder and its split.
        indices: shapes of the split, one entry of the shape selector each.
        capsule: the capsule highlighted first (default: the first of the capsules grouped by
            majority part, as the window).
        coloring: the colouring shown first, one of :data:`~.scenes.COLORINGS` (default ``capsule``).
        layout: the panels shown first, one of :data:`~.scenes.LAYOUTS` (default ``side_by_side``).

    Returns:
        ``{"task", "shapes": [{"pos", "points", "capsule_index", "explained_by", "colors",
        "capsules", ...}], "grey", "highlight", ...}``.
    """
    coloring = "capsule" if coloring is None else coloring
    layout = "side_by_side" if layout is None else layout
    V.check_choice("layout", layout, LAYOUTS, note=" for an autoencoder")
    V.check_choice("coloring", coloring, COLORINGS, note=" for an autoencoder")
    samples = [session.sample(int(i)) for i in indices]
    if coloring == "parts" and samples[0].part is None:
        raise ValueError("coloring 'parts' needs per-point part labels (data.dataset=shapenet_part), "
                         "which this dataset does not have")
    first = samples[0].capsule_order()[0] if capsule is None else samples[0].check_capsule(capsule)
    colorings = [c for c in COLORINGS if c != "parts" or samples[0].part is not None]
    return {"task": "reconstruction", "model": session.config.model, "checkpoint": str(session.checkpoint),
            "routing": session.routing, "split": session.split, "shapes": [_shape(s) for s in samples],
            "capsule": int(first), "coloring": coloring, "colorings": colorings,
            "grey": list(GREY), "highlight": list(HIGHLIGHT), "layout": layout, "layouts": list(LAYOUTS)}


def capsule_page(session: CapsuleSession, out: str | Path, *, indices: Sequence[int],
                 capsule: int | None = None, coloring: str | None = None, layout: str | None = None) -> Path:
    """Write the capsule page of ``session`` to ``out`` (see :func:`capsule_data`); returns the path."""
    data = capsule_data(session, indices, capsule=capsule, coloring=coloring, layout=layout)
    title = (f"{model_label(session.config)} ({session.checkpoint.name}, {session.routing}): input vs "
             f"reconstruction by latent capsule. {session.scores_line()}").strip()
    return write_page(out, title=title, data=data, script=SCRIPT, help_html=HELP)


HELP = """<b>Controls.</b> <i>shape</i>: a test shape (Chamfer distance of its reconstruction).
<i>capsule</i>: a latent capsule (grouped by majority part; its point count, purity and part): the
right panel paints red the points it decodes, the left panel the input points whose nearest decoded
point is one of them; everything else grey. <b>Click a reconstructed point</b> to select its
capsule. <i>colouring</i>: <i>capsule</i> (one capsule red), <i>capsules</i> (every capsule its own
colour; the input takes the colour of its nearest decoded point's capsule), <i>parts</i> (the input
by true part, the reconstruction by each capsule's majority part). <i>panels</i>: both, or one. The
table: every capsule's points, majority part and purity (share of its points in that part; a decoded
point takes the part of its nearest input point). Drag to rotate (both panels turn together), scroll
to zoom."""

SCRIPT = r"""
(function () {
  const V = paViewer, D = V.data;
  const st = {shape: 0, capsule: D.capsule, coloring: D.coloring};
  V.state = st;
  V.panel('input', ''); V.panel('reconstruction', '');
  const grey = V.css(D.grey), red = V.css(D.highlight);
  const members = function (key) {  // indices whose capsule (decoding / explaining) is the selected one
    const a = V.decode(D.shapes[st.shape][key]), out = [];
    for (let i = 0; i < a.length; i++) if (a[i] === st.capsule) out.push(i);
    return out;
  };
  const colorsOf = function (panel) {
    const s = D.shapes[st.shape];
    if (st.coloring !== 'capsule') return V.rgb(s.colors[st.coloring][panel]);
    const key = panel === 'input' ? 'explained_by' : 'capsule_index';
    const colors = new Array(s[key].shape[0]).fill(grey);
    members(key).forEach(function (i) { colors[i] = red; });
    return colors;
  };
  const draw = function () {
    const s = D.shapes[st.shape], range = V.range([s.pos, s.points]);
    const info = s.capsules.find(function (c) { return c.capsule === st.capsule; });
    const what = {capsule: 'red: capsule ' + st.capsule, capsules: 'colour: each of the ' + s.num_capsules +
                  ' capsules', parts: 'colour: true parts | each capsule\'s majority part'}[st.coloring];
    const one = st.coloring === 'capsule';
    V.panels.input.title.textContent = 'input (' + s.pos.shape[0] + ' points)\n' + what;
    V.panels.reconstruction.title.textContent = 'reconstruction (' + s.points.shape[0] + ' points, CD ' +
      (s.chamfer * 1e3).toFixed(2) + ' x 1e-3)\n' + (one ? info.text : what);
    const text = Array.from(V.decode(s.capsule_index), function (c) { return 'capsule ' + c; });
    const size = V.pointSize(Math.max(s.pos.shape[0], s.points.shape[0]));
    const jobs = [V.draw('input', [V.cloud(s.pos, colorsOf('input'), size)], range),
                  V.draw('reconstruction', [V.cloud(s.points, colorsOf('reconstruction'), size,
                                                    {hoverinfo: 'text', text: text})], range)];
    V.status(s.title + (s.purity === null ? '' : ' | part purity ' + s.purity.toFixed(3)) + ' | ' +
             (one ? info.text : 'colouring ' + st.coloring) +
             (s.groups ? '\ncapsules by majority part: ' + s.groups : ''));
    table();
    return Promise.all(jobs);
  };
  V.setCapsule = function (c) {
    st.capsule = +c; st.coloring = 'capsule';
    capSel.value = String(c); colSel.value = 'capsule';
    return draw();
  };
  V.highlighted = function (panel) {  // indices painted red in that panel, as drawn
    const colors = V.panels[panel].div.data[0].marker.color, out = [];
    colors.forEach(function (c, i) { if (c === red) out.push(i); });
    return out;
  };
  V.panels.reconstruction.onclick = function (p) {
    V.setCapsule(V.decode(D.shapes[st.shape].capsule_index)[p.pointNumber]);
  };
  const capOptions = function () {
    return D.shapes[st.shape].capsules.map(function (c) { return [c.capsule, c.text]; });
  };
  V.select('shape', D.shapes.map(function (s, i) { return [i, s.title]; }), 0, function (v) {
    st.shape = +v; V.options(capSel, capOptions()); capSel.value = String(st.capsule); draw();
  }, 'sel-shape');
  const capSel = V.select('capsule', capOptions(), st.capsule, function (v) { V.setCapsule(v); },
                          'sel-capsule');
  const colSel = V.select('colouring', D.colorings.map(function (c) { return [c, c]; }), st.coloring,
                          function (v) { st.coloring = v; draw(); }, 'sel-coloring');
  const table = function () {
    const s = D.shapes[st.shape], pal = V.rgb(s.capsule_colors);
    let h = '<b>Capsules</b> (grouped by majority part)<table><tr><th>capsule</th><th>points</th>' +
      '<th>majority part</th><th>purity</th></tr>';
    s.capsules.forEach(function (c) {
      const bold = c.capsule === st.capsule ? ' style="font-weight:bold"' : '';
      const purity = c.purity === null ? '-' : c.purity.toFixed(2);
      h += '<tr' + bold + '><td><span class="swatch" style="background:' + pal[c.capsule] + '"></span>' +
        c.capsule + '</td><td>' + c.points + '</td><td>' + (c.part || '-') + '</td><td>' + purity +
        '</td></tr>';
    });
    document.getElementById('side').innerHTML = h + '</table>';
  };
  const showLayout = function (v) {
    st.layout = v; V.hide('input', v === 'reconstruction'); V.hide('reconstruction', v === 'input');
    return draw();
  };
  V.select('panels', D.layouts.map(function (l) { return [l, l]; }), D.layout, showLayout, 'sel-layout');
  V.finish(showLayout(D.layout));
})();
"""
