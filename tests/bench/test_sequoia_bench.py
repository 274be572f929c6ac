import argparse

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
    assert row["ms"] > 0 and row["peak_mb"] >= 0


def test_run_and_table():
    rows = run((128, 256), layers=("sequoia", "dense"), dim=16, heads=2, repeats=1, progress=lambda s: None)
    assert [(r["layer"], r["n"]) for r in rows] == [("sequoia", 128), ("sequoia", 256), ("dense", 128),
                                                    ("dense", 256)]
    table = format_table(rows, fit_from=128)
    assert "| 256 |" in table and "Sequoia, sequential (paper): time" in table
    with pytest.raises(ValueError, match="layers must be among"):
        run((128,), layers=("linear",))


def test_arguments():
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["--ns", "1024", "2048", "--layers", "dense"])
    assert args.ns == [1024, 2048] and args.layers == ["dense"] and args.dim == 128
