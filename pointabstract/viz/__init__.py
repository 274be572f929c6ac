"""What a trained model groups together, shown: scenes, offscreen PNGs, report figures, the viewer.

- :mod:`.colors`: fixed class / part palettes, scalar colour maps and their legends.
- :mod:`.scenes`: coloured Open3D geometries (feature-space vs 3D-space KNN of a query point).
- :mod:`.render`: offscreen rendering to PNG with no display and no GPU.
- :mod:`.loading`: checkpoint -> model, dataset and one sample's per-block features.
- :mod:`.figures`: the multi-panel neighbourhood figure for reports.
- :mod:`.app` / :mod:`.cli`: the interactive viewer and ``pointabstract view``.

Open3D is imported only when a geometry is built or rendered.
"""

from .colors import (
    ScalarLegend,
    class_palette,
    label_colors,
    legend_image,
    part_legend,
    part_palette,
    scalar_colors,
)
from .figures import neighbourhood_figure, neighbourhood_section
from .loading import SampleView, ViewSession, load_session
from .render import Camera, Renderer, RenderError, render_png, start_xvfb
from .scenes import (
    NeighbourhoodScene,
    block_output,
    default_block,
    default_k,
    feature_knn,
    highlight_colors,
    neighbourhood_scene,
    point_cloud,
    query_marker,
    xyz_knn,
)

__all__ = ["Camera", "NeighbourhoodScene", "RenderError", "Renderer", "SampleView", "ScalarLegend",
           "ViewSession", "block_output", "class_palette", "default_block", "default_k", "feature_knn",
           "highlight_colors", "label_colors", "legend_image", "load_session", "neighbourhood_figure",
           "neighbourhood_scene", "neighbourhood_section", "part_legend", "part_palette", "point_cloud",
           "query_marker", "render_png", "scalar_colors", "start_xvfb", "xyz_knn"]
