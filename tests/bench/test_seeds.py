import json

import pytest

from pointabstract.bench.seeds import (
    beyond_spread,
    format_table,
    run_seeds,
    seed_list,
    summarise,
    write_results,
)


def test_seed_list():
    assert seed_list(3) == [0, 1, 2] and seed_list([5, 7]) == [5, 7]
    with pytest.raises(ValueError, match="seeds must be a positive int, got 0"):
        seed_list(0)
    with pytest.raises(ValueError, match="distinct"):
        seed_list([1, 1])
    with pytest.raises(TypeError, match="seeds must be a count"):
        seed_list(True)


def test_runs_every_variant_at_every_seed_and_summarises(tmp_path):
    calls = []

    def run_one(variant, seed):
        calls.append((variant, seed))
        return {"acc": {"a": 0.5, "b": 0.9}[variant] + 0.01 * seed}

    rows = run_seeds(["a", "b"], run_one, seeds=3, progress=lambda s: None)
    assert calls == [("a", 0), ("b", 0), ("a", 1), ("b", 1), ("a", 2), ("b", 2)]
    summary = summarise(rows, ["acc"])
    a, b = summary
    assert a["variant"] == "a" and a["n"] == 3
    assert a["acc"]["mean"] == pytest.approx(0.51) and a["acc"]["std"] == pytest.approx(0.01)
    assert beyond_spread(a["acc"], b["acc"])
    assert not beyond_spread({"mean": 0.5, "std": 0.02}, {"mean": 0.53, "std": 0.02})
    table = format_table(summary, ["acc"], reference="a", key="acc")
    assert "| a | 3 | 0.51 ± 0.01 | (reference) |" in table and "beyond spread" in table
    md, js = write_results("demo", rows, table, out_dir=tmp_path, command="x --seeds 3")
    assert "`x --seeds 3`" in md.read_text() and len(json.loads(js.read_text())["rows"]) == 6


def test_write_results_refuses_an_empty_run_and_keeps_the_previous_record(tmp_path):
    rows = [{"variant": "a", "seed": 0, "acc": 0.5}]
    md, js = write_results("demo", rows, "| a |", out_dir=tmp_path)
    before = md.read_bytes(), js.read_bytes()
    with pytest.raises(ValueError, match=r"^bench demo measured nothing, so nothing is written \(.*demo.md and "
                                         r".*demo.json are left as they were\)$"):
        write_results("demo", [], "", out_dir=tmp_path)
    assert (md.read_bytes(), js.read_bytes()) == before
