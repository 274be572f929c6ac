"""bench curves' ledger: finished runs carried as JSON lines, taken back only under the same
protocol and settings, never trained twice, never skipped when damaged."""

import json
import shutil

import pytest

from pointabstract.bench.curve_runs import plan, run_cells
from pointabstract.bench.ledger import Ledger, settings_digest
from pointabstract.bench.protocol import current_protocol


def _quiet(_):
    pass


def _never_train(monkeypatch):
    import pointabstract.engine as engine

    monkeypatch.setattr(engine, "train", lambda *a, **k: pytest.fail("trained again"))


def test_runs_come_back_from_the_ledger_without_their_folders(tiny_cls, tmp_path, monkeypatch):
    protocol = current_protocol(1, device="cpu")
    cells = plan(tiny_cls, [1], [0], control=True)
    path = tmp_path / "records" / "tiny.jsonl"
    rows = run_cells(tiny_cls, cells, runs=tmp_path / "runs", extra={}, protocol=protocol,
                     ledger=Ledger(path, "tiny"), progress=_quiet)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(e["variant"], e["budget"], e["train_seed"]) for e in lines] == [("ca", 1, 0), ("fps", 1, 0),
                                                                             ("fps", 1, 1000)]
    assert all(e["comparison"] == "tiny" and e["unit"] == "steps" and e["protocol"]["source"] ==
               protocol["source"] for e in lines)
    shutil.rmtree(tmp_path / "runs")  # the folders are gone (another machine, a new session)
    _never_train(monkeypatch)
    said = []
    again = run_cells(tiny_cls, cells, runs=tmp_path / "runs", extra={}, protocol=protocol, jobs=2,
                      ledger=Ledger(path, "tiny"), progress=said.append)
    assert again == rows  # the identical numbers, the A/A row still labelled with its trained seed
    assert again[2]["trained_seed"] == 1000 and all("(from the ledger" in s for s in said)
    assert len(path.read_text().splitlines()) == 3  # nothing appended twice
    assert not (tmp_path / "runs").exists()  # and no folder written


def test_another_protocol_or_other_settings_train_again(tiny_cls, tmp_path, monkeypatch):
    protocol = current_protocol(1, device="cpu")
    cells = plan(tiny_cls, [1], [0], control=False)[:1]
    path = tmp_path / "tiny.jsonl"
    first = run_cells(tiny_cls, cells, runs=tmp_path / "a", extra={}, protocol=protocol,
                      ledger=Ledger(path, "tiny"), progress=_quiet)
    # two threads: another protocol; the ledger has no such run, so it is trained (and recorded)
    run_cells(tiny_cls, cells, runs=tmp_path / "b", extra={}, protocol={**protocol, "threads": 2},
              ledger=Ledger(path, "tiny"), progress=_quiet)
    assert (tmp_path / "b" / "ca" / "steps1" / "seed0" / "last.pt").is_file()
    # other settings (a larger batch): trained too
    run_cells(tiny_cls, cells, runs=tmp_path / "c", extra={"data.batch_size": 16}, protocol=protocol,
              ledger=Ledger(path, "tiny"), progress=_quiet)
    assert (tmp_path / "c" / "ca" / "steps1" / "seed0" / "last.pt").is_file()
    entries = Ledger(path, "tiny").entries
    assert len(entries) == 3 and len({e["settings"] for e in entries}) == 2
    # another comparison's name never matches, though the cell and settings are the same
    assert Ledger(path, "other").find("ca", "steps", 1, 0, settings=entries[0]["settings"],
                                      protocol=protocol) is None
    # what may change freely (output folder, workers) keeps the settings, so the run is reused
    _never_train(monkeypatch)
    again = run_cells(tiny_cls, cells, runs=tmp_path / "d", extra={"data.workers": 1}, protocol=protocol,
                      ledger=Ledger(path, "tiny"), progress=_quiet)
    assert again == first


def test_settings_ignore_the_output_folder_and_see_every_setting():
    from pointabstract.engine import load_config

    base = {"model": "centroid_transformer", "log.out_dir": "runs/a"}
    digest = settings_digest(load_config(None, base))
    assert digest == settings_digest(load_config(None, {**base, "log.out_dir": "elsewhere", "data.workers": 3}))
    assert digest != settings_digest(load_config(None, {**base, "seed": 1}))
    assert digest != settings_digest(load_config(None, {**base, "optim.lr": 0.002}))
    assert len(digest) == 16


def test_a_damaged_ledger_is_refused_by_line(tmp_path):
    path = tmp_path / "l.jsonl"
    good = {"comparison": "x", "variant": "a", "unit": "steps", "budget": 1, "train_seed": 0, "settings": "s",
            "protocol": {}, "metrics": {"m": 1.0}}
    path.write_text(json.dumps(good) + "\n\n" + '{"comparison": "x", "variant"\n')
    with pytest.raises(ValueError, match=r"l.jsonl line 3 is not JSON"):
        Ledger(path, "x")
    path.write_text(json.dumps(good) + "\n" + json.dumps({k: v for k, v in good.items() if k != "metrics"}) + "\n")
    with pytest.raises(ValueError, match=r"line 2 lacks \['metrics'\]"):
        Ledger(path, "x")
    with pytest.raises(ValueError, match="is not a file"):
        Ledger(tmp_path, "x")
    assert Ledger(tmp_path / "missing.jsonl", "x").entries == []


def test_a_ledger_whose_runs_read_different_data_is_refused(tmp_path):
    path = tmp_path / "l.jsonl"
    base = current_protocol(1, device="cpu")
    for seed, fp in [(0, "a" * 16), (1, "b" * 16), (2, None)]:
        protocol = {**base, **({"data": {"datasets/x": fp}} if fp else {})}
        Ledger(path, "tiny").add("ca", "steps", 1, seed, settings="s", protocol=protocol, metrics={"m": 1.0})
    with pytest.raises(ValueError, match="different data in one folder.*datasets/x: a+ and b+"):
        Ledger(path, "tiny").protocol()
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0], lines[2]]) + "\n")  # one fingerprint and one run without any
    assert Ledger(path, "tiny").protocol()["data"] == {"datasets/x": "a" * 16}
