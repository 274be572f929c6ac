"""Metrics that score a model's outputs against the truth, shared by tasks, viewer, predictor and
benchmarks; one concept per file, re-exported here:

- :mod:`.confusion`: :class:`ConfusionMatrix` (classification: overall, mean class and per-class
  accuracy);
- :mod:`.part_iou`: :func:`shape_ious` (per-shape part IoU, the ShapeNetPart protocol) with
  :func:`restrict_to_category` and :func:`check_part_labels`, and :class:`PartIoU` (instance and
  class mIoU);
- :mod:`.reconstruction`: :func:`reconstruction_scores` (per-shape Chamfer distance and F-score)
  and :class:`ReconstructionMeter` (their means, per category too);
- :mod:`.purity`: :func:`capsule_purity` (how well each capsule's decoded points keep to one part)
  and :class:`PurityMeter`.

Each per-shape function has a plain-loop ``*_naive`` reference (tests only). Each meter sums over
batches, :meth:`all_reduce` sums over processes (:func:`~pointabstract.engine.distributed.all_reduce_sum`),
and ``summary`` gives the reported values.
"""

from .confusion import ConfusionMatrix
from .part_iou import (
    PART_MASK,
    PartIoU,
    check_part_labels,
    restrict_to_category,
    shape_ious,
    shape_ious_naive,
)
from .purity import PurityMeter, capsule_purity, capsule_purity_naive
from .reconstruction import ReconstructionMeter, reconstruction_scores, reconstruction_scores_naive

__all__ = ["PART_MASK", "ConfusionMatrix", "PartIoU", "PurityMeter", "ReconstructionMeter", "capsule_purity",
           "capsule_purity_naive", "check_part_labels", "reconstruction_scores",
           "reconstruction_scores_naive", "restrict_to_category", "shape_ious", "shape_ious_naive"]
