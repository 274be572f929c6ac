import argparse
import re

import pytest
import torch

from pointabstract.bench import capsule_timing, capsules
from pointabstract.bench.capsule_training import capsule_part_table
from pointabstract.bench.capsules import PAPER_TABLE4, build, fits, format_table, max_batch, measure_step


@pytest.mark.parametrize("threshold, limit, want", [(37, 256, 37), (0, 256, 0), (1, 256, 1), (300, 256, 256),
                                                    (64, 64, 64)])
def test_max_batch_doubles_then_bisects(monkeypatch, threshold, limit, want):
    tried = []

    def fake_fits(caps, routing, batch, **kw):
        tried.append(batch)
        return batch <= threshold

    monkeypatch.setattr(capsule_timing, "fits", fake_fits)
    assert max_batch(12, "dynamic", points=64, cap_mb=1, limit=limit) == want
    assert len(tried) <= 2 * limit.bit_length() + 1


def test_fits_under_an_address_space_cap():
    assert fits(12, "centroid", 2, points=64, cap_mb=64, tiny=True)
    assert not fits(12, "centroid", 20000, points=64, cap_mb=64, tiny=True)


def test_measure_step_and_table():
    row = {"caps": 12, "routing": "dynamic", "max_batch": 5, "cd_e3": [2.0, 4.0],
           **measure_step(12, "dynamic", batch=2, points=64, repeats=1, tiny=True)}
    assert row["params_m"] > 0 and row["ms"] > 0 and row["peak_mb"] >= 0
    table = format_table([row], batch=2, points=64, cap_mb=64, cap_points=64)
    assert "| 12 | dynamic |" in table and "3 ± 1.4" in table and "| 18.4 | 22 | 2.7 |" in table
    assert PAPER_TABLE4[(64, "centroid")] == {"cd": 1.4, "params_m": 5.3, "max_batch": 36}


@pytest.mark.parametrize("routing", ["dynamic", "em", "centroid"])
def test_routing_only_step_trains_the_routing_module_alone(routing):
    from pointabstract.bench.capsule_timing import _input, _step_fn

    model = build(12, "dynamic" if routing == "dynamic" else routing, tiny=True)
    step = _step_fn(model, "routing")
    u = _input(model, "routing", 3, 64)
    assert u.shape == (3, model.cfg.primary_caps, model.cfg.primary_dim)
    assert float(u.norm(dim=-1).max()) < 1  # squashed, as the primary layer emits them
    step(u)
    routing_params = list(model.routing.parameters())
    assert routing_params and all(p.grad is not None for p in routing_params)
    others = [p for n, p in model.named_parameters() if not n.startswith("routing.")]
    assert others and all(p.grad is None for p in others)  # encoder and decoder are not part of it
    row = measure_step(12, routing, batch=2, points=64, repeats=1, tiny=True, part="routing")
    whole = measure_step(12, routing, batch=2, points=64, repeats=1, tiny=True)
    assert row["params_m"] == pytest.approx(sum(p.numel() for p in routing_params) / 1e6)
    assert 0 < row["params_m"] < whole["params_m"] and row["ms"] > 0


def test_routing_rows_in_the_table_and_ratios():
    from pointabstract.bench.capsule_timing import ratios

    rows = [{"caps": 12, "routing": r, "part": part, "params_m": p, "ms": ms, "peak_mb": 1.0, "max_batch": b,
             "batch_limit": 64}
            for r, part, p, ms, b in [("dynamic", "model", 18.0, 100.0, 16), ("centroid", "model", 6.0, 100.0, 32),
                                      ("dynamic", "routing", 12.0, 80.0, 8), ("centroid", "routing", 0.015, 20.0, 64)]]
    table = format_table(rows, batch=8, points=64, cap_mb=64, cap_points=64)
    assert "| 12 | dynamic | whole model | 18.00 | 100 | 1 | 16 | - | 18.4 | 22 | 2.7 |" in table
    assert "| 12 | centroid | routing only | 0.01 | 20 | 1 | >= 64 | - | - | - | - |" in table
    assert ratios(rows) == [
        "- 12 capsules, whole models, centroid vs dynamic routing: parameters x0.33, step time x1.00, "
        "max batch x2.00",
        "- 12 capsules, routing only, centroid vs dynamic routing: parameters x0.0013, step time x0.25, "
        "max batch >= x8.00"]


def test_routing_only_fits_under_an_address_space_cap():
    assert fits(12, "dynamic", 2, points=64, cap_mb=64, tiny=True, part="routing")
    assert not fits(12, "dynamic", 10**6, points=64, cap_mb=64, tiny=True, part="routing")


def test_build_rejects_unknown_sizes():
    with pytest.raises(ValueError, match=r"caps must be one of \[12, 64\], got 7"):
        build(7, "dynamic")
    with pytest.raises(ValueError, match=r"routing must be one of \['dynamic', 'em', 'centroid'\], got 'x'"):
        build(12, "x")
    assert build(64, "em", tiny=True).cfg.routing == "em"


def test_train_run_trains_through_the_engine_and_measures_the_saved_model(tmp_path):
    from pointabstract.bench.capsule_training import train_run
    from pointabstract.data.synthetic import generate
    from pointabstract.engine import load_checkpoint

    data = tmp_path / "data"
    generate(data, train_per_class=1, test_per_class=1, num_points=128, workers=1, progress=False)
    out = train_run(12, "centroid", 0, steps=3, data=str(data), points=64, out=tmp_path / "run", probe_train=40,
                    probe_test=40, bn_batches=2, tiny=True)
    assert out["steps"] == 3 and out["cd_e3"] > 0 and 0 < out["purity"] <= 1 and 0 <= out["probe_acc"] <= 1
    # an engine run folder: 3 steps of 8 clouds (2 an epoch) end mid-epoch 2, evaluated once
    ckpt = load_checkpoint(tmp_path / "run" / "last.pt")
    assert ckpt["step"] == 3 and ckpt["epoch"] == 2 and ckpt["model_name"] == "capsule_ae_small_ca"
    assert ckpt["config"]["model.latent_caps"] == 4 and ckpt["metrics"]["chamfer"] * 1e3 == out["cd_e3"]
    assert (tmp_path / "run" / "metrics.json").is_file() and out["train_s"] > 0
    parts = out["category_parts"]
    assert parts["category"] == "Airplane" and parts["parts"] == ["body", "wing", "tail", "engine"]
    counts = torch.tensor(parts["counts"])
    assert counts.shape == (4, 4) and counts.sum() == parts["shapes"] * 64  # 4 capsules x 16 points
    again = train_run(12, "centroid", 0, steps=3, data=str(data), points=64, out=tmp_path / "run", probe_train=0,
                      probe_test=0, bn_batches=2, tiny=True)
    assert again["cd_e3"] == out["cd_e3"] and "probe_acc" not in again  # seeded: the same run, folder replaced


def test_capsule_part_table_hand_computed():
    lines = capsule_part_table({"category": "Mug", "shapes": 1, "parts": ["handle", "body"],
                                "counts": [[3, 1], [0, 0], [0, 5]]})
    assert lines[0] == "| capsule | handle | body | majority share |"
    assert lines[2:] == ["| 0 | 75% | 25% | 75% |", "| 2 | 0% | 100% | 100% |"]  # empty capsule 1 left out


# --- a run that measures nothing writes nothing --------------------------------------------------


def _previous_record(folder, name):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.md").write_text("# previous record\n\n| 12 | dynamic | 2.7 |\n")
    (folder / f"{name}.json").write_text('{"rows": [{"caps": 12}]}')
    return {p: p.read_bytes() for p in folder.iterdir()}


def _no_work(monkeypatch):
    from pointabstract.bench import capsule_training

    def work(*args, **kwargs):
        raise AssertionError("the benchmark started work before refusing its options")

    monkeypatch.setattr(capsule_timing, "_subprocess", work)
    monkeypatch.setattr(capsule_timing, "max_batch", work)
    monkeypatch.setattr(capsule_training, "train_run", work)


@pytest.mark.parametrize("argv, match", [
    (["--skip-timing", "--train-steps", "0"],
     r"nothing to run: --skip-timing and --train-steps 0 select no measurement \(.*capsules.md and "
     r".*capsules.json are left as they were\)"),
    (["--seeds", "0"], r"--seeds must be a positive int \(training runs per routing\), got 0"),
    (["--skip-timing", "--train-steps", "-3"], r"--train-steps must be an int >= 0 \(0: no training\), got -3"),
    (["--repeats", "0", "--train-steps", "0"], r"--repeats must be a positive int, got 0"),
    (["--batch", "0"], r"--batch must be a positive int, got 0"),
    (["--out", "{results}"], r"--out .* is a folder; give a file name"),
    (["--results", "{results}/capsules.md"], r"--results .*capsules.md/capsules.md: folder .*capsules.md is a file, not a folder"),
])
def test_an_empty_selection_is_refused_up_front_in_one_line(argv, match, tmp_path, capsys, monkeypatch):
    from pointabstract.cli import main as cli

    before = _previous_record(tmp_path, "capsules")
    _no_work(monkeypatch)
    argv = [a.format(results=tmp_path) for a in argv]
    assert cli(["bench", "capsules", "--results", str(tmp_path), *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert re.fullmatch("error: " + match + "\n", err), err
    assert {p: p.read_bytes() for p in tmp_path.iterdir()} == before  # byte-identical, nothing added


def test_no_routing_selected_is_refused(tmp_path, monkeypatch):
    parser = argparse.ArgumentParser()
    capsules.add_arguments(parser)
    args = parser.parse_args(["--results", str(tmp_path)])
    before = _previous_record(tmp_path, "capsules")
    _no_work(monkeypatch)
    args.routings = []
    with pytest.raises(ValueError, match=r"^--routings selects no routing; choose from \['dynamic', 'em', "
                                         r"'centroid'\]$"):
        capsules.main(args)
    args.routings, args.caps, args.train_steps = ["em"], [], 0
    with pytest.raises(ValueError, match=r"^--caps selects no capsule count; choose from \[12, 64\]$"):
        capsules.main(args)
    assert {p: p.read_bytes() for p in tmp_path.iterdir()} == before
