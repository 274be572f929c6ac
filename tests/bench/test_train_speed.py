"""bench train: FLOPs, time and share of the matmul peak of a real training step."""

import argparse
import json

import pytest

from pointabstract.bench import train_speed
from pointabstract.bench.train_speed import CONFIGS, categorise, main, measure_config
from tests.fixtures import tiny_sizes, write_tiny_synthetic


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return write_tiny_synthetic(tmp_path_factory.mktemp("synth"))


def test_categories_of_profiler_op_names():
    assert categorise("aten::bmm") == categorise("aten::addmm") == "matmul / conv"
    assert categorise("aten::_softmax") == "attention softmax"
    assert categorise("aten::index_select") == categorise("aten::gather") == "gather / scatter"
    assert categorise("aten::topk") == "knn / top-k / sort"
    assert categorise("aten::native_batch_norm") == "norms"
    assert categorise("aten::_foreach_add_") == "optimiser"
    assert categorise("aten::relu") == "element-wise"
    assert categorise("cudaLaunchKernel") == "other ops"
    assert categorise("_NeighbourDotBackward") == "neighbour attention (compiled kernels)"


def test_the_flops_of_a_linear_model_are_counted_exactly(root):
    # the classifier's FLOPs grow linearly with the batch: counted, not estimated
    over = {"data.root": str(root), "data.num_points": 64, **tiny_sizes("centroid_transformer")}
    one = measure_config("demo", repeats=1, overrides={**over, "data.batch_size": 2}, peak_gflops=100.0)
    two = measure_config("demo", repeats=1, overrides={**over, "data.batch_size": 4}, peak_gflops=100.0)
    assert two["gflop_fwd_bwd"] == pytest.approx(2 * one["gflop_fwd_bwd"], rel=1e-6)
    assert one["share_of_peak"] == pytest.approx(one["achieved_gflops"] / 100.0)
    assert one["batch"] == 2 and one["points"] == 64 and one["samples_per_s"] > 0


def test_main_writes_the_records_with_a_profile(root, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(CONFIGS, "demo", ("demo", {"data.num_points": 64, "data.batch_size": 4, **tiny_sizes("centroid_transformer")}))
    monkeypatch.setattr(train_speed, "matmul_peak", lambda: 50.0)
    args = argparse.Namespace(configs=["demo"], repeats=1, profile=True, data=str(root),
                              results=str(tmp_path / "bench"))
    assert main(args) == 0
    md = (tmp_path / "bench" / "train_speed.md").read_text()
    assert "| demo | centroid_transformer | 4 x 64 |" in md and "## Where a step's time goes" in md
    assert "| matmul / conv |" in md
    rows = json.loads((tmp_path / "bench" / "train_speed.json").read_text())["rows"]
    assert rows[0]["matmul_peak_gflops"] == 50.0 and sum(rows[0]["profile_s"].values()) > 0


def test_zero_repeats_are_refused_before_any_work(tmp_path):
    args = argparse.Namespace(configs=["demo"], repeats=0, profile=False, data=None, results=str(tmp_path))
    with pytest.raises(ValueError, match=r"--repeats must be a positive int, got 0"):
        main(args)
    assert not list(tmp_path.iterdir())
