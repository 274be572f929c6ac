"""Fixtures shared by the bench tests."""

import pytest

from pointabstract.bench.comparison import Comparison
from tests.fixtures import tiny_sizes, write_tiny_synthetic


@pytest.fixture(scope="module")
def tiny_cls(tmp_path_factory):
    """A two-variant classification comparison (centroid attention vs the FPS subset) at tiny sizes,
    with an A/A control, on a tiny synthetic set: seconds per run."""
    root = write_tiny_synthetic(tmp_path_factory.mktemp("synth"))
    base = {"task": "classification", "data.dataset": "modelnet40", "data.root": str(root), "data.num_points": 64,
            "data.batch_size": 8, "data.eval_batch_size": 16, "data.workers": 0, "optim.epochs": 10**6,
            "log.eval_every": 10**6}
    return Comparison("a claim", {"ca": {"model": "centroid_transformer", **tiny_sizes("centroid_transformer")},
                                  "fps": {"model": "ct_fps_only", **tiny_sizes("ct_fps_only")}},
                      method="ca", metric="overall_accuracy", mode="max", unit="steps", budgets=(1, 2, 20),
                      base=base, control="fps", extra=("mean_class_accuracy",))
