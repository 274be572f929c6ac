import argparse
import re

import pytest

from pointabstract.bench.sequoia import LAYERS, add_arguments, fit_exponent, format_table, measure_layer, run


def test_fit_exponent_of_power_laws():
    ns = [4096, 8192, 16384, 32768]
    assert fit_exponent(ns, [n**2 for n in ns]) == pytest.approx(2.0)
    assert fit_exponent(ns, [3 * n for n in ns]) == pytest.approx(1.0)
    assert fit_exponent([4096], [1.0]) is None


@pytest.mark.parametrize("layer", LAYERS)
def test_measure_layer_small(layer):
    row = measure_layer(layer, 300, dim=16, heads=2, repeats=1)
    assert row["ms"] > 0 and row["peak_mb"] >= 0 and row["cpu_ms"] > 0


def test_run_and_table():
    rows = run((128, 256), layers=("sequoia", "dense"), dim=16, heads=2, repeats=1, progress=lambda s: None)
    assert [(r["layer"], r["n"]) for r in rows] == [("sequoia", 128), ("sequoia", 256), ("dense", 128),
                                                    ("dense", 256)]
    table = format_table(rows, fit_from=128)
    assert "| 256 |" in table and "Sequoia, sequential (paper): time" in table
    with pytest.raises(ValueError, match=r"layers must be one of \[.*\], got 'linear'"):
        run((128,), layers=("linear",))


def test_arguments():
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["--ns", "1024", "2048", "--layers", "dense"])
    assert args.ns == [1024, 2048] and args.layers == ["dense"] and args.dim == 128


def test_larger_n_not_run_after_a_failure_and_speedup_line():
    rows = run((256, 128), layers=("knn",), dim=16, heads=2, repeats=1, timeout_s=0.01, progress=lambda s: None)
    assert [r["n"] for r in rows] == [128, 256]
    assert rows[0]["error"].startswith("timeout") and rows[1]["error"].startswith("not run (timeout")
    table = format_table([{"layer": "dense", "n": 128, "ms": 30.0, "peak_mb": 1.0},
                          {"layer": "sequoia", "n": 128, "ms": 3.0, "peak_mb": 1.0}], fit_from=128)
    assert "Sequoia, sequential (paper): 10.0x (wall) at N = 128" in table
    rows = [{"layer": "dense", "n": 128, "ms": 30.0, "cpu_ms": 60.0, "peak_mb": 1.0},
            {"layer": "sequoia", "n": 128, "ms": 3.0, "cpu_ms": 4.0, "peak_mb": 1.0},
            {"layer": "dense", "n": 256, "error": "out of memory"},
            {"layer": "sequoia", "n": 256, "ms": 6.0, "cpu_ms": 8.0, "peak_mb": 2.0}]
    table = format_table(rows, fit_from=128)
    assert "| 256 | 6 / 8 / 2 | out of memory |" in table and "10.0x (wall), 15.0x (CPU) at N = 128" in table
    assert "Sequoia, sequential (paper): time 1.00, CPU time 1.00, memory 1.00 (N = 128..256)" in table


def test_a_run_where_every_size_failed_keeps_the_previous_table(tmp_path, capsys, monkeypatch):
    from pointabstract.bench import sequoia
    from pointabstract.cli import main

    out = tmp_path / "sequoia.md"
    out.write_text("# Sequoia scaling\n\n| previous |\n")
    before = out.read_bytes()
    monkeypatch.setattr(sequoia, "run", lambda *a, **k: [{"layer": "dense", "n": 128, "error": "timeout (1 s)"}])
    assert main(["bench", "sequoia", "--ns", "128", "--layers", "dense", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and re.fullmatch(
        r"error: bench sequoia measured nothing \(every run failed; the first: dense at N = 128: timeout "
        r"\(1 s\)\), so nothing is written \(.*sequoia.md is left as it was\)\n", err), err
    assert out.read_bytes() == before
    assert main(["bench", "sequoia", "--ns", "0", "128", "--out", str(out)]) == 2
    assert re.fullmatch(r"error: --ns must be a positive int, got 0\n", capsys.readouterr().err)
    assert out.read_bytes() == before


def test_an_out_under_a_file_is_refused_before_any_work(tmp_path, capsys, monkeypatch):
    from pointabstract.bench import sequoia
    from pointabstract.cli import main

    (tmp_path / "file").write_text("x")

    def work(*args, **kwargs):
        raise AssertionError("work started")

    monkeypatch.setattr(sequoia, "run", work)
    assert main(["bench", "sequoia", "--ns", "128", "--out", str(tmp_path / "file" / "s.md")]) == 2
    assert re.fullmatch(r"error: --out .*file/s.md: folder .*file is a file, not a folder\n",
                        capsys.readouterr().err)
