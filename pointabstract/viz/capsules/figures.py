"""The capsule figure (Centroid Transformers Fig. 5 on trained checkpoints) and its report section.

One row per shape and checkpoint: the input (coloured by its true parts on part-labelled data),
the reconstruction with every capsule in its own colour, the reconstruction coloured by each
capsule's majority part (part-labelled data), then one panel per latent capsule with the points
it decodes in red and the rest grey. Given two checkpoints (e.g. dynamic routing and centroid
attention), both reconstruct the *same* input shapes (those of the first checkpoint's split)
and their rows alternate, as Fig. 5 (a) / (b). Every panel of a shape is seen through one
camera that frames the input and all its reconstructions.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ... import _validate as V
from ..core.colors import GREY
from ..core.figure_compose import compose_figure
from ..core.geometry import point_cloud
from ..core.panel_titles import model_label
from ..core.render import Renderer, save_png
from .scenes import capsule_scene, shared_camera
from .session import CapsuleSample, CapsuleSession, load_capsule_session

__all__ = ["capsule_figure", "capsule_section"]

MAX_CAPSULES = 12  # capsule panels per row by default (the paper's small setting has 12)


def _session(checkpoint, *, data_root, split: str, device: str) -> CapsuleSession:
    if isinstance(checkpoint, CapsuleSession):
        return checkpoint
    return load_capsule_session(checkpoint, data_root=data_root, split=split, device=device)


def capsule_figure(checkpoints, out_png: str | Path, *, data_root: str | Path | None = None,
                   split: str = "test", indices: Sequence[int] = (0, 1, 2),
                   capsules: Sequence[int] | None = None, max_capsules: int = MAX_CAPSULES,
                   panel_size: int = 200, backend: str = "auto",
                   device: str = "cpu", caption: str = "") -> Path:
    """Write the capsule figure of one or more autoencoder checkpoints to ``out_png``.

    Args:
        checkpoints: a checkpoint path or :class:`CapsuleSession`, or a list of them (one row
            each per shape, in this order; every model reconstructs the first one's shapes).
        out_png: the PNG to write (folder created); its metadata names the rendering backend.
        data_root: dataset root of the first checkpoint (default: the one it was trained on);
            the other checkpoints open the same root.
        split: dataset split the shapes come from.
        indices: samples of the split, one group of rows each.
        capsules: the capsules given a panel of their own (default: the first ``max_capsules``
            of each shape's part-grouped order, :meth:`CapsuleSample.capsule_order`).
        max_capsules: most capsule panels per row when ``capsules`` is None.
        panel_size: pixel width and height of each rendered panel.
        backend: rendering backend (see :mod:`pointabstract.viz.core.backends`).
        device: torch device of the models.
        caption: extra text under the figure's own caption.

    Returns:
        The path written.
    """
    items = [checkpoints] if isinstance(checkpoints, (str, Path, CapsuleSession)) else list(checkpoints)
    if not items:
        raise ValueError("checkpoints must name at least one autoencoder checkpoint")
    if isinstance(indices, (int, np.integer)) or len(indices) == 0:
        raise ValueError(f"indices must be a non-empty list of sample indices, got {indices!r}")
    V.check_int("max_capsules", max_capsules, low=1)
    first = _session(items[0], data_root=data_root, split=split, device=device)
    sessions = [first] + [_session(c, data_root=first.config.data.root, split=split, device=device)
                          for c in items[1:]]
    shapes = [(int(i), first.item(i)) for i in indices]
    rows = []  # (row label, samples of this row, camera)
    for index, item in shapes:
        samples = [s.reconstruct(item, index=index) for s in sessions]
        camera = shared_camera(samples[0].pos, *[s.points for s in samples])
        for session, sample in zip(sessions, samples):
            rows.append((session, sample, camera))
    size = max(2.0, panel_size / 50)  # point size in pixels: 4 in the default 200-pixel panels
    panels = [_row_panels(sample, capsules, max_capsules, size) for _, sample, _ in rows]
    with Renderer(panel_size, panel_size, backend=backend) as renderer:
        images = [[renderer.render(geometries, camera=camera) for geometries, _ in row]
                  for row, (_, _, camera) in zip(panels, rows)]
    width = max(len(r) for r in images)
    blank = np.full((panel_size, panel_size, 3), 255, dtype=np.uint8)
    images = [r + [blank] * (width - len(r)) for r in images]
    titles = [[t for _, t in row] + [""] * (width - len(row)) for row in panels]
    labels = [_row_label(session, sample, len(sessions), sessions.index(session))
              for session, sample, _ in rows]
    text = _caption([sample for _, sample, _ in rows], sessions, capsules, max_capsules)
    image = compose_figure(images, titles, labels, title=_title(sessions),
                           caption="\n".join(t for t in (text, caption) if t))
    return save_png(image, out_png, backends=renderer.backends_used, fallbacks=renderer.fallbacks)


def capsule_section(run, out_dir: str | Path, *, name: str = "capsules.png",
                    indices: Sequence[int] = (0, 1, 2), **figure_kwargs) -> tuple[str, dict]:
    """The capsule figure of a restored reconstruction run as a report.md section.

    Args:
        run: a restored run (:func:`pointabstract.engine.restore`, what ``evaluate_checkpoint``
            hands its sections) or a :class:`CapsuleSession`.
        out_dir: where ``name`` is written (the section links it relative to ``out_dir``).
        indices: test shapes shown (those beyond the split are dropped).
        figure_kwargs: passed to :func:`capsule_figure` (panel_size, capsules, backend, ...).

    Returns:
        (markdown, {}): the section; it adds no metrics (the task reports the purity).
    """
    session = run if isinstance(run, CapsuleSession) else CapsuleSession.from_restored(run)
    shown = [i for i in indices if 0 <= i < len(session)]
    if not shown:
        raise ValueError(f"indices {list(indices)} hold no sample of the {len(session)}-shape split")
    path = capsule_figure(session, Path(out_dir) / name, indices=shown, **figure_kwargs)
    samples = [session.sample(i) for i in shown]
    lines = ["## Latent capsules", "",
             f"What each latent capsule decodes on {len(shown)} test shapes (red: the points of one capsule, "
             "grey: the rest; as in Centroid Transformers Fig. 5). Reproduce with "
             f"`pointabstract view {session.checkpoint} --data {session.config.data.root} "
             f"--figure {name}`.", "",
             f"![capsules]({path.name})", ""]
    if samples[0].part is not None:
        lines += ["Each decoded point takes the part of its nearest input point; a capsule's majority part "
                  "groups it, its purity is the share of its points in that part.", "",
                  "| shape | Chamfer x 1e-3 | purity | capsules by majority part |", "|---|---:|---:|---|"]
        lines += [f"| {s.title.split(':')[0]} | {s.chamfer * 1e3:.3f} | {s.purity:.3f} | "
                  f"{s.describe_groups()} |" for s in samples]
    else:
        lines += ["| shape | Chamfer x 1e-3 |", "|---|---:|"]
        lines += [f"| {s.title.split(':')[0]} | {s.chamfer * 1e3:.3f} |" for s in samples]
    return "\n".join(lines), {}


def _row_panels(sample: CapsuleSample, capsules, max_capsules: int, size: float) -> list[tuple[list, str]]:
    """(drawables, title) of every panel of one row; ``size``: point size in pixels."""
    def drawn(coloring: str, capsule: int = 0) -> list[dict]:
        return capsule_scene(sample, coloring=coloring, capsule=capsule, layout="reconstruction",
                             point_size=size).geometries

    parts = sample.part is not None
    if parts:
        inp = capsule_scene(sample, coloring="parts", layout="input", point_size=size).geometries
    else:
        inp = [{"name": "input", "geometry": point_cloud(sample.pos, GREY), "point_size": size}]
    out = [(inp, f"input ({sample.pos.shape[0]} points)" + (",\ntrue parts" if parts else "")),
           (drawn("capsules"), f"reconstruction: {sample.num_capsules} capsules\n"
                               f"CD {sample.chamfer * 1e3:.2f} x 1e-3")]
    if parts:
        out.append((drawn("parts"), f"capsules by majority part\npurity {sample.purity:.3f}"))
    shown = sample.capsule_order()[:max_capsules] if capsules is None else \
        [sample.check_capsule(c) for c in capsules]
    out += [(drawn("capsule", c), sample.describe_capsule(c).replace(", ", "\n", 1)) for c in shown]
    return out


def _row_label(session: CapsuleSession, sample: CapsuleSample, count: int, position: int) -> str:
    if count == 1:
        return sample.title.split(":")[0]
    return f"({'abcdefgh'[position % 8]}) {session.routing}\n{sample.title.split(':')[0]}"


def _title(sessions: list[CapsuleSession]) -> str:
    what = " vs ".join(f"{s.routing} ({model_label(s.config)}, {s.checkpoint.name})" for s in sessions)
    same = " on the same shapes" if len(sessions) > 1 else ""
    return f"Latent capsules of {what}{same}: the points one capsule decodes in red, the rest grey"


def _caption(samples: list[CapsuleSample], sessions: list[CapsuleSession], capsules,
             max_capsules: int) -> str:
    lines = []
    if samples[0].part is not None:
        k = len(sessions)  # rows cycle through the sessions
        means = ", ".join(f"{s.routing} {np.mean([x.purity for x in samples[j::k]]):.3f}"
                          for j, s in enumerate(sessions))
        lines.append("Each decoded point takes the part of its nearest input point; a capsule's purity is "
                     "the share of its points in its majority part. Mean purity over the shapes shown: "
                     f"{means}.")
    else:
        lines.append("No part labels in this dataset (data.dataset=shapenet_part has them): capsules not "
                     "grouped by part.")
    lines += [f"{s.routing}: {s.scores_line()}." for s in sessions if s.scores_line()]
    most = max(s.num_capsules for s in samples)
    if capsules is None and most > max_capsules:
        lines.append(f"Capsule panels: the first {max_capsules} of up to {most} capsules per shape, grouped "
                     "by majority part.")
    return "\n".join(lines)
