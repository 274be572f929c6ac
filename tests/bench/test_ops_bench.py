"""The ops benchmark's plumbing (its numbers are printed by `pointabstract bench ops`, not tested)."""

import re

import pytest

from pointabstract.bench import ops as bench
from pointabstract.cli import main


def test_time_call_reports_a_median_and_flags_slow_calls():
    calls = []
    ms, note = bench.time_call(lambda: calls.append(1), repeats=5, slow_s=10.0)
    assert len(calls) == 6 and ms >= 0 and note == ""  # one warm-up + 5 timed
    calls.clear()
    ms, note = bench.time_call(lambda: calls.append(1), repeats=5, slow_s=-1.0)
    assert len(calls) == 2 and note == "(1 run)"


def test_table_and_worst_ratio():
    rows = [bench.Row("knn", "B=1 N=8 K=2", 2.0, "peer a", 3.0),
            bench.Row("knn", "B=1 N=8 K=2", 2.0, "peer b", 1.0, "(1 run)"),
            bench.Row("fps", "B=1 N=8 -> 2", 1.0, "(no peer importable)", None)]
    table = bench.format_table(rows)
    assert "| knn | B=1 N=8 K=2 | 2.00 | peer a | 3.00 | 1.50 |" in table
    assert "| knn | B=1 N=8 K=2 | 2.00 | peer b | 1.00 (1 run) | 0.50 |" in table
    assert "| fps | B=1 N=8 -> 2 | 1.00 | (no peer importable) | n/a |  |" in table
    assert bench.slowest_peer_ratio(rows) == 0.5


def test_workloads_cover_the_issue_list():
    labels = {(w.op, w.label) for w in bench.workloads(None)}
    for want in [("fps", "B=16 N=1024 -> 512"), ("fps", "B=16 N=2048 -> 1024"),
                 ("fps", "B=1 N=100000 -> 4096"), ("knn", "B=16 N=1024 K=20"),
                 ("knn", "B=16 N=2048 K=40"), ("knn", "B=1 N=100000 K=16"),
                 ("knn features", "B=16 N=512 C=128 K=40"), ("chamfer fwd+bwd", "B=32 N=M=2048")]:
        assert want in labels


def test_cli_help(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    assert "bench" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["bench", "ops", "--help"])
    assert "--quick" in capsys.readouterr().out


def test_cuda_runs_keep_only_peers_that_take_cuda_tensors():
    from pointabstract.bench import peers

    for table in (peers.FPS, peers.KNN, peers.KNN_FEATURES, peers.CHAMFER):
        names = set(peers.available(table, "cuda"))
        assert names <= peers.CUDA_CAPABLE and names & {"torch loop", "dense torch"}
    assert "pykdtree" in peers.available(peers.KNN, "cpu")


def test_an_empty_run_writes_nothing_and_keeps_the_previous_table(tmp_path, capsys, monkeypatch):
    out = tmp_path / "ops.md"
    out.write_text("# Ops benchmark\n\n| previous |\n")
    before = out.read_bytes()
    monkeypatch.setattr(bench, "run", lambda **kwargs: [])
    assert main(["bench", "ops", "--quick", "--realdata", str(tmp_path / "none"), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and re.fullmatch(
        r"error: bench ops measured nothing, so nothing is written \(.*ops.md is left as it was\)\n", err), err
    assert out.read_bytes() == before


def test_the_table_is_replaced_atomically(tmp_path, monkeypatch):
    out = tmp_path / "ops.md"
    out.write_text("previous\n")
    monkeypatch.setattr(bench, "run", lambda **kwargs: [bench.Row("knn", "B=1", 2.0, "peer", 3.0)])
    assert main(["bench", "ops", "--quick", "--realdata", str(tmp_path / "none"), "--out", str(out)]) == 0
    assert "| knn | B=1 | 2.00 | peer | 3.00 | 1.50 |" in out.read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ops.md"]
