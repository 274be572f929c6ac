"""report.md of each task, pinned line by line on fixed metrics (the header every task shares,
the task's own section, the figure sections handed in)."""

import json

import pytest

from pointabstract.engine import load_config, write_report
from pointabstract.engine.tasks import build_task

CLASSIFICATION = {"overall_accuracy": 0.75, "mean_class_accuracy": 0.625,
                  "per_class_accuracy": {"sphere": 1.0, "square": 0.25, "line": None},
                  "confusion": [[2, 0, 0], [3, 1, 0], [0, 0, 0]], "class_names": ["sphere", "square", "line"],
                  "samples": 6, "votes": 3, "model": "centroid_transformer", "checkpoint": "runs/x/best.pt",
                  "epoch": 7, "data_root": "datasets/synthetic"}
RECONSTRUCTION = {"chamfer": 0.0123456, "fscore": 0.5, "fscore_threshold": 0.05,
                  "per_category_chamfer": {"Airplane": 0.01, "Bag": None, "Cap": 0.0146912},
                  "samples": 4, "purity": 0.8125, "model": "capsule_ae_demo_ca",
                  "capsule_parts": {"parts": [0, 6], "counts": [[3, 1], [0, 4]]},
                  "chamfer_units": "squared Euclidean, unit-sphere radii; mean per direction, summed"}
PARTS = {"instance_miou": 0.5, "class_miou": 0.375,
         "per_category": {"Airplane": 0.75, "Bag": None, "Cap": 0.0},
         "shapes_per_category": {"Airplane": 2, "Bag": 0, "Cap": 1}, "samples": 3, "model": "sequoia_seg_demo"}


def _task(model):
    cfg = load_config(None, [f"model={model}"])
    return build_task(cfg)


def _report(model, metrics, out):
    write_report(metrics, out, task=_task(model), sections=["## Extra\n\ntext", ""])
    assert json.loads((out / "metrics.json").read_text()) == metrics
    return (out / "report.md").read_text().splitlines()


def test_classification_report(tmp_path):
    assert _report("centroid_transformer", CLASSIFICATION, tmp_path) == [
        "# Evaluation of centroid_transformer", "",
        "- checkpoint `runs/x/best.pt`, epoch 7, data `datasets/synthetic`",
        "- task: classification; test overall accuracy 0.7500, mean class accuracy 0.6250", "",
        "- 6 test shapes, 3 vote(s)",
        "- **overall accuracy 0.7500**, mean class accuracy 0.6250", "",
        "![confusion matrix](confusion.png)", "",
        "| class | accuracy |", "|---|---:|", "| sphere | 1.000 |", "| square | 0.250 |", "| line | n/a |", "",
        "## Extra", "", "text"]
    assert (tmp_path / "confusion.png").stat().st_size > 0


def test_reconstruction_report(tmp_path):
    assert _report("capsule_ae_demo_ca", RECONSTRUCTION, tmp_path) == [
        "# Evaluation of capsule_ae_demo_ca", "",
        "- task: reconstruction; test Chamfer distance 12.346 x 1e-3 (squared L2), F-score@0.05 0.500, "
        "capsule part purity 0.812", "",
        "- 4 test shapes, normalised to the unit sphere",
        "- **Chamfer distance 12.346 x 1e-3** (squared Euclidean distances, mean per direction, directions "
        "summed; pytorch3d / 3D-PointCapsNet convention)",
        "- F-score at distance 0.05 (unit-sphere radii): 0.500",
        "- capsule part purity 0.812 (decoded points take the part of their nearest input point)", "",
        "| category | Chamfer x 1e-3 |", "|---|---:|", "| Airplane | 10.000 |", "| Cap | 14.691 |", "",
        "## Extra", "", "text"]


def test_part_segmentation_report(tmp_path):
    (tmp_path / "curves.png").write_bytes(b"png")  # a run folder's curves are embedded
    assert _report("sequoia_seg_demo", PARTS, tmp_path) == [
        "# Evaluation of sequoia_seg_demo", "",
        "- task: part_segmentation; test instance mIoU 0.500 (class mIoU 0.375, 3 shapes)", "",
        "## Part segmentation", "",
        "Instance mIoU **0.5000**, class mIoU **0.3750** over 3 test shapes (logits restricted to each "
        "shape's category).", "",
        "| category | shapes | mIoU |", "|---|---:|---:|", "| Airplane | 2 | 0.7500 |", "| Cap | 1 | 0.0000 |", "",
        "![per-category IoU](part_iou.png)", "",
        "## Training curves", "", "![training curves](curves.png)", "",
        "## Extra", "", "text"]
    assert (tmp_path / "part_iou.png").stat().st_size > 0


@pytest.mark.parametrize("model, metrics", [("centroid_transformer", CLASSIFICATION), ("capsule_ae_demo_ca", RECONSTRUCTION),
                                            ("sequoia_seg_demo", PARTS)])
def test_the_summary_needs_only_the_metrics(model, metrics):
    from pointabstract.engine.tasks import task_class

    task = _task(model)
    assert task_class(task.name).summary(metrics) == task.summary(metrics)  # the CLI builds no task for it
