"""The comparison benchmark's plumbing (its numbers come from `pointabstract bench parts`) and
the part-segmentation demo preset."""

import argparse

import pytest

from pointabstract.bench import BENCHES, bench_module
from pointabstract.bench import parts as bench
from pointabstract.engine import load_checkpoint, load_config
from pointabstract.engine.config import check_config
from pointabstract.models import MODELS
from tests.fixtures import tiny_sizes, write_tiny_synthetic


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return write_tiny_synthetic(tmp_path_factory.mktemp("tiny"), n=64)


def test_registered_and_pairs_exist():
    assert bench_module("parts") is bench and "parts" in BENCHES
    for pairs, task in ((bench.SEG_PAIRS, "part_segmentation"), (bench.CLS_PAIRS, "classification")):
        for pair in pairs.values():
            assert all(MODELS[name].task == task for name in pair)
    assert all(MODELS[name].task == "classification" for extra in bench.CLS_EXTRA.values() for name in extra)


@pytest.mark.parametrize("size", ["demo", "paper"])
def test_pairs_differ_only_in_attention(size):
    # the paper's comparison: one network, tree vs dense softmax attention (not
    # self_attention_transformer, another network)
    for pairs in (bench.SEG_PAIRS, bench.CLS_PAIRS):
        sequoia, baseline = (MODELS[name] for name in pairs[size])
        assert sequoia.factory is baseline.factory
        assert {**sequoia.defaults, "attention": "softmax"} == baseline.defaults
        assert sequoia.defaults.get("attention", "sequoia") == "sequoia"


@pytest.fixture(scope="module")
def seg_run(tiny, tmp_path_factory):
    out = tmp_path_factory.mktemp("runs")
    spend = bench.budget(epochs=1, points=64, batch=8, lr=1e-3)
    row = bench.run_seg("sequoia_seg", 0, root=str(tiny), train_budget=spend, out_root=str(out),
                        model_args=tiny_sizes("sequoia_seg"))
    return row, out


def test_segmentation_run(seg_run):
    seg, out = seg_run
    assert 0 <= seg["instance_miou"] <= 100 and 0 <= seg["class_miou"] <= 100 and seg["samples_per_s"] > 0
    ckpt = load_checkpoint(out / "sequoia_seg" / "seed0" / "last.pt")
    assert ckpt["config"]["data.num_points"] == 64 and ckpt["config"]["optim.epochs"] == 1
    assert ckpt["config"]["data.root"].endswith("tiny0") and ckpt["config"]["model.dim"] == 8
    assert seg["params_m"] == pytest.approx(sum(t.numel() for t in ckpt["model"].values()) / 1e6)


def test_classification_run(tiny, tmp_path):
    spend = bench.budget(epochs=1, points=64, batch=8, lr=1e-3)
    cls = bench.run_cls("self_attention_transformer", 0, root=str(tiny), train_budget=spend,
                        out_root=str(tmp_path), model_args={**bench.MODEL_ARGS["demo"]["self_attention_transformer"],
                                                            "model.widths": [8, 16, 16, 24], "model.fuse_dim": 16})
    assert 0 <= cls["overall_accuracy"] <= 100 and 0 <= cls["mean_class_accuracy"] <= 100
    ckpt = load_checkpoint(tmp_path / "self_attention_transformer" / "seed0" / "last.pt")
    assert ckpt["config"]["model.k"] is None and ckpt["config"]["task"] == "classification"


def test_real_data_rows_and_floor(seg_run, realdata):
    _, out = seg_run
    root = str(realdata / "shapenetcore_partanno_segmentation_benchmark_v0_normal")
    rows, line = bench.real_data(str(out), ("sequoia_seg",), 1, root)
    assert [(r["variant"], r["seed"]) for r in rows] == [("sequoia_seg", 0)]
    assert 0 <= rows[0]["instance_miou"] <= 100 and rows[0]["instance_miou"] == rows[0]["class_miou"]
    assert "shapes per category: Cap 11" in line
    assert (out / "real_data" / "sequoia_seg" / "seed0" / "report.md").is_file()
    parts, score = bench.constant_baseline(root)
    assert set(parts) == {"Cap"} and parts["Cap"] in (6, 7) and 0 < score < 100
    assert f"instance mIoU {score:.1f}" in line


def test_arguments_and_bad_values():
    parser = argparse.ArgumentParser()
    bench.add_arguments(parser)
    args = parser.parse_args(["--seeds", "0"])
    assert args.size == "demo" and args.epochs == 2 and args.tasks == ["seg", "cls"]
    with pytest.raises(ValueError, match="--seeds must be a positive int, got 0"):
        bench.main(args)
    with pytest.raises(ValueError, match="--real-data-only needs --real-data ROOT"):
        bench.main(parser.parse_args(["--real-data-only"]))


def test_parts_demo_preset():
    cfg = load_config("parts_demo")
    check_config(cfg)
    assert cfg.model == "sequoia_seg_demo" and cfg.task == MODELS[cfg.model].task == "part_segmentation"
    assert cfg.log.out_dir == "runs/demo/parts" and cfg.data.dataset == "shapenet_part"
