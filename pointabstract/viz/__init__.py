"""What a trained model groups together, shown: scenes, offscreen PNGs, report figures, the viewer.

- :mod:`.core`: the shared rendering core (renderers and their worker, the software splatter,
  point clouds, colours, panel titles, figure composition, the window, checkpoint restoring);
  it imports no task.
- one subpackage per task, each with the same files: ``session.py`` (checkpoint -> what one
  sample shows), ``scenes.py`` (the panels), ``figures.py`` (report figure, eval section) and
  ``app.py`` (the viewer state and keys), and ``html.py`` (the same sample as data for the
  browser page that :mod:`.core.html` writes):
  :mod:`.classification` (feature-space vs 3D neighbourhoods of a query point, with
  ``part_agreement.py`` and ``neighbourhood_text.py``), :mod:`.capsules` (a capsule
  autoencoder's input vs reconstruction by latent capsule, the Fig. 5 figure) and
  :mod:`.segmentation` (true vs predicted parts, the tree levels as clusters).
- :mod:`.tasks`: the per-task dispatch (a checkpoint's task -> its session, state, ``--figure``
  and ``--png`` writers, options); it imports the tasks, never the other way.
- :mod:`.cli`: ``pointabstract view``; :mod:`.context_pool_view`: the ``--context-pool`` view of
  any ContextPool model.

Open3D is imported only when a geometry is built or rendered.
"""

from .._lazy import lazy_exports

# name -> submodule; loaded on first use, so that importing pointabstract.viz (as the render
# worker process does) costs nothing beyond numpy
_EXPORTS = {
    "ScalarLegend": "core.colors", "class_palette": "core.colors", "label_colors": "core.colors",
    "legend_image": "core.colors", "part_legend": "core.colors", "part_palette": "core.colors",
    "scalar_colors": "core.colors",
    "point_cloud": "core.geometry",
    "Camera": "core.render", "RenderError": "core.render", "Renderer": "core.render",
    "png_backend": "core.render", "render_panels_png": "core.render", "render_png": "core.render",
    "save_png": "core.render", "start_xvfb": "core.render",
    "BACKENDS": "core.backends",
    "splat": "core.software",
    "SESSIONS": "tasks", "load_session": "tasks",
    "SampleView": "classification.session", "ViewSession": "classification.session",
    "NeighbourhoodScene": "classification.scenes", "block_output": "classification.scenes",
    "default_block": "classification.scenes", "default_k": "classification.scenes",
    "feature_knn": "classification.scenes", "highlight_colors": "classification.scenes",
    "neighbourhood_scene": "classification.scenes", "query_marker": "classification.scenes",
    "xyz_knn": "classification.scenes",
    "NeighbourhoodReport": "classification.figures", "contrasting_queries": "classification.figures",
    "neighbourhood_figure": "classification.figures", "neighbourhood_report": "classification.figures",
    "neighbourhood_section": "classification.figures",
    "chance_agreement": "classification.part_agreement",
    "neighbour_agreement": "classification.part_agreement",
    "open_part_dataset": "classification.part_agreement", "part_agreement": "classification.part_agreement",
    "CapsuleSample": "capsules.session", "CapsuleSession": "capsules.session",
    "capsule_colors": "capsules.scenes", "capsule_scene": "capsules.scenes",
    "shared_camera": "capsules.scenes",
    "capsule_figure": "capsules.figures", "capsule_section": "capsules.figures",
    "CapsuleViewerState": "capsules.app",
    "SegSession": "segmentation.session", "load_seg_session": "segmentation.session",
    "tree_clusters": "segmentation.session",
    "segmentation_panels": "segmentation.scenes",
    "segmentation_figure": "segmentation.figures", "segmentation_section": "segmentation.figures",
    "SegViewerState": "segmentation.app",
}
__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
