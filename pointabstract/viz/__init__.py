"""What a trained model groups together, shown: scenes, offscreen PNGs, report figures, the viewer.

- :mod:`.colors`: fixed class / part palettes, scalar colour maps and their legends.
- :mod:`.scenes`: coloured Open3D geometries (feature-space vs 3D-space KNN of a query point).
- :mod:`.render`: offscreen rendering to PNG with no display and no GPU; :mod:`.backends`: the
  renderers it falls back through (a stuck one is given up in seconds); :mod:`.software`: the
  numpy splatter that always works.
- :mod:`.loading`: checkpoint -> model, dataset and one sample's per-block features.
- :mod:`.figures`: the multi-panel neighbourhood figure and report section; :mod:`.part_agreement`:
  how often feature-space vs 3D neighbours share a point's part (the figure's numbers).
- :mod:`.capsule_view`, :mod:`.capsule_scenes`, :mod:`.capsule_app`, :mod:`.capsule_figures`: the
  same for capsule autoencoders: input vs reconstruction by latent capsule, the Fig. 5 figure.
- :mod:`.app` / :mod:`.window` / :mod:`.cli`: the viewer states, its Open3D window and ``pointabstract view``;
  :mod:`.panel_titles` (what each ``--png`` panel shows, from the state) and
  :mod:`.figure_compose` (panels joined under their titles) make its titled PNGs.
- :mod:`.segmentation_view` (loading, tree clusters), :mod:`.segmentation_scenes` (panels),
  :mod:`.segmentation_app` (keys, ``--png``), :mod:`.segmentation_figures` (figure, eval section):
  part-segmentation checkpoints, true vs predicted parts and the tree levels as clusters.

Open3D is imported only when a geometry is built or rendered.
"""

import importlib

# name -> submodule; loaded on first use, so that importing pointabstract.viz (as the render
# worker process does) costs nothing beyond numpy
_EXPORTS = {
    "ScalarLegend": "colors", "class_palette": "colors", "label_colors": "colors",
    "legend_image": "colors", "part_legend": "colors", "part_palette": "colors",
    "scalar_colors": "colors",
    "NeighbourhoodReport": "figures", "contrasting_queries": "figures", "neighbourhood_figure": "figures",
    "neighbourhood_report": "figures", "neighbourhood_section": "figures",
    "chance_agreement": "part_agreement", "neighbour_agreement": "part_agreement",
    "open_part_dataset": "part_agreement", "part_agreement": "part_agreement",
    "SESSIONS": "loading", "SampleView": "loading", "ViewSession": "loading", "load_session": "loading",
    "CapsuleSample": "capsule_view", "CapsuleSession": "capsule_view", "CapsuleViewerState": "capsule_app",
    "capsule_colors": "capsule_scenes", "capsule_scene": "capsule_scenes", "shared_camera": "capsule_scenes",
    "capsule_figure": "capsule_figures", "capsule_section": "capsule_figures",
    "Camera": "render", "Renderer": "render", "RenderError": "render", "png_backend": "render",
    "render_panels_png": "render", "render_png": "render", "save_png": "render", "start_xvfb": "render",
    "BACKENDS": "backends", "splat": "software",
    "NeighbourhoodScene": "scenes", "block_output": "scenes", "default_block": "scenes",
    "default_k": "scenes", "feature_knn": "scenes", "highlight_colors": "scenes",
    "neighbourhood_scene": "scenes", "point_cloud": "scenes", "query_marker": "scenes",
    "xyz_knn": "scenes",
    # part segmentation: predicted vs true parts, tree clusters
    "SegSession": "segmentation_view", "load_seg_session": "segmentation_view",
    "tree_clusters": "segmentation_view", "SegViewerState": "segmentation_app",
    "segmentation_figure": "segmentation_figures", "segmentation_section": "segmentation_figures",
    "segmentation_panels": "segmentation_scenes",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'pointabstract.viz' has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)


def __dir__():
    return sorted([*globals(), *_EXPORTS])
