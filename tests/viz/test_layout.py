"""The viewer package's layout: a rendering core, one subpackage per task, the dispatch on top,
no import circle (imports inside functions count too), and every documented import path works."""

import ast
import importlib
from pathlib import Path

import pytest

import pointabstract.viz as viz

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


def module_name(path: Path, root: Path) -> str:
    """``core.render`` for root/core/render.py, ``core`` for root/core/__init__.py, ``""`` for the root's."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_graph(root: Path) -> dict[str, set[str]]:
    """module -> the modules of the package at ``root`` it imports anywhere (top level or inside a
    function); names relative to ``root``, the package's own ``__init__`` is ``""``."""
    modules = {module_name(p, root): p for p in root.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom) or node.level == 0:
                continue  # absolute imports of pointabstract.viz do not occur (relative is the house style)
            parts = package.split(".") if package else []
            if node.level > 1:
                parts = parts[:len(parts) - (node.level - 1)] if node.level - 1 <= len(parts) else None
            if parts is None:
                continue  # above the package: not one of its modules
            base = ".".join([*parts, *(node.module.split(".") if node.module else [])])
            for alias in node.names:
                target = f"{base}.{alias.name}" if base else alias.name
                edges.add(target if target in modules else base)
        graph[name] = {e for e in edges if e in modules and e != name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of ``graph`` (``[a, b, ..., a]``), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    stack: list[str] = []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt):], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


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
    assert {"__init__.py", "session.py", "scenes.py", "figures.py", "app.py"} <= {
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
    assert callable(cli.build_parser) and callable(cli.run)  # what viz/viewer.py imports
    assert {"FIGURES", "OPTIONS", "PNGS"} <= set(dir(cli))
    from pointabstract.viz.segmentation.figures import segmentation_section  # what `eval` imports

    assert segmentation_section is viz.segmentation_section
