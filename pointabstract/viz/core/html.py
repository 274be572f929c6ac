"""The browser viewer's shared machinery: one self-contained HTML page per checkpoint.

A page is the task's data as one JSON document (arrays as little-endian base64,
:func:`encode_array`) and a little JavaScript (:data:`COMMON_JS`, then the task's script) that
draws the point clouds on ``<canvas>`` elements, all seen through one camera (drag to turn, wheel
to zoom: the panels turn together), and selects points (a click picks the drawn point under the
mouse). No library, no request to any network address: the page opens offline, at once, in any
browser, with or without WebGL (docs/browser_viewer.md says why neither plotly.js nor three.js).
Everything shown is computed in Python by the functions the PNG figures and the window use (each
task's ``html.py``); the page only draws and selects.

- :func:`check_out_path`: refuse a bad ``--html`` path in one line before any work is done;
- :func:`encode_array` / :func:`decode_array` / :func:`rgb8`: arrays in and out of the page's JSON;
- :func:`write_page`: the page written atomically (temp file + rename);
- :func:`read_page_data`: the JSON document of a written page (tests, notebooks).
"""

from __future__ import annotations

import base64
import html
import json
import os
from pathlib import Path

import numpy as np

from ... import _validate as V

__all__ = ["COMMON_JS", "DATA_ID", "check_out_path", "decode_array", "encode_array", "read_page_data", "rgb8",
           "write_page"]

DATA_ID = "pa-data"  # id of the <script type="application/json"> holding the page's data
_DTYPES = {"f4": np.float32, "u1": np.uint8, "u2": np.uint16, "i4": np.int32}


def check_out_path(path: str | Path, *, option: str = "--html") -> Path:
    """``path`` as the page to write, its folder created; a ValueError in one line naming
    ``option`` when it is a folder or its folder cannot be written (checked by writing a probe)."""
    path = Path(path)
    if path.is_dir():
        example = path / ("viewer.html" if option == "--html" else "view.png")
        raise ValueError(f"{option} {path} is a folder; give a file name such as {example}")
    folder = path.parent
    if any(p.exists() and not p.is_dir() for p in (folder, *folder.parents)):
        raise ValueError(f"{option} {path}: folder {folder} cannot be written: Not a directory")
    probe = folder / f".{path.name}.probe-{os.getpid()}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as err:
        raise ValueError(f"{option} {path}: folder {folder} cannot be written: "
                         f"{err.strerror or err}") from None
    return path


def encode_array(array, dtype: str) -> dict:
    """An array as ``{"dtype", "shape", "b64"}`` (little-endian bytes, base64), which the page's
    ``paViewer.decode`` turns into a typed array.

    Args:
        array: any array-like (numpy, tensor, list).
        dtype: ``"f4"`` (float32), ``"u1"`` (uint8), ``"u2"`` (uint16) or ``"i4"`` (int32);
            integers must fit it.
    """
    V.check_choice("dtype", dtype, sorted(_DTYPES))
    a = np.asarray(array.detach().cpu() if hasattr(array, "detach") else array)
    if np.issubdtype(a.dtype, np.integer) and a.size:
        info = np.iinfo(_DTYPES[dtype])
        if a.min() < info.min or a.max() > info.max:
            raise ValueError(f"array values in [{a.min()}, {a.max()}] do not fit dtype {dtype}")
    out = np.ascontiguousarray(a, dtype=np.dtype(_DTYPES[dtype]).newbyteorder("<"))
    return {"dtype": dtype, "shape": list(out.shape), "b64": base64.b64encode(out.tobytes()).decode("ascii")}


def decode_array(entry: dict) -> np.ndarray:
    """The array :func:`encode_array` encoded."""
    raw = base64.b64decode(entry["b64"])
    return np.frombuffer(raw, dtype=np.dtype(_DTYPES[entry["dtype"]]).newbyteorder("<")).reshape(
        entry["shape"])


def rgb8(colors) -> dict:
    """(P, 3) colours in [0, 1] (or one RGB colour) as encoded uint8 RGB rows (rounded)."""
    c = np.asarray(colors, dtype=np.float64)
    if c.shape[-1] != 3 or not np.isfinite(c).all() or c.min() < 0 or c.max() > 1:
        raise ValueError(f"colors must be RGB rows in [0, 1], got shape {c.shape}")
    return encode_array(np.rint(c * 255).astype(np.uint8), "u1")


def write_page(path: str | Path, *, title: str, data: dict, script: str, help_html: str = "") -> Path:
    """Write the page: the data, :data:`COMMON_JS` then the task's ``script``.

    Args:
        path: the HTML file (checked with :func:`check_out_path`); written atomically.
        title: the page's title and heading.
        data: JSON-serialisable; arrays encoded with :func:`encode_array`.
        script: the task's JavaScript; it reads ``paViewer.data`` and builds the controls.
        help_html: what the controls do, shown under the panels.

    Returns:
        The path written.
    """
    path = check_out_path(path)
    payload = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")  # never closes the tag
    page = _TEMPLATE.format(title=html.escape(title), data_id=DATA_ID, data=payload,
                            common=COMMON_JS, script=script, help=help_html, style=_STYLE)
    tmp = path.parent / f".{path.name}.tmp-{os.getpid()}"
    try:
        tmp.write_text(page, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def read_page_data(path: str | Path) -> dict:
    """The data document embedded in a page written by :func:`write_page`."""
    text = Path(path).read_text(encoding="utf-8")
    start_tag = f'<script type="application/json" id="{DATA_ID}">'
    start = text.find(start_tag)
    if start < 0:
        raise ValueError(f"{path}: no pointabstract viewer data (no script #{DATA_ID}) in this file")
    start += len(start_tag)
    return json.loads(text[start:text.index("</script>", start)])


_STYLE = """
body{font-family:system-ui,sans-serif;margin:10px;color:#222;background:#fff}
h1{font-size:17px;margin:0 0 6px}
#controls{display:flex;flex-wrap:wrap;gap:12px;align-items:center;margin:6px 0}
#controls label{font-size:13px}
#status{font-size:13px;margin:4px 0;min-height:1.2em;white-space:pre-wrap}
#panels{display:flex;gap:6px}
.panel{flex:1;min-width:0}
.ptitle{font-size:12px;text-align:center;min-height:2.4em;white-space:pre-wrap}
.pplot{display:block;width:100%;height:560px;border:1px solid #ddd;box-sizing:border-box;cursor:crosshair}
#side{font-size:12px;margin-top:6px}
#side table{border-collapse:collapse}
#side td,#side th{border:1px solid #ccc;padding:2px 6px;text-align:right}
.swatch{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:middle;
  border:1px solid #999}
#help{font-size:12px;color:#444;margin-top:8px}
"""

_TEMPLATE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>{style}</style>
</head><body>
<h1>{title}</h1>
<div id="controls"></div>
<div id="status"></div>
<div id="panels"></div>
<div id="side"></div>
<div id="help">{help}</div>
<script type="application/json" id="{data_id}">{data}</script>
<script>{common}</script>
<script>{script}</script>
</body></html>
"""

# paViewer: decoding, 3D panels drawn on <canvas> (one shared camera: the panels turn together), controls
COMMON_JS = r"""
window.paViewer = (function () {
  const V = {};
  V.data = JSON.parse(document.getElementById('pa-data').textContent);
  const TYPES = {f4: Float32Array, u1: Uint8Array, u2: Uint16Array, i4: Int32Array};
  V.decode = function (e) {
    if (e._decoded) return e._decoded;
    const bin = atob(e.b64), bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    const a = new TYPES[e.dtype](bytes.buffer);
    a.shape = e.shape;
    e._decoded = a;
    return a;
  };
  V.rgb = function (e) {  // encoded (P, 3) uint8 -> ['rgb(r,g,b)', ...]
    const a = V.decode(e), out = new Array(e.shape[0]);
    for (let i = 0; i < out.length; i++) {
      out[i] = 'rgb(' + a[3 * i] + ',' + a[3 * i + 1] + ',' + a[3 * i + 2] + ')';
    }
    return out;
  };
  V.css = function (c) {  // [r, g, b] in [0, 1] -> 'rgb(...)', rounded as the encoded colours are
    return 'rgb(' + c.map(function (x) { return Math.round(255 * x); }).join(',') + ')';
  };
  V.panels = {};
  V.errors = [];
  // the camera every panel shares: turn about the vertical axis, tilt, zoom (orthographic)
  V.camera = {yaw: -0.55, pitch: 0.35, zoom: 1, pan: [0, 0]};
  V.panel = function (name, title) {  // a titled <canvas> in #panels
    if (V.panels[name]) return V.panels[name];
    const box = document.createElement('div'), t = document.createElement('div');
    const c = document.createElement('canvas');
    box.className = 'panel'; t.className = 'ptitle'; c.className = 'pplot'; c.id = 'panel-' + name;
    t.textContent = title || '';
    box.appendChild(t); box.appendChild(c); document.getElementById('panels').appendChild(box);
    const p = {name: name, div: c, title: t, traces: [], range: null, drawn: false, onclick: null};
    c.data = p.traces;
    V.panels[name] = p;
    interact(p);
    return p;
  };
  V.hide = function (name, hidden) {
    const p = V.panels[name];
    p.div.parentNode.style.display = hidden ? 'none' : '';
    if (!hidden && p.drawn && p.div.clientWidth) render(p);
  };
  const view = function (p) {  // the panel's projection: xyz -> [x px, y px, depth]
    const w = p.div.clientWidth, h = p.div.clientHeight, r = p.range, cam = V.camera;
    const scale = cam.zoom * 0.5 * Math.min(w, h);
    const turn = turner(r);
    return function (x, y, z) {
      const t = turn(x, y, z);
      return [w / 2 + scale * (t[0] + cam.pan[0]), h / 2 - scale * (t[1] + cam.pan[1]), t[2]];
    };
  };
  const turner = function (r) {  // xyz -> the camera's (right, up, towards the viewer), in half-ranges
    const cam = V.camera, half = (r[0][1] - r[0][0]) / 2;
    const cx = (r[0][0] + r[0][1]) / 2, cy = (r[1][0] + r[1][1]) / 2, cz = (r[2][0] + r[2][1]) / 2;
    const cyaw = Math.cos(cam.yaw), syaw = Math.sin(cam.yaw);
    const cp = Math.cos(cam.pitch), sp = Math.sin(cam.pitch);
    return function (x, y, z) {
      x = (x - cx) / half; y = (y - cy) / half; z = (z - cz) / half;
      const x1 = cyaw * x + syaw * z, z1 = -syaw * x + cyaw * z;  // about the vertical (y) axis
      return [x1, cp * y - sp * z1, sp * y + cp * z1];  // then tilted towards the viewer
    };
  };
  const fit = function () {  // zoom and centre so that every drawn point shows, the turn kept
    let lo = [Infinity, Infinity], hi = [-Infinity, -Infinity];
    Object.values(V.panels).forEach(function (p) {
      if (!p.drawn || p.div.parentNode.style.display === 'none') return;
      const turn = turner(p.range);
      p.traces.forEach(function (tr) {
        for (let i = 0; i < tr.x.length; i++) {
          const t = turn(tr.x[i], tr.y[i], tr.z[i]);
          for (let j = 0; j < 2; j++) { lo[j] = Math.min(lo[j], t[j]); hi[j] = Math.max(hi[j], t[j]); }
        }
      });
    });
    if (!(hi[0] >= lo[0])) return;
    V.camera.pan = [-(lo[0] + hi[0]) / 2, -(lo[1] + hi[1]) / 2];
    V.camera.zoom = 1.8 / Math.max(hi[0] - lo[0], hi[1] - lo[1], 1e-6);
  };
  const pick = function (v, i, arr) { return Array.isArray(arr) || ArrayBuffer.isView(arr) ? arr[i] : arr; };
  const render = function (p) {
    const c = p.div, dpr = window.devicePixelRatio || 1;
    if (c.width !== Math.round(c.clientWidth * dpr) || c.height !== Math.round(c.clientHeight * dpr)) {
      c.width = Math.round(c.clientWidth * dpr); c.height = Math.round(c.clientHeight * dpr);
    }
    const g = c.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.fillStyle = '#fff'; g.fillRect(0, 0, c.clientWidth, c.clientHeight);
    if (!p.range) return;
    const proj = view(p), items = [], top = [];
    p.screen = p.traces.map(function (tr, t) {
      const n = tr.x.length, out = new Float32Array(3 * n);
      for (let i = 0; i < n; i++) {
        const s = proj(tr.x[i], tr.y[i], tr.z[i]);
        out[3 * i] = s[0]; out[3 * i + 1] = s[1]; out[3 * i + 2] = s[2];
        (tr.ontop ? top : items).push([s[2], t, i]);
      }
      return out;
    });
    items.sort(function (a, b) { return a[0] - b[0]; });  // far first: nearer points cover them
    items.concat(top).forEach(function (it) {
      const tr = p.traces[it[1]], i = it[2], s = p.screen[it[1]];
      const size = pick(null, i, tr.marker.size) / 2;
      g.fillStyle = pick(null, i, tr.marker.color);
      g.beginPath(); g.arc(s[3 * i], s[3 * i + 1], size, 0, 2 * Math.PI); g.fill();
      if (tr.ontop) { g.lineWidth = 2; g.strokeStyle = '#000'; g.stroke(); }  // a marker: ringed
    });
  };
  V.render = function () {
    Object.values(V.panels).forEach(function (p) { if (p.drawn && p.div.clientWidth) render(p); });
  };
  V.screenOf = function (name, trace, i) {  // page coordinates of a drawn point (what a click hits)
    const p = V.panels[name], r = p.div.getBoundingClientRect(), s = p.screen[trace];
    return [r.left + s[3 * i], r.top + s[3 * i + 1]];
  };
  const hit = function (p, x, y) {  // the clickable point drawn nearest (x, y), front first on ties
    let best = null;
    p.traces.forEach(function (tr, t) {
      if (tr.hoverinfo === 'skip') return;
      const s = p.screen[t];
      for (let i = 0; i < tr.x.length; i++) {
        const d = Math.hypot(s[3 * i] - x, s[3 * i + 1] - y);
        const reach = Math.max(6, pick(null, i, tr.marker.size));
        const nearer = !best || d < best.d - 0.5 || (Math.abs(d - best.d) <= 0.5 && s[3 * i + 2] > best.z);
        if (d <= reach && nearer) {
          best = {curveNumber: t, pointNumber: i, d: d, z: s[3 * i + 2]};
        }
      }
    });
    return best;
  };
  function interact(p) {  // drag: turn every panel; wheel: zoom; click: the panel's onclick(point)
    let down = null;
    p.div.addEventListener('mousedown', function (e) {
      down = [e.clientX, e.clientY, e.clientX, e.clientY];
    });
    window.addEventListener('mousemove', function (e) {
      if (!down) return;
      V.camera.yaw += (e.clientX - down[2]) * 0.01;
      V.camera.pitch = Math.max(-1.5, Math.min(1.5, V.camera.pitch + (e.clientY - down[3]) * 0.01));
      down[2] = e.clientX; down[3] = e.clientY;
      V.render();
    });
    window.addEventListener('mouseup', function (e) {
      if (!down) return;
      const moved = Math.hypot(e.clientX - down[0], e.clientY - down[1]);
      down = null;
      if (moved < 4 && p.onclick && p.drawn) {
        const r = p.div.getBoundingClientRect(), h = hit(p, e.clientX - r.left, e.clientY - r.top);
        if (h) p.onclick(h);
      }
    });
    p.div.addEventListener('wheel', function (e) {
      e.preventDefault();
      V.camera.zoom = Math.max(0.2, Math.min(20, V.camera.zoom * Math.exp(-e.deltaY * 0.001)));
      V.render();
    }, {passive: false});
  }
  window.addEventListener('resize', V.render);
  V.range = function (clouds) {  // one cube around every cloud: the panels share scale and centre
    const lo = [Infinity, Infinity, Infinity], hi = [-Infinity, -Infinity, -Infinity];
    clouds.forEach(function (e) {
      const a = V.decode(e);
      for (let i = 0; i < a.length; i++) {
        const j = i % 3;
        lo[j] = Math.min(lo[j], a[i]); hi[j] = Math.max(hi[j], a[i]);
      }
    });
    const half = Math.max(hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]) / 2 * 1.1 + 1e-6;
    return [0, 1, 2].map(function (j) { const c = (lo[j] + hi[j]) / 2; return [c - half, c + half]; });
  };
  V.cloud = function (pos, colors, size, opts) {  // one trace: points, their colours and sizes
    const a = V.decode(pos), n = pos.shape[0], x = new Float32Array(n), y = new Float32Array(n);
    const z = new Float32Array(n);
    for (let i = 0; i < n; i++) { x[i] = a[3 * i]; y[i] = a[3 * i + 1]; z[i] = a[3 * i + 2]; }
    const trace = {x: x, y: y, z: z, marker: {color: colors, size: size}, hoverinfo: 'skip'};
    return Object.assign(trace, opts || {});
  };
  V.pointSize = function (n) { return n > 4000 ? 2.5 : n > 1000 ? 3.5 : 5; };  // pixels, by point count
  let pending = null, fitted = null;
  V.draw = function (name, traces, range) {  // show these traces in the panel; a promise: drawn
    const p = V.panels[name];
    p.traces.length = 0;
    traces.forEach(function (t) { p.traces.push(t); });
    p.range = range; p.drawn = true;
    if (!pending) {  // every panel drawn in this turn of the event loop is shown at once
      pending = Promise.resolve().then(function () {
        pending = null;
        const key = JSON.stringify(Object.values(V.panels).map(function (q) { return q.range; }));
        if (key !== fitted) { fitted = key; fit(); }  // a new shape: fitted, seen from the same side
        V.render();
      });
    }
    return pending;
  };
  V.linkCameras = function () {};  // one camera already: kept for the task scripts
  V.select = function (label, options, value, onchange, id) {  // a <select> in #controls
    const l = document.createElement('label'), s = document.createElement('select');
    s.id = id;
    l.textContent = label + ' ';
    V.options(s, options);
    s.value = String(value);
    s.addEventListener('change', function () { onchange(s.value); });
    l.appendChild(s); document.getElementById('controls').appendChild(l);
    return s;
  };
  V.options = function (s, options) {  // replace a <select>'s options by [value, text] pairs
    s.innerHTML = '';
    options.forEach(function (o) {
      const e = document.createElement('option'); e.value = o[0]; e.textContent = o[1]; s.appendChild(e);
    });
  };
  V.status = function (text) { document.getElementById('status').textContent = text; };
  V.ready = false;
  V.finish = function (promise) {  // ready (and the time it took) once the first drawing is done
    return promise.then(function () { V.ready = true; V.readyMs = performance.now(); },
                        function (err) { V.errors.push(String(err)); console.error(err); });
  };
  return V;
})();
"""
