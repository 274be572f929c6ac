import argparse
import re

import pytest

from pointabstract.bench import BENCHES, bench_module
from pointabstract.bench.contextpool import (
    HOSTS,
    VARIANTS,
    add_arguments,
    format_table,
    main,
    measure_cost,
    train_eval,
)
from pointabstract.bench.seeds import summarise
from tests.fixtures import write_tiny_synthetic


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return str(write_tiny_synthetic(tmp_path_factory.mktemp("synthetic"), n=256))


def test_registered():
    assert BENCHES["contextpool"] == "pointabstract.bench.contextpool"
    assert bench_module("contextpool").main is main


def test_train_eval_trains_through_the_engine(data, tmp_path):
    import json

    from pointabstract.engine import load_checkpoint

    out = train_eval("segmenter", "cp", 0, data=data, steps=3, out=tmp_path / "run", tiny=True)
    ckpt = load_checkpoint(tmp_path / "run" / "last.pt")
    assert out["steps"] == ckpt["step"] == 3 and out["metric"] == ckpt["metrics"]["instance_miou"]
    assert ckpt["model_name"] == "softmax_seg_demo" and ckpt["config"]["model.context_pool"] is True
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert rows[-1]["step"] == 3 and rows[-1]["lr"] == pytest.approx(0, abs=1e-12)  # cosine over the 3 steps
    assert train_eval("segmenter", "cp", 0, data=data, steps=3, out=tmp_path / "run", tiny=True) == out  # seeded


@pytest.mark.slow  # about 10 s: a 256-point synthetic set and two tiny trainings
@pytest.mark.parametrize("host", list(HOSTS))
def test_train_eval_and_cost_at_tiny_size(host, data, tmp_path):
    out = train_eval(host, "fewer_cp", 0, data=data, steps=2, out=tmp_path / "run", tiny=True)
    assert out["steps"] == 2 and 0.0 <= out["metric"] <= 1.0
    full, fewer = (measure_cost(host, v, data=data, repeats=1, tiny=True) for v in ("cp", "fewer_cp"))
    assert full["params"] > fewer["params"] > 0 and full["ms"] > 0


def test_variants_reach_the_model(data):
    from pointabstract.bench.contextpool import _config

    cfg = _config("segmenter", "fixed_window", data, 3)
    assert cfg.seed == 3 and cfg.model_config().context_pool_locality == "fixed"
    assert _config("classifier", "none", data, 0).model_config().context_pool is False
    assert list(_config("classifier", "fewer_cp", data, 0).model_config().widths) == [32, 64]
    with pytest.raises(ValueError, match=r"variant must be one of .*got 'big'"):
        _config("classifier", "big", data, 0)


def test_table_marks_differences_beyond_the_seed_spread():
    rows = [{"variant": "none", "metric": m} for m in (0.50, 0.52)] + \
           [{"variant": "cp", "metric": m} for m in (0.70, 0.72)] + \
           [{"variant": "uniform", "metric": m} for m in (0.51, 0.69)]
    costs = {"none": {"params": 100, "ms": 10.0, "peak_mb": 20.0},
             "cp": {"params": 110, "ms": 12.0, "peak_mb": 30.0}, "uniform": {"error": "out of memory"}}
    table = format_table("classifier", summarise(rows, ["metric"]), costs)
    cp = next(line for line in table.splitlines() if line.startswith("| cp "))
    assert "beyond spread" in cp and "110 (+10 %)" in cp and "12 (+20 %)" in cp and "30 (+50 %)" in cp
    assert "79.9" in cp  # the paper's Table 2 number beside ours
    uniform = next(line for line in table.splitlines() if line.startswith("| uniform "))
    assert uniform.count("within spread") == 2 and "out of memory" in uniform
    assert set(VARIANTS) >= {"none", "cp", "uniform", "nl", "unnormalised", "no_locality", "fixed_window",
                             "paper_sizes", "mlp_mapping", "fewer_cp"}


@pytest.mark.slow  # fresh processes for the cost columns
def test_main_writes_the_results(data, tmp_path, capsys):
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["--data", data, "--tiny", "--seeds", "1", "--steps", "1",
                              "--variants", "none", "cp", "--hosts", "segmenter", "--repeats", "1",
                              "--out-dir", str(tmp_path), "--runs", str(tmp_path / "runs")])
    assert main(args) == 0
    assert (tmp_path / "contextpool_1steps_1seeds.md").is_file()
    assert (tmp_path / "runs" / "segmenter" / "cp" / "seed0" / "last.pt").is_file()
    assert "| cp | 1 |" in capsys.readouterr().out


def test_cost_table_gives_overheads_over_none_and_errors():
    from pointabstract.bench.contextpool import format_costs

    costs = {"none": {"params": 100, "ms": 10.0, "ms_median": 12.0, "peak_mb": 50.0},
             "cp": {"params": 102, "ms": 15.0, "ms_median": 16.0, "peak_mb": 75.0},
             "nl": {"error": "timeout after 900 s"}}
    lines = format_costs(costs).splitlines()
    assert lines[2] == "| none | 100 (+0 %) | 10 (+0 %) | 12 | 50 (+0 %) |"
    assert lines[3] == "| cp | 102 (+2 %) | 15 (+50 %) | 16 | 75 (+50 %) |"
    assert lines[4] == "| nl | timeout after 900 s | - | - | - |"


@pytest.mark.parametrize("argv, match", [
    (["--seeds", "0"], r"--seeds must be a positive int \(training runs per variant\), got 0"),
    (["--steps", "0"], r"--steps must be a positive int, got 0"),
    (["--repeats", "0"], r"--repeats must be a positive int, got 0"),
])
def test_an_empty_selection_is_refused_before_any_work(argv, match, tmp_path, capsys, monkeypatch):
    from pointabstract.bench import measure
    from pointabstract.cli import main as cli

    (tmp_path / "contextpool_0steps_3seeds.md").write_text("# previous\n")
    before = {p: p.read_bytes() for p in tmp_path.iterdir()}

    def work(*args, **kwargs):
        raise AssertionError("work started")

    monkeypatch.setattr(measure, "run_isolated", work)
    assert cli(["bench", "contextpool", *argv, "--out-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert re.fullmatch("error: " + match + "\n", err), err
    assert {p: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_an_out_dir_under_a_file_is_refused_before_any_work(tmp_path, capsys, monkeypatch):
    from pointabstract.bench import measure
    from pointabstract.cli import main as cli

    (tmp_path / "file").write_text("x")

    def work(*args, **kwargs):
        raise AssertionError("work started")

    monkeypatch.setattr(measure, "run_isolated", work)
    assert cli(["bench", "contextpool", "--out-dir", str(tmp_path / "file")]) == 2
    assert re.fullmatch(r"error: --out-dir .*file/contextpool_60steps_3seeds.md: folder .*file is a file, "
                        r"not a folder\n", capsys.readouterr().err)
