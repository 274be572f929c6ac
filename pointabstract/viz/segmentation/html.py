"""The part-segmentation viewer as one self-contained HTML page (:mod:`..core.html`).

For each shown test shape the page holds the points, the colours of its panels as
:func:`~.scenes.segmentation_panels` makes them for the window and the figure (true parts;
predicted parts with the wrong points black; each tree level's clusters) with their titles, the
wrong points (drawn larger) and the legend of the category's parts (:func:`~.scenes.legend_entries`).
The page shows true | predicted | tree level N and steps through the levels.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ... import _validate as V
from ..core.html import encode_array, rgb8, write_page
from ..core.panel_titles import run_label
from .figures import default_levels
from .scenes import LAYOUTS, WRONG_SIZE, legend_entries, segmentation_panels
from .session import SegSample, SegSession

__all__ = ["segmentation_data", "segmentation_page"]


def _shape(sample: SegSample, level: int | None) -> dict:
    chosen = default_levels(sample.top_level)[0] if level is None else level
    sample.clusters_at(chosen)  # validates the level against this shape's tree
    panels = {p.name: p for p in segmentation_panels(sample, level=chosen, layout="parts")}
    levels = []
    for lv in range(1, sample.top_level + 1):
        tree = segmentation_panels(sample, level=lv, layout="tree")[0]
        levels.append({"level": lv, "title": tree.title, "colors": rgb8(tree.colors),
                       "clusters": encode_array(sample.clusters_at(lv), "i4")})
    wrong = sample.wrong
    return {"index": sample.index, "title": sample.title, "category": sample.category_name,
            "pos": encode_array(sample.pos, "f4"), "top_level": sample.top_level, "level": int(chosen),
            "tree_note": sample.tree_note(),
            "panels": {name: {"title": p.title, "colors": rgb8(p.colors)} for name, p in panels.items()},
            "wrong": None if wrong is None else encode_array(wrong.astype("uint8"), "u1"),
            "levels": levels,
            "legend": [[name, [float(v) for v in rgb]] for name, rgb in legend_entries(sample)]}


def segmentation_data(session: SegSession, indices: Sequence[int], *, level: int | None = None,
                      layout: str | None = None) -> dict:
    """What the page shows, as its JSON document.

    Args:
        session: the segmenter and its split.
        indices: shapes of the split, one entry of the shape selector each.
        level: the tree level shown first (default: :func:`~.figures.default_levels`' first, as the
            window); a level above a shape's root shows that shape's root.
        layout: the panels shown first, one of :data:`~.scenes.LAYOUTS` (default ``all``).

    Returns:
        ``{"task", "shapes": [{"pos", "panels": {"true"?, "predicted"}, "levels": [...], "wrong",
        "legend", ...}], "wrong_size", ...}``.
    """
    layout = "all" if layout is None else layout
    V.check_choice("layout", layout, LAYOUTS)
    samples = [session.sample(int(i)) for i in indices]
    if level is not None:
        samples[0].clusters_at(level)  # a level the first shape does not have is an error
    shapes = [_shape(s, None if level is None else min(level, s.top_level)) for s in samples]
    return {"task": "part_segmentation", "model": session.config.model, "checkpoint": str(session.checkpoint),
            "split": session.split, "shapes": shapes, "layout": layout, "layouts": list(LAYOUTS),
            "wrong_size": WRONG_SIZE}


def segmentation_page(session: SegSession, out: str | Path, *, indices: Sequence[int],
                      level: int | None = None, layout: str | None = None) -> Path:
    """Write the part-segmentation page of ``session`` to ``out`` (see :func:`segmentation_data`)."""
    data = segmentation_data(session, indices, level=level, layout=layout)
    title = (f"{run_label(session)}: true vs predicted parts, "
             "tree clusters")
    return write_page(out, title=title, data=data, script=SCRIPT, help_html=HELP)


HELP = """<b>Controls.</b> <i>shape</i>: a test shape (its IoU and wrong points).
<i>tree level</i>: the level whose clusters colour the right panel (1: the smallest groups; the top:
the root); <i>panels</i>: all (true | predicted | tree level), parts (true | predicted) or tree.
Predicted parts use the logits restricted to the shape's category, as the metrics do; wrongly
predicted points are black and drawn larger. The legend names the category's parts. Drag to rotate
(the panels turn together), scroll to zoom."""

SCRIPT = r"""
(function () {
  const V = paViewer, D = V.data;
  const st = {shape: 0, level: D.shapes[0].level, layout: D.layout};
  V.state = st;
  ['true', 'predicted', 'tree'].forEach(function (n) { V.panel(n, ''); });
  const shown = function () {
    const s = D.shapes[st.shape], names = [];
    if (st.layout !== 'tree') { if (s.panels.true) names.push('true'); names.push('predicted'); }
    if (st.layout !== 'parts') names.push('tree');
    return names;
  };
  const draw = function () {
    const s = D.shapes[st.shape], range = V.range([s.pos]), names = shown();
    const lv = s.levels[Math.min(st.level, s.top_level) - 1];
    const jobs = [];
    ['true', 'predicted', 'tree'].forEach(function (n) { V.hide(n, names.indexOf(n) < 0); });
    names.forEach(function (n) {
      const entry = n === 'tree' ? lv : s.panels[n];
      const base = V.pointSize(s.pos.shape[0]);
      let size = base;
      if (n === 'predicted' && s.wrong) {
        size = Array.from(V.decode(s.wrong), function (w) { return w ? base * D.wrong_size : base; });
      }
      V.panels[n].title.textContent = entry.title;
      jobs.push(V.draw(n, [V.cloud(s.pos, V.rgb(entry.colors), size)], range));
    });
    V.status(s.title + ' | tree level ' + lv.level + '/' + s.top_level + ' (' + s.tree_note + ')');
    let h = '<b>' + s.category + ' parts</b><br>';
    s.legend.forEach(function (e) {
      h += '<span class="swatch" style="background:' + V.css(e[1]) + '"></span>' + e[0] + '&nbsp;&nbsp; ';
    });
    document.getElementById('side').innerHTML = h;
    levelSel.value = String(lv.level);
    return Promise.all(jobs);
  };
  V.setLevel = function (l) { st.level = +l; return draw(); };
  V.wrongPoints = function () {  // indices drawn larger in the predicted panel, as drawn
    const size = V.panels.predicted.div.data[0].marker.size, out = [];
    const base = V.pointSize(D.shapes[st.shape].pos.shape[0]);
    if (Array.isArray(size)) size.forEach(function (x, i) { if (x > base) out.push(i); });
    return out;
  };
  V.select('shape', D.shapes.map(function (s, i) { return [i, s.title]; }), 0, function (v) {
    st.shape = +v; fillLevels(); draw(); }, 'sel-shape');
  const levelSel = V.select('tree level', [], st.level, function (v) { V.setLevel(v); }, 'sel-level');
  const fillLevels = function () {
    const s = D.shapes[st.shape];
    V.options(levelSel, s.levels.map(function (l) {
      return [l.level, l.level + ' (' + l.title.split(': ')[1].split('\n')[0] + ')']; }));
  };
  fillLevels();
  V.select('panels', D.layouts.map(function (l) { return [l, l]; }), st.layout, function (v) {
    st.layout = v; draw(); }, 'sel-layout');
  V.finish(draw().then(function () { V.linkCameras(); }));
})();
"""
