"""The viewer package's layout: a rendering core, one subpackage per task, the dispatch on top,
no import circle (imports inside functions count too), and every documented import path works."""

import importlib
from pathlib import Path

import pytest

import pointabstract.viz as viz
from tests.import_graph import find_cycle, import_graph

VIZ = Path(viz.__file__).parent
TASKS = ("classification", "capsules", "segmentation")

# the names `from pointabstract.viz import ...` offered before the package was split by task
DOCUMENTED = [
    "BACKENDS", "Camera", "CapsuleSample", "CapsuleSession", "CapsuleViewerState", "NeighbourhoodReport",
    "NeighbourhoodScene", "RenderError", "Renderer", "SESSIONS", "SampleView", "ScalarLegend", "SegSession",
    "SegViewerState", "ViewSession", "block_output", "capsule_colors", "capsule_figure", "capsule_scene",
    "capsule_section", "chance_agreement", "class_palette", "contrasting_queries", "default_block", "default_k",
    "feature_knn", "highlight_colors", "label_colors", "legend_image", "load_seg_session", "load_session",
    "neighbour_agreement", "neighbourhood_figure", "neighbourhood_report", "neighbourhood_scene", "neighbourhood_section",
    "open_part_dataset", "part_agreement", "part_legend", "part_palette", "png_backend", "point_cloud",
    "query_marker", "render_panels_png", "render_png", "save_png", "scalar_colors", "segmentation_figure",
    "segmentation_panels", "segmentation_section", "shared_camera", "splat", "start_xvfb", "tree_clusters",
    "xyz_knn",
]


def test_find_cycle_sees_a_circle_through_a_function_level_import(tmp_path):
    (tmp_path / "__init__.py").write_text("")
    (tmp_path / "loading.py").write_text("def f():\n    from .capsule_view import CapsuleSession\n")
    (tmp_path / "capsule_view.py").write_text("from .loading import checked_item\n")
    (tmp_path / "colors.py").write_text("")
    graph = import_graph(tmp_path)
    assert graph["loading"] == {"capsule_view"} and graph["capsule_view"] == {"loading"}
    assert find_cycle(graph) == ["capsule_view", "loading", "capsule_view"]
    (tmp_path / "capsule_view.py").write_text("from . import colors\n")
    assert find_cycle(import_graph(tmp_path)) is None


def test_viz_has_no_import_circle():
    assert find_cycle(import_graph(VIZ)) is None


def test_the_core_imports_no_task_and_no_task_imports_another_or_the_dispatch():
    for module, targets in import_graph(VIZ).items():
        layer = module.split(".")[0]
        for target in targets:
            top = target.split(".")[0]
            if layer == "core":
                assert top == "core", f"{module} (rendering core) imports {target}"
            elif layer in TASKS:
                assert top in ("core", layer), f"{module} (task {layer}) imports {target}"


@pytest.mark.parametrize("task", TASKS)
def test_each_task_holds_the_same_files(task):
    assert {"__init__.py", "session.py", "scenes.py", "figures.py", "app.py", "html.py"} <= {
        p.name for p in (VIZ / task).glob("*.py")}


def test_the_dispatch_covers_the_same_tasks_everywhere():
    from pointabstract.viz import tasks

    assert set(tasks.SESSIONS) == set(tasks.STATES) == set(tasks.FIGURES) == set(tasks.OPTIONS)
    assert set(tasks.PNGS) <= set(tasks.SESSIONS)


def test_documented_import_paths_work():
    assert set(DOCUMENTED) <= set(viz.__all__)
    namespace = {}
    exec(f"from pointabstract.viz import {', '.join(DOCUMENTED)}", namespace)  # noqa: S102
    assert all(namespace[name] is getattr(viz, name) for name in DOCUMENTED)
    cli = importlib.import_module("pointabstract.viz.cli")
    assert callable(cli.build_parser) and callable(cli.run) and callable(cli.main)  # main: what viz/viewer.py imports
    assert {"FIGURES", "OPTIONS", "PNGS"} <= set(dir(cli))
    from pointabstract.viz.segmentation.figures import segmentation_section  # what `eval` imports

    assert segmentation_section is viz.segmentation_section
