"""The import paths users and other modules know keep working after a file is split or renamed.

Each row: the old (or package-level) path and the module the name now lives in; both must give
the same object, so code importing either sees one function, one class.
"""

import importlib

import pytest

MOVED = [
    # (where users import it, the name, where it is defined)
    ("pointabstract.engine.tasks.reconstruction", "reconstruction_scores", "pointabstract.engine.metrics"),
    ("pointabstract.engine.tasks.reconstruction", "capsule_purity", "pointabstract.engine.metrics"),
    ("pointabstract.engine.tasks.reconstruction", "capsule_purity_naive", "pointabstract.engine.metrics"),
    ("pointabstract.engine", "ConfusionMatrix", "pointabstract.engine.metrics"),
    ("pointabstract.engine.metrics", "ConfusionMatrix", "pointabstract.engine.metrics.confusion"),
    ("pointabstract.engine.metrics", "reconstruction_scores", "pointabstract.engine.metrics.reconstruction"),
    ("pointabstract.engine.metrics", "capsule_purity", "pointabstract.engine.metrics.purity"),
    ("pointabstract.engine.metrics", "shape_ious", "pointabstract.engine.metrics.part_iou"),
    ("pointabstract.engine.tasks.part_segmentation", "shape_ious", "pointabstract.engine.metrics"),
    ("pointabstract.engine.tasks.part_segmentation", "shape_ious_naive", "pointabstract.engine.metrics"),
    ("pointabstract.engine.tasks.part_segmentation", "restrict_to_category", "pointabstract.engine.metrics"),
    ("pointabstract.engine.tasks.part_segmentation", "check_part_labels", "pointabstract.engine.metrics"),
    ("pointabstract.engine.tasks.part_segmentation", "PartIoU", "pointabstract.engine.metrics"),
    ("pointabstract.engine.tasks", "missing_dataset", "pointabstract.engine.tasks.base"),
    ("pointabstract.data", "prepare_off_cache", "pointabstract.data.datasets.off_cache"),
    ("pointabstract.data.datasets", "prepare_off_cache", "pointabstract.data.datasets.off_cache"),
    ("pointabstract.data", "read_off", "pointabstract.data.datasets.off"),
    ("pointabstract.data.datasets", "write_off", "pointabstract.data.datasets.off"),
    ("pointabstract.data", "point_indices", "pointabstract.data.datasets.sampling"),
    ("pointabstract.data.datasets.modelnet", "point_indices", "pointabstract.data.datasets.sampling"),
    ("pointabstract.data.datasets.modelnet", "SAMPLINGS", "pointabstract.data.datasets.sampling"),
    ("pointabstract.data.datasets.modelnet", "list_folder", "pointabstract.data.datasets.folders"),
    ("pointabstract.data.datasets.modelnet", "read_names", "pointabstract.data.datasets.folders"),
    ("pointabstract.engine.config", "read_preset", "pointabstract.engine.presets"),
    ("pointabstract.engine.config", "preset_path", "pointabstract.engine.presets"),
    ("pointabstract.engine.config", "parse_override", "pointabstract.engine.presets"),
    ("pointabstract.engine.config", "PRESETS", "pointabstract.engine.presets"),
    ("pointabstract.engine.trainer", "ShardSampler", "pointabstract.engine.sampler"),
    ("pointabstract.engine.trainer", "make_loader", "pointabstract.engine.sampler"),
    ("pointabstract.engine.trainer", "build_optimizer", "pointabstract.engine.schedule"),
    ("pointabstract.engine.trainer", "run_epochs", "pointabstract.engine.schedule"),
    # Sequoia's attention: nn/tree_attention.py became nn/sequoia_attention.py
    ("pointabstract.nn", "SequoiaAttention", "pointabstract.nn.sequoia_attention"),
    ("pointabstract.nn", "sequoia_attention_naive", "pointabstract.nn.sequoia_attention_naive"),
]


@pytest.mark.parametrize("where, name, home", MOVED)
def test_moved_names_are_importable_where_users_import_them(where, name, home):
    module = importlib.import_module(where)
    assert getattr(module, name) is getattr(importlib.import_module(home), name)
    if hasattr(module, "__all__") and where.count(".") > 1:  # a module re-exporting declares it
        assert name in module.__all__, f"{where}.__all__ lacks {name}"
