"""Scenes of a capsule autoencoder's shape: the input and its reconstruction, coloured by capsule.

Colourings (:data:`COLORINGS`), each giving the input panel and the reconstruction panel their
point colours:

- ``capsule``: one capsule highlighted (red), everything else grey, as in Centroid Transformers
  Fig. 5: on the reconstruction, the points that capsule decoded; on the input, the points
  whose nearest decoded point is one of them (the part of the input the capsule explains).
- ``capsules``: every capsule in its own colour (the input point takes the colour of the
  capsule of its nearest decoded point).
- ``parts`` (part-labelled data only): the reconstruction coloured by each capsule's majority
  part (so capsules of one part form one colour group), the input by its true parts, both in
  the fixed ShapeNetPart palette.

In the ``capsule`` colouring the highlighted points are a drawable of their own, drawn after the
others (``input/capsule``, ``reconstruction/capsule``), so they stay visible where a grey point
lies at the same depth. Panels are drawn separately through one :class:`FramedCamera` that
frames the input and the reconstruction together, so both are seen from the same place at the
same scale.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ... import _validate as V
from ..core.colors import GREY, HIGHLIGHT, class_palette, part_palette
from ..core.geometry import point_cloud
from ..core.render import Camera
from .session import CapsuleSample

__all__ = ["COLORINGS", "LAYOUTS", "CapsuleScene", "FramedCamera", "capsule_colors", "capsule_scene",
           "shared_camera"]

COLORINGS = ("capsule", "capsules", "parts")
LAYOUTS = ("side_by_side", "input", "reconstruction")  # both panels, or one of them


@dataclass(frozen=True)
class FramedCamera(Camera):
    """A :class:`~pointabstract.viz.core.render.Camera` fitted to fixed ``frame`` points (F, 3) instead
    of each panel's own points: panels drawn through it share one viewpoint and scale."""

    frame: np.ndarray | None = field(default=None, compare=False, hash=False, repr=False)

    def matrices(self, points: np.ndarray, width: int, height: int) -> tuple[np.ndarray, np.ndarray]:
        return super().matrices(points if self.frame is None else self.frame, width, height)


def shared_camera(*clouds, tilt: float = 0.35) -> FramedCamera:
    """One camera for several clouds of one shape: facing the first cloud's two largest extents
    (:meth:`Camera.facing`) and framing all of them. clouds: (P_i, 3) arrays or tensors."""
    arrays = [np.asarray(c, dtype=float).reshape(-1, 3) for c in clouds]
    if not arrays:
        raise ValueError("shared_camera needs at least one cloud")
    return FramedCamera.facing(arrays[0], tilt=tilt, frame=np.concatenate(arrays))


def capsule_colors(sample: CapsuleSample, coloring: str, capsule: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Point colours of the input and the reconstruction (see the module docstring).

    Args:
        sample: the shape.
        coloring: one of :data:`COLORINGS` (``parts`` needs part labels).
        capsule: the highlighted capsule (``capsule`` colouring), in [0, L).

    Returns:
        input colours (N, 3) and reconstruction colours (N_out, 3), float64 in [0, 1].
    """
    V.check_choice("coloring", coloring, COLORINGS)
    capsule = sample.check_capsule(capsule)
    n, m = sample.pos.shape[0], sample.points.shape[0]
    if coloring == "capsule":
        inp, out = np.tile(GREY, (n, 1)), np.tile(GREY, (m, 1))
        inp[sample.explained_by == capsule] = HIGHLIGHT
        out[sample.capsule_index == capsule] = HIGHLIGHT
        return inp, out
    if coloring == "capsules":
        palette = class_palette(sample.num_capsules)
        return palette[sample.explained_by], palette[sample.capsule_index]
    if sample.part is None or sample.capsule_parts is None:
        raise ValueError("coloring 'parts' needs per-point part labels (data.dataset=shapenet_part), "
                         "which this dataset does not have")
    palette = part_palette()
    majority = sample.capsule_parts[sample.capsule_index]  # (N_out,) majority part of each point's capsule
    out = np.where((majority >= 0)[:, None], palette[np.maximum(majority, 0)], np.array(GREY))
    return palette[sample.part], out


@dataclass
class CapsuleScene:
    """Drawables of one or two panels (``{"name", "geometry", "point_size"}`` dicts, see
    :mod:`..classification.scenes`) and the point colours they use."""

    geometries: list[dict]
    colors: dict[str, np.ndarray]  # "input" -> (N, 3), "reconstruction" -> (N_out, 3)
    legend: None = None  # no scalar colour bar (the same protocol as NeighbourhoodScene)


def capsule_scene(sample: CapsuleSample, *, coloring: str = "capsule", capsule: int = 0,
                  layout: str = "side_by_side", point_size: float = 6.0, gap: float = 0.25,
                  camera: Camera | None = None) -> CapsuleScene:
    """The input and / or the reconstruction of one shape as coloured point clouds.

    Args:
        sample: the shape.
        coloring: one of :data:`COLORINGS`. capsule: the highlighted capsule.
        layout: ``side_by_side`` (the reconstruction to the right of the input, shifted along
            ``camera``'s right so both sit at the same depth), ``input`` or ``reconstruction``.
        point_size: rendered point size in pixels. gap: space between the two, a fraction of the width.
        camera: the camera the side-by-side scene is seen through (default: :class:`Camera`).

    Returns:
        A :class:`CapsuleScene`.
    """
    V.check_choice("layout", layout, LAYOUTS)
    V.check_float("gap", gap, low=0.0)
    inp, out = capsule_colors(sample, coloring, capsule)
    pos, points = sample.pos.double().numpy(), sample.points.double().numpy()
    shift = np.zeros(3)
    if layout == "side_by_side":
        right = (camera or Camera()).right
        both = np.concatenate([pos, points])
        shift = right * (np.ptp(both @ right) * (1 + gap) + 1e-6)
    one = coloring == "capsule"  # the highlighted points drawn last: on top of equally deep grey ones
    geometries = []
    if layout in ("side_by_side", "input"):
        geometries += _panel("input", pos, inp, sample.explained_by == capsule if one else None, point_size)
    if layout in ("side_by_side", "reconstruction"):
        geometries += _panel("reconstruction", points + shift, out, sample.capsule_index == capsule if one
                             else None, point_size)
    return CapsuleScene(geometries, {"input": inp, "reconstruction": out})


def _panel(name: str, xyz: np.ndarray, colors: np.ndarray, highlight, point_size: float) -> list[dict]:
    """One panel's drawables: its points, or (``highlight``: (P,) bool) the other points, then the
    highlighted ones under ``name/capsule`` (the renderers let a later point win a depth tie)."""
    if highlight is None:
        return [{"name": name, "geometry": point_cloud(xyz, colors), "point_size": point_size}]
    out = []
    for label, mask in ((name, ~highlight), (f"{name}/capsule", highlight)):
        if mask.any():
            cloud = point_cloud(xyz[mask], colors[mask])
            out.append({"name": label, "geometry": cloud, "point_size": point_size})
    return out
