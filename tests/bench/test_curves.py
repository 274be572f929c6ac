"""bench curves: every variant trained at each budget through the engine, verdicts per budget."""

import argparse
import dataclasses
import json
import shutil

import numpy as np
import pytest

from pointabstract.bench import curve_runs, curves
from pointabstract.bench.curve_report import in_words as _in_words
from pointabstract.bench.curves import Comparison, curve_rows, main, verdicts
from pointabstract.models import MODELS
from tests.fixtures import write_tiny_synthetic


def _rows(table):
    """rows from {budget: {variant: [values over seeds]}}."""
    return [{"variant": v, "budget": b, "seed": s, "chamfer": x}
            for b, per in table.items() for v, values in per.items() for s, x in enumerate(values)]


COMP = Comparison("a claim", {"ca": {}, "dr": {}}, method="ca", metric="chamfer", mode="min", unit="steps",
                  budgets=(10, 100, 1000))


def test_verdicts_hand_computed():
    # budget 10: ca clearly worse (higher Chamfer); 100: overlapping; 1000: ca clearly better
    rows = _rows({10: {"ca": [9.0, 9.2], "dr": [5.0, 5.2]}, 100: {"ca": [6.0, 7.0], "dr": [6.2, 6.6]},
                  1000: {"ca": [3.0, 3.1], "dr": [4.0, 4.1]}})
    assert verdicts(rows, COMP) == {"dr": ["worse", "within", "better"]}
    line = _in_words(["worse", "within", "better"], [10, 100, 1000], COMP, "dr")
    assert line == ("- vs dr (10: worse, 100: within, 1000: better): ca better than dr from 1000 steps on; "
                    "the ordering crosses over within the budgets run.")
    assert _in_words(["worse", "worse", "worse"], [10, 100, 1000], COMP, "dr").endswith(
        "ca worse than dr at every budget run; not in ca's favour up to 1000 steps.")
    assert _in_words(["worse", "within", "within"], [10, 100, 1000], COMP, "dr").endswith(
        "ca and dr within the seed spread from 100 steps on; not in ca's favour up to 1000 steps.")


@pytest.fixture(scope="module")
def tiny_capsules(tmp_path_factory):
    root = write_tiny_synthetic(tmp_path_factory.mktemp("synth"))
    def tiny(model):
        return {"model": model, **{f"model.{k}": list(v) if isinstance(v, tuple) else v
                                   for k, v in MODELS[model].tiny.items()}}
    base = {**curves.COMPARISONS["capsules"].base, "data.root": str(root), "data.num_points": 64,
            "data.batch_size": 4, "data.eval_batch_size": 8, "task.bn_batches": 2}
    return Comparison(curves.COMPARISONS["capsules"].doc,
                      {"centroid": tiny("capsule_ae_small_ca"), "dynamic": tiny("capsule_ae_small_dr")},
                      method="centroid", metric="chamfer", mode="min", unit="steps", budgets=(1, 3),
                      base=base, extra=("purity",))


def test_tiny_curves_train_through_the_engine_and_reuse_finished_runs(tiny_capsules, tmp_path, monkeypatch):
    rows = curve_rows(tiny_capsules, budgets=[1, 3], seeds=2, runs=tmp_path / "runs", progress=lambda s: None)
    assert [(r["variant"], r["budget"], r["seed"]) for r in rows][:4] == [
        ("centroid", 1, 0), ("dynamic", 1, 0), ("centroid", 1, 1), ("dynamic", 1, 1)]
    assert len(rows) == 8 and all(r["chamfer"] > 0 and 0 <= r["purity"] <= 1 for r in rows)
    run = tmp_path / "runs" / "centroid" / "steps3" / "seed1"
    log = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert log[-1]["step"] == 3 and (run / "report.md").is_file()
    # the same command again reuses the finished runs: same numbers, no training step
    import pointabstract.engine.trainer as trainer

    monkeypatch.setattr(trainer, "_train_epoch", lambda *a, **k: pytest.fail("trained again"))
    again = curve_rows(tiny_capsules, budgets=[1, 3], seeds=2, runs=tmp_path / "runs", progress=lambda s: None)
    assert again == rows
    # a finished run that cannot be resumed (written with older parameter names) is still reused,
    # never replaced: only its metrics.json is read
    import pointabstract.engine as engine

    monkeypatch.setattr(engine, "train", lambda *a, **k: pytest.fail("resumed or replaced"))
    before = (run / "last.pt").read_bytes()
    assert curve_rows(tiny_capsules, budgets=[1, 3], seeds=2, runs=tmp_path / "runs", progress=lambda s: None) == rows
    assert (run / "last.pt").read_bytes() == before
    # a metrics.json from an earlier evaluation than the checkpoint's is not taken as the result
    cfg = engine.load_config(None, tiny_capsules.overrides("centroid", 3, 1, run, {}))
    assert curve_runs.finished_metrics(cfg, run)["chamfer"] * 1e3 == pytest.approx(rows[-2]["chamfer"])
    record = json.loads((run / "metrics.json").read_text())
    (run / "metrics.json").write_text(json.dumps({**record, "epoch": record["epoch"] - 1}))
    assert curve_runs.finished_metrics(cfg, run) is None
    # nor is a run with other settings, or one short of the budget
    other = engine.load_config(None, tiny_capsules.overrides("dynamic", 3, 1, run, {}))
    assert curve_runs.finished_metrics(other, run) is None


def _args(tmp_path, **kw):
    base = dict(comparison="capsules", budgets=[1, 3], seeds=2, data=None, variants=None, workers=0,
                runs=str(tmp_path / "runs"), results=str(tmp_path / "bench"), dry_run=False, threads=1, jobs=1,
                no_control=False, keep_stale=False, ledger=None, from_ledger=False)
    return argparse.Namespace(**{**base, **kw})


def test_main_writes_markdown_json_and_a_plot(tiny_capsules, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(curves.COMPARISONS, "capsules", tiny_capsules)
    assert main(_args(tmp_path, ledger=str(tmp_path / "ledger.jsonl"))) == 0
    md = (tmp_path / "bench" / "curves_capsules.md").read_text()
    assert f"recorded in the ledger `{tmp_path / 'ledger.jsonl'}` (8 runs of capsules, trained at commit" in md
    assert len((tmp_path / "ledger.jsonl").read_text().splitlines()) == 8
    assert "| centroid (paper method) |" in md and "| 1 steps | 3 steps |" in md and "## Paired verdict" in md
    assert "- vs dynamic (1: " in md and "Protocol: commit " in md and "1 thread per run" in md
    assert "too few seeds for a paired verdict (2 pairs, at least 8 needed)" in md
    data = json.loads((tmp_path / "bench" / "curves_capsules.json").read_text())
    assert data["budgets"] == [1, 3] and len(data["rows"]) == 8 and set(data["spread_screen"]) == {"dynamic"}
    assert data["protocol"]["threads"] == 1 and set(data["paired"]["chamfer"][str(3)]["vs"]) == {"dynamic"}
    # the data every run read is part of the protocol: in the records, each run's folder and the ledger
    from pointabstract.bench.protocol import data_fingerprint, read_protocol

    root = tiny_capsules.base["data.root"]
    assert data["protocol"]["data"] == {root: data_fingerprint(root)} and f", data {root} " in md
    assert read_protocol(tmp_path / "runs" / "capsules" / "centroid" / "steps3" / "seed1")["data"] == \
        data["protocol"]["data"]
    assert all(json.loads(line)["protocol"]["data"] == data["protocol"]["data"]
               for line in (tmp_path / "ledger.jsonl").read_text().splitlines())
    from PIL import Image

    image = Image.open(tmp_path / "bench" / "curves_capsules.png")
    assert image.size[0] > 400 and len(np.unique(np.asarray(image.convert("L")))) > 20  # not blank


def test_records_come_back_from_the_ledger_alone_with_the_paired_plot(tiny_capsules, tmp_path, monkeypatch):
    """--from-ledger: the same records, no training, under the ledger's own protocol (here a
    pretended older training code); a cell the ledger lacks is named, never trained."""
    import pointabstract.engine as engine

    monkeypatch.setitem(curves.COMPARISONS, "capsules", tiny_capsules)
    ledger = tmp_path / "ledger.jsonl"
    assert main(_args(tmp_path, ledger=str(ledger))) == 0
    first = (tmp_path / "bench" / "curves_capsules.md").read_text()
    lines = [json.loads(line) for line in ledger.read_text().splitlines()]
    ledger.write_text("".join(json.dumps({**e, "protocol": {**e["protocol"], "source": "0ld"}}) + "\n"
                              for e in lines))
    shutil.rmtree(tmp_path / "runs")
    monkeypatch.setattr(engine, "train", lambda *a, **k: pytest.fail("trained from a ledger"))
    assert main(_args(tmp_path, ledger=str(ledger), from_ledger=True, results=str(tmp_path / "again"))) == 0
    again = (tmp_path / "again" / "curves_capsules.md").read_text()
    assert "training code 0ld" in again and "none trained by this command (--from-ledger)" in again
    paired = lambda md: md[md.index("## Paired verdict"):md.index("## Seed-spread")]  # noqa: E731
    assert paired(again) == paired(first)
    assert (tmp_path / "again" / "curves_capsules_paired.png").is_file()
    # the current code would have trained them all again: another protocol
    with pytest.raises(ValueError, match="not in the ledger .* nothing is trained"):
        main(_args(tmp_path, ledger=str(ledger), from_ledger=True, seeds=3))
    with pytest.raises(ValueError, match="needs --ledger"):
        main(_args(tmp_path, from_ledger=True))
    # two protocols in one ledger: records drawn from it would mix them
    ledger.write_text(ledger.read_text() + json.dumps({**lines[0], "train_seed": 7}) + "\n")
    with pytest.raises(ValueError, match="trained under 2 protocols"):
        main(_args(tmp_path, ledger=str(ledger), from_ledger=True))


def test_the_paired_plot_shows_every_seed_the_interval_and_the_floor(tmp_path):
    """Dots per seed, the mean's bar coloured by the verdict (green ahead, red behind), the A/A band."""
    from PIL import Image

    from pointabstract.bench.curve_report import paired_budget, plot_paired

    comp = Comparison("a claim", {"m": {}, "a": {}, "b": {}}, method="m", metric="overall_accuracy",
                      mode="max", unit="epochs", budgets=(3, 10), base={}, control="a", decisive=10)
    rows = []
    for seed in range(8):
        for budget in (3, 10):
            rows += [{"variant": "m", "budget": budget, "seed": seed, "overall_accuracy": 50 + 3 + 0.1 * seed},
                     {"variant": "a", "budget": budget, "seed": seed, "overall_accuracy": 50 + 0.2 * (seed % 3)},
                     {"variant": "b", "budget": budget, "seed": seed, "overall_accuracy": 58 + 0.1 * (seed % 2)},
                     {"variant": "a_aa", "budget": budget, "seed": seed, "trained_seed": seed + 1000,
                      "overall_accuracy": 50 + 0.2 * ((seed + 1) % 3)}]
    assert paired_budget(rows, comp) == 10
    assert paired_budget([r for r in rows if r["budget"] == 3], comp) == 3  # the decisive one not run
    out = tmp_path / "p.png"
    assert plot_paired(rows, comp, out, "t")
    img = np.asarray(Image.open(out).convert("RGB")).astype(int)

    def share(rgb):
        return (np.abs(img - np.array(rgb)).sum(-1) < 40).mean()

    assert share((0x1B, 0x78, 0x37)) > 1e-4  # m ahead of a: green
    assert share((0xB2, 0x18, 0x2B)) > 1e-4  # m behind b: red
    assert share((217, 217, 217)) > 0.01  # the A/A band (grey 0.85)
    assert not plot_paired([], comp, tmp_path / "none.png", "t") and not (tmp_path / "none.png").exists()
    # an A/A interval that excludes 0 (the control's copy 5 points above it): no green, no red
    shifted = [{**r, "overall_accuracy": r["overall_accuracy"] + 5} if r["variant"] == "a_aa" else r for r in rows]
    assert plot_paired(shifted, comp, out, "t")
    img = np.asarray(Image.open(out).convert("RGB")).astype(int)
    assert share((0x1B, 0x78, 0x37)) == 0 and share((0xB2, 0x18, 0x2B)) == 0


def test_variants_keep_only_the_pairs_they_name(tiny_capsules, tmp_path, monkeypatch):
    # --variants that drop a variant of a further pair: that pair is not judged, the others are
    three = {**tiny_capsules.variants, "plain_autoencoder": tiny_capsules.variants["dynamic"]}
    comp = dataclasses.replace(tiny_capsules, variants=three,
                               pairs=(("dynamic", "plain_autoencoder"), ("centroid", "plain_autoencoder")))
    monkeypatch.setitem(curves.COMPARISONS, "capsules", comp)

    class Planned(Exception):  # stops main where it would start training, with what it planned
        pass

    def planned(c, **kw):
        raise Planned(c)

    monkeypatch.setattr(curves, "curve_rows", planned)
    with pytest.raises(Planned) as got:
        main(_args(tmp_path, variants=["dynamic", "plain_autoencoder"]))
    assert got.value.args[0].pairs == (("dynamic", "plain_autoencoder"), ("centroid", "plain_autoencoder"))
    with pytest.raises(Planned) as got:
        main(_args(tmp_path, variants=["dynamic"]))
    assert list(got.value.args[0].variants) == ["centroid", "dynamic"] and got.value.args[0].pairs == ()


def test_a_dry_run_of_some_capsule_variants_lists_them(tmp_path, capsys):
    args = _args(tmp_path, comparison="capsules_demo", budgets=[10], seeds=3, data=str(tmp_path),
                 variants=["centroid", "dynamic", "plain_autoencoder"], no_control=True, dry_run=True)
    assert main(args) == 0
    assert "9 runs: centroid, dynamic, plain_autoencoder x epochs [10] x 3 seeds" in capsys.readouterr().out


@pytest.mark.parametrize("kw, pattern", [
    ({"budgets": [0, 3]}, r"--budgets must be a positive int, got 0"),
    ({"budgets": [3, 3]}, r"--budgets must be distinct, got \[3, 3\]"),
    ({"seeds": 0}, r"--seeds must be a positive int, got 0"),
    ({"variants": ["magic"]}, r"--variants \['magic'\] are not in capsules; choose from"),
    ({"variants": ["centroid"], "no_control": True},
     r"--variants leaves only \['centroid'\]: a comparison needs the method"),
])
def test_bad_options_are_refused_before_any_work(tmp_path, kw, pattern):
    with pytest.raises(ValueError, match=pattern):
        main(_args(tmp_path, **kw))
    assert not (tmp_path / "runs").exists() and not (tmp_path / "bench").exists()


def test_a_missing_hard_level_names_the_command(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"no dataset at .*nothing; generate the hard level with: "
                                                r"pointabstract data synth --level hard"):
        main(_args(tmp_path, data=str(tmp_path / "nothing")))


def test_every_comparison_names_registered_models():
    for name, comp in curves.COMPARISONS.items():
        assert comp.method in comp.variants and len(comp.variants) >= 2, name
        assert len(comp.budgets) >= 3 and comp.budgets[-1] >= 10 * comp.budgets[0], name
        for overrides in comp.variants.values():
            assert overrides.get("model", "centroid_transformer") in MODELS, (name, overrides)


def _built(name: str, variant: str):
    """The model a variant of comparison ``name`` trains, at its real size (not tiny)."""
    from pointabstract.engine import load_config
    from pointabstract.models import build_model

    comp = curves.COMPARISONS[name]
    cfg = load_config(comp.preset, comp.overrides(variant, 1, 0, "unused", {}))
    return build_model(cfg.model, **cfg.model_args)


def _parameters(model) -> int:
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("name", ["sequoia_seg", "sequoia_cls"])
def test_the_matched_softmax_baseline_has_sequoias_parameter_count(name, capsys):
    counts = {v: _parameters(_built(name, v)) for v in ("sequoia", "softmax", "softmax_matched_params")}
    with capsys.disabled():
        print(f"\n{name} parameters: {counts}")
    # seg 115,417 / 55,682 / 115,434; cls 118,223 / 58,488 / 118,240
    assert counts["softmax"] < 0.51 * counts["sequoia"]
    assert abs(counts["softmax_matched_params"] - counts["sequoia"]) < 1e-3 * counts["sequoia"]
    matched, default = _built(name, "softmax_matched_params"), _built(name, "softmax")
    widths = {n: tuple(p.shape) for n, p in matched.named_parameters()}
    changed = sorted(n for n, p in default.named_parameters() if tuple(p.shape) != widths[n])
    assert changed and all(".mlp." in n for n in changed)  # only the feed-forward layers are wider


def test_the_mechanism_checks_change_only_what_they_name():
    def ca_blocks(model):
        return [b.attn for b in model.modules() if type(b).__name__ == "CABlock"]

    default = ca_blocks(_built("table3", "centroid_attention_t1"))
    assert len(default) == 2 and {(a.normalize, a.knn_space) for a in default} == {("centroids", "feature")}
    inputs = ca_blocks(_built("table3", "centroid_attention_t1_normalize_inputs"))
    assert {(a.normalize, a.knn_space) for a in inputs} == {("inputs", "feature")}
    xyz = ca_blocks(_built("table3", "centroid_attention_t1_knn_xyz"))
    assert {(a.normalize, a.knn_space) for a in xyz} == {("centroids", "xyz")}

    def pools(model):
        return [m for m in model.modules() if type(m).__name__ == "ContextPool"]

    assert {p.k for p in pools(_built("contextpool", "context_pool"))} == {16}
    assert {p.k for p in pools(_built("contextpool", "context_pool_k32"))} == {32}
    assert pools(_built("contextpool", "none")) == []


def test_every_comparison_with_a_control_has_a_decisive_budget_of_10_epochs():
    for name in ("table3", "contextpool", "sequoia_seg", "sequoia_cls"):
        comp = curves.COMPARISONS[name]
        assert comp.decisive == 10 and comp.decisive in comp.budgets and comp.control in comp.variants, name


def test_the_demo_capsule_comparison_trains_make_demos_capsule_stage():
    """``capsules_demo`` at 5 epochs is make demo's capsule stage: the same preset and models, only the
    run's bookkeeping (folder, evaluation, progress, workers) and the variant's model differ."""
    from pointabstract.engine import load_config

    comp = curves.COMPARISONS["capsules_demo"]
    assert comp.decisive == 5 and comp.decisive in comp.budgets and comp.control == "dynamic"
    assert comp.judged == {"chamfer": "min", "retrieval": "max"}
    for variant, preset in (("centroid", "capsules_demo_ca"), ("dynamic", "capsules_demo_dr"),
                            ("plain_autoencoder", "capsules_demo_floor")):
        ours = load_config(comp.preset, comp.overrides(variant, 5, 0, "out", {"data.workers": 0}))
        theirs = load_config(preset, {})
        assert ours.model == theirs.model and ours.model_args == theirs.model_args
        assert (ours.optim, ours.data.root, ours.data.num_points, ours.data.batch_size) == \
            (theirs.optim, theirs.data.root, theirs.data.num_points, theirs.data.batch_size)
    lr = load_config(comp.preset, comp.overrides("centroid_lr1e-4", 5, 0, "out", {}))
    assert lr.optim.lr == 1e-4 and lr.model == "capsule_ae_demo_ca"


def test_the_decoder_check_changes_only_the_decoder_and_builds_it():
    """``*_per_slot_decoder`` is its routing as make demo trains it with 3D-PointCapsNet's decoder
    (one MLP per point slot) instead of one shared MLP, and is paired with that routing as is."""
    from pointabstract.engine import load_config
    from pointabstract.models import build_model

    comp = curves.COMPARISONS["capsules_demo"]
    for routing in ("centroid", "dynamic"):
        check = f"{routing}_per_slot_decoder"
        assert (check, routing) in comp.pairs
        ours = load_config(comp.preset, comp.overrides(check, 5, 0, "out", {}))
        base = load_config(comp.preset, comp.overrides(routing, 5, 0, "out", {}))
        assert ours.model == base.model
        assert {k: v for k, v in ours.model_args.items() if k != "decoders"} == \
            {k: v for k, v in base.model_args.items() if k != "decoders"}
        assert (ours.model_args["decoders"], base.model_args.get("decoders", 1)) == (0, 1)
        slots = build_model(ours.model, **ours.model_args).decoder
        shared = build_model(base.model, **base.model_args).decoder
        assert (slots.groups, shared.groups) == (slots.points_per_capsule, 1)
