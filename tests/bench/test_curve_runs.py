"""bench curves' runs: a cell re-run from scratch gives the identical number, the number of worker
processes changes nothing, and a run of another protocol is never mixed in silently."""

import json
import shutil

import pytest

from pointabstract.bench.curve_report import markdown
from pointabstract.bench.curve_runs import Cell, plan, run_cells
from pointabstract.bench.protocol import current_protocol, read_protocol, write_protocol


def _quiet(_):
    pass


def test_plan_pairs_the_a_a_control_with_seeds_plus_1000(tiny_cls):
    cells = plan(tiny_cls, [2, 5], [0, 1], control=True)
    assert cells[:3] == [Cell("ca", "ca", 2, 0, 0), Cell("fps", "fps", 2, 0, 0), Cell("fps_aa", "fps", 2, 0, 1000)]
    assert len(cells) == 12 and cells[-1] == Cell("fps_aa", "fps", 5, 1, 1001)
    assert str(cells[2].folder("runs", "steps")) == "runs/fps/steps2/seed1000"  # the control's own folders
    assert len(plan(tiny_cls, [2], [0], control=False)) == 2


def test_a_cell_trained_again_from_scratch_gives_the_identical_number(tiny_cls, tmp_path):
    protocol = current_protocol(1, device="cpu")
    cells = [c for c in plan(tiny_cls, [2], [0], control=True) if c.variant != "fps"]
    first = run_cells(tiny_cls, cells, runs=tmp_path / "a", extra={}, protocol=protocol, progress=_quiet)
    assert [r["variant"] for r in first] == ["ca", "fps_aa"] and first[1]["trained_seed"] == 1000
    assert read_protocol(tmp_path / "a" / "ca" / "steps2" / "seed0") == protocol
    shutil.rmtree(tmp_path / "a")
    again = run_cells(tiny_cls, cells, runs=tmp_path / "a", extra={}, protocol=protocol, progress=_quiet)
    assert again == first  # bit-identical metrics, not approximately equal
    log = (tmp_path / "a" / "ca" / "steps2" / "seed0" / "metrics.jsonl").read_text().splitlines()
    assert json.loads(log[-1])["step"] == 2


@pytest.mark.slow
def test_the_number_of_worker_processes_changes_nothing(tiny_cls, tmp_path):
    protocol = current_protocol(1, device="cpu")
    cells = plan(tiny_cls, [1, 2], [0, 1], control=True)
    alone = run_cells(tiny_cls, cells, runs=tmp_path / "one", extra={}, protocol=protocol, progress=_quiet)
    pooled = run_cells(tiny_cls, cells, runs=tmp_path / "two", extra={}, protocol=protocol, jobs=2,
                       progress=_quiet)
    assert pooled == alone and len(pooled) == 12


def test_a_stale_run_is_trained_again_or_kept_and_labelled(tiny_cls, tmp_path, monkeypatch):
    protocol = current_protocol(1, device="cpu")
    cells = plan(tiny_cls, [1], [0], control=False)
    runs = tmp_path / "runs"
    rows = run_cells(tiny_cls, cells, runs=runs, extra={}, protocol=protocol, progress=_quiet)
    run = runs / "ca" / "steps1" / "seed0"
    write_protocol(run, {**protocol, "threads": 2})  # as if trained with 2 threads
    trained = []
    import pointabstract.engine as engine  # train_cell imports engine.train when it runs

    original = engine.train
    monkeypatch.setattr(engine, "train", lambda cfg, **kw: trained.append(cfg.log.out_dir) or original(cfg, **kw))
    again = run_cells(tiny_cls, cells, runs=runs, extra={}, protocol=protocol, progress=_quiet)
    assert trained == [str(run)] and again == rows and "stale" not in again[0]  # trained again, same number
    assert read_protocol(run) == protocol
    # kept on request: not trained, and labelled in the row and in the record
    write_protocol(run, {**protocol, "threads": 2})
    (run / "protocol.json").rename(run / "old.json")  # and one with no protocol at all
    write_protocol(runs / "fps" / "steps1" / "seed0", {**protocol, "threads": 2})
    monkeypatch.setattr(engine, "train", lambda *a, **k: pytest.fail("a kept stale run was trained"))
    kept = run_cells(tiny_cls, cells, runs=runs, extra={}, protocol=protocol, keep_stale=True, progress=_quiet)
    assert [r["stale"] for r in kept] == ["no protocol recorded", "threads 2, now 1"]
    assert [r["overall_accuracy"] for r in kept] == [r["overall_accuracy"] for r in rows]
    md = markdown(kept, tiny_cls, "tiny", "cmd", 1, protocol=protocol)
    assert "**This record mixes protocols**: 2 of 2 runs" in md and "- ca 1 seed 0: no protocol recorded" in md
    assert " †1 |" in md
