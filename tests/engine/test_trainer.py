import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml

from pointabstract.engine import atomic_save, evaluate_checkpoint, load_checkpoint, load_config, train
from tests.fixtures import free_port, tiny_sizes

ROOT = Path(__file__).resolve().parents[2]


def test_trains_logs_checkpoints_and_plots(tiny_overrides, tmp_path):
    cfg = load_config(None, [*tiny_overrides, "optim.epochs=3", "log.tensorboard=true"])
    metrics = train(cfg)
    out = tmp_path / "run"
    for name in ("last.pt", "best.pt", "config.yaml", "metrics.jsonl", "metrics.json", "curves.png",
                 "confusion.png"):
        assert (out / name).is_file(), name
    assert list((out / "tb").iterdir())
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["epoch"] for r in rows] == [1, 2, 3]
    assert all(r["samples_per_s"] > 0 and 0 <= r["test_overall_accuracy"] <= 1 for r in rows)
    assert metrics["samples"] == 12 and set(metrics["per_class_accuracy"]) == {"sphere", "square", "line"}
    ckpt = load_checkpoint(out / "last.pt")
    assert ckpt["epoch"] == 3 and ckpt["model_name"] == "centroid_transformer"
    assert ckpt["config"]["model.widths"] == tiny_sizes("centroid_transformer")["model.widths"]


def test_resume_reproduces_the_uninterrupted_run(tiny_overrides, tmp_path):
    full = load_config(None, [*tiny_overrides, "optim.epochs=3", f"log.out_dir={tmp_path / 'full'}"])
    train(full)
    parted = load_config(None, [*tiny_overrides, "optim.epochs=3", f"log.out_dir={tmp_path / 'part'}"])
    train(parted, max_epochs=1)  # "interrupted" after epoch 1
    train(parted, resume=True, max_epochs=1)
    train(parted, resume=True)
    a = (tmp_path / "full" / "metrics.jsonl").read_text().splitlines()
    b = (tmp_path / "part" / "metrics.jsonl").read_text().splitlines()
    strip = [{k: v for k, v in json.loads(line).items() if k not in ("samples_per_s", "epoch_s")}
             for line in a + b]
    assert strip[:3] == strip[3:]
    wa = load_checkpoint(tmp_path / "full" / "last.pt")["model"]
    wb = load_checkpoint(tmp_path / "part" / "last.pt")["model"]
    assert all(torch.equal(wa[k], wb[k]) for k in wa)


def test_resume_refuses_another_model(tiny_overrides, tmp_path):
    train(load_config(None, [*tiny_overrides, "optim.epochs=1"]))
    other = load_config(None, [*tiny_overrides, "optim.epochs=2", "model=ct_fps_only"])
    with pytest.raises(ValueError, match="holds a 'centroid_transformer' model, the config asks for 'ct_fps_only'"):
        train(other, resume=True)


def test_atomic_save_survives_a_failure_mid_write(tmp_path, monkeypatch):
    path = tmp_path / "ck.pt"
    atomic_save({"model": {}, "config": {"model": "m"}, "epoch": 1}, path)

    def broken_save(obj, f):
        f.write(b"partial bytes")
        raise KeyboardInterrupt("killed mid-save")

    monkeypatch.setattr(torch, "save", broken_save)
    with pytest.raises(KeyboardInterrupt):
        atomic_save({"model": {}, "config": {"model": "m"}, "epoch": 2}, path)
    monkeypatch.undo()
    assert load_checkpoint(path)["epoch"] == 1
    assert [p.name for p in tmp_path.iterdir()] == ["ck.pt"]


def test_atomic_save_survives_sigkill(tmp_path):
    path = tmp_path / "ck.pt"
    atomic_save({"model": {}, "config": {"model": "m"}, "epoch": 1}, path)
    code = (f"import torch; from pointabstract.engine import atomic_save; import os, signal\n"
            f"big = {{'model': {{'w': torch.zeros(50_000_000)}}, 'config': {{}}, 'epoch': 2}}\n"
            f"real = torch.save\n"
            f"def save(o, f):\n    f.write(b'x' * 1000); f.flush(); os.kill(os.getpid(), signal.SIGKILL)\n"
            f"torch.save = save\natomic_save(big, {str(path)!r})\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT)
    assert proc.returncode == -9
    assert load_checkpoint(path)["epoch"] == 1


def test_evaluate_checkpoint_writes_a_report(tiny_overrides, tmp_path):
    train(load_config(None, tiny_overrides))
    metrics = evaluate_checkpoint(tmp_path / "run" / "last.pt", out_dir=tmp_path / "report", votes=2)
    for name in ("metrics.json", "report.md", "confusion.png", "curves.png"):
        assert (tmp_path / "report" / name).is_file()
    assert "overall accuracy" in (tmp_path / "report" / "report.md").read_text()
    assert metrics["votes"] == 2 and metrics["samples"] == 12


@pytest.mark.slow
def test_two_process_gloo_ddp(tiny_overrides, tmp_path):
    args = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
            f"--master_port={free_port()}",
            "-m", "pointabstract.cli", "train", "demo", *tiny_overrides, "optim.epochs=1"]
    proc = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = tmp_path / "run"
    assert (out / "last.pt").is_file() and len(list(out.glob("*.pt"))) == 2  # last + best, rank 0 only
    assert len((out / "metrics.jsonl").read_text().splitlines()) == 1
    assert proc.stdout.count("test overall accuracy") == 1  # rank 0 alone prints the summary


def test_resume_finishes_a_run_killed_in_its_final_phase(tiny_overrides, tmp_path):
    out = tmp_path / "run"
    cfg = load_config(None, tiny_overrides)
    train(cfg)
    expected = json.loads((out / "metrics.json").read_text())
    # the state of a kill after the final last.pt: no metrics/report, best.pt one epoch behind
    last = load_checkpoint(out / "last.pt")
    last["best_epoch"] = last["epoch"]
    atomic_save(last, out / "last.pt")
    atomic_save({**last, "epoch": 1}, out / "best.pt")
    for name in ("metrics.json", "report.md", "curves.png"):
        (out / name).unlink()
    metrics = train(cfg, resume=True)
    assert json.loads((out / "metrics.json").read_text()) == expected
    assert metrics["overall_accuracy"] == expected["overall_accuracy"]
    assert (out / "report.md").is_file() and (out / "curves.png").is_file()
    best = load_checkpoint(out / "best.pt")
    assert best["epoch"] == 2 and all(torch.equal(best["model"][k], last["model"][k]) for k in last["model"])


def test_resume_refuses_a_changed_config_unless_asked(tiny_overrides, tmp_path):
    out = tmp_path / "run"
    train(load_config(None, [*tiny_overrides, "optim.epochs=1"]))
    changed = load_config(None, [*tiny_overrides, "optim.epochs=2", "optim.lr=0.002", "data.num_points=40"])
    with pytest.raises(ValueError, match=r"differs from the one .*last.pt was trained with: data.num_points 48 -> "
                                         r"40, optim.lr 0.001 -> 0.002; pass --allow-config-change"):
        train(changed, resume=True)
    assert load_checkpoint(out / "last.pt")["epoch"] == 1  # nothing was touched
    train(changed, resume=True, allow_config_change=True)
    history = yaml.safe_load((out / "config_changes.yaml").read_text())
    assert history[0]["epoch"] == 1 and history[0]["changes"]["optim.lr"] == {"from": 0.001, "to": 0.002}
    assert set(history[0]["changes"]) == {"optim.lr", "data.num_points", "optim.epochs"}
    assert yaml.safe_load((out / "config.yaml").read_text())["optim.lr"] == 0.002
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert rows[0]["lr"] == 0.001 and rows[1]["lr"] == 0.002  # the new lr is used, not the saved one
    # longer training alone (optim.epochs) is not a change that needs asking
    train(load_config(None, [*tiny_overrides, "optim.epochs=3", "optim.lr=0.002", "data.num_points=40"]),
          resume=True)
    assert load_checkpoint(out / "last.pt")["epoch"] == 3


def test_resume_with_weights_that_do_not_fit_is_one_line(tiny_overrides, tmp_path):
    train(load_config(None, [*tiny_overrides, "optim.epochs=1"]))
    wider = load_config(None, [*tiny_overrides, "model.widths=[8, 16, 16, 40]"])  # not the tiny widths
    with pytest.raises(ValueError, match=r"last.pt does not fit the 'centroid_transformer' model of this config: "
                                         r"\d+ mis-shaped weights \(e.g. '.*'\)$"):
        train(wider, resume=True, allow_config_change=True)


def test_a_diverging_run_stops_and_keeps_the_last_good_checkpoint(tiny_overrides, tmp_path, monkeypatch):
    from pointabstract.engine.tasks import ClassificationTask
    from pointabstract.engine.trainer import TrainingDivergedError

    real = ClassificationTask.step
    calls = []

    def step(self, model, batch, device):  # the loss turns NaN at the 5th step (epoch 2 of 3 per epoch)
        loss, stats = real(self, model, batch, device)
        calls.append(1)
        return (loss * float("nan") if len(calls) == 5 else loss), stats

    monkeypatch.setattr(ClassificationTask, "step", step)
    from pointabstract.engine.tasks import preflight

    monkeypatch.setattr(preflight, "check_step_memory", lambda *a, **k: None)  # its probe runs a step too
    out = tmp_path / "run"
    with pytest.raises(TrainingDivergedError, match=r"loss became NaN/Inf at epoch 2 step 5 \(optim.lr 0.001\); "
                                                    r"the last good checkpoint is .*last.pt \(epoch 1\)"):
        train(load_config(None, tiny_overrides))
    ckpt = load_checkpoint(out / "last.pt")
    assert ckpt["epoch"] == 1 and all(v.isfinite().all() for v in ckpt["model"].values() if v.is_floating_point())


def test_a_huge_learning_rate_is_stopped_by_the_nan_check(tiny_overrides, tmp_path):
    from pointabstract.engine.trainer import TrainingDivergedError

    diverged = r"(loss|weights|activations) became NaN/Inf (at epoch \d+ step \d+|while evaluating epoch \d+)"
    with pytest.raises(TrainingDivergedError, match=diverged):
        train(load_config(None, [*tiny_overrides, "optim.lr=1e6", "optim.epochs=4"]))
    for name in ("last.pt", "best.pt"):
        if (tmp_path / "run" / name).exists():
            state = load_checkpoint(tmp_path / "run" / name)["model"]
            assert all(v.isfinite().all() for v in state.values() if v.is_floating_point())


def test_nan_weights_are_refused_by_restore_and_resume(tiny_overrides, tmp_path):
    train(load_config(None, [*tiny_overrides, "optim.epochs=1"]))
    out = tmp_path / "run"
    ckpt = load_checkpoint(out / "last.pt")
    name = next(k for k, v in ckpt["model"].items() if v.is_floating_point())
    ckpt["model"][name] = ckpt["model"][name] * float("nan")
    atomic_save(ckpt, out / "last.pt")
    with pytest.raises(ValueError, match=rf"last.pt holds NaN/Inf weights \(1 tensor\(s\), e.g. '{name}'\)"):
        evaluate_checkpoint(out / "last.pt", out_dir=tmp_path / "eval")
    with pytest.raises(ValueError, match=r"last.pt holds NaN/Inf weights"):
        train(load_config(None, [*tiny_overrides, "optim.epochs=2"]), resume=True)


def test_stale_checkpoint_temporaries_are_removed_at_start(tiny_overrides, tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / ".last.pt.tmp-999999999").write_bytes(b"x" * 1000)
    train(load_config(None, [*tiny_overrides, "optim.epochs=1"]))
    assert not list(out.glob(".*tmp*"))


def test_logs_one_line_per_epoch_without_carriage_returns(tiny_overrides, capsys, notes):
    train(load_config(None, [*tiny_overrides, "log.progress=true"]))
    captured, said = capsys.readouterr(), notes()
    assert "\r" not in captured.out + captured.err + said
    lines = [line for line in said.splitlines() if line.startswith("epoch ")]
    assert len(lines) == 2 and lines[1].startswith("epoch 2/2 ") and "train_loss" in lines[1]


def test_nan_activations_in_evaluation_are_reported_as_divergence(tiny_overrides, tmp_path, monkeypatch):
    from pointabstract.engine.tasks import ClassificationTask
    from pointabstract.engine.trainer import TrainingDivergedError

    real = ClassificationTask.evaluate
    calls = []

    def evaluate(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise ValueError("query holds NaN or Inf values (first at index (0, 0, 0))")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(ClassificationTask, "evaluate", evaluate)
    with pytest.raises(TrainingDivergedError, match=r"activations became NaN/Inf while evaluating epoch 2 \(finite "
                                                    r"weights .*: query holds NaN.*\); the last good checkpoint is "
                                                    r".*last.pt \(epoch 1\)"):
        train(load_config(None, tiny_overrides))


def test_how_often_a_run_evaluates_does_not_change_its_training(tiny_overrides, tmp_path):
    # dropout draws from the global RNG, which a DataLoader pass also draws from (its workers'
    # base seed): the test loader has a generator of its own, so evaluating changes nothing
    weights = []
    for every in (1, 3):
        out = tmp_path / f"every{every}"
        train(load_config(None, [*tiny_overrides, "optim.epochs=3", "model.dropout=0.5", f"log.eval_every={every}",
                                 f"log.out_dir={out}"]))
        weights.append(load_checkpoint(out / "last.pt")["model"])
    assert [k for k in weights[0] if not torch.equal(weights[0][k], weights[1][k])] == []


def test_resuming_with_more_epochs_follows_the_longer_schedule(tiny_overrides, tmp_path):
    longer = [*tiny_overrides, "optim.epochs=3", "optim.optimizer=adamw", "optim.schedule=cosine"]
    train(load_config(None, [*longer, f"log.out_dir={tmp_path / 'full'}"]))
    short = load_config(None, [*longer, "optim.epochs=1", f"log.out_dir={tmp_path / 'part'}"])
    train(short)  # a finished 1-epoch run ...
    train(load_config(None, [*longer, f"log.out_dir={tmp_path / 'part'}"]), resume=True)  # ... taken to 3
    rows = {name: [json.loads(line) for line in (tmp_path / name / "metrics.jsonl").read_text().splitlines()]
            for name in ("full", "part")}
    # a row's lr is the one set for the next epoch: 0 after the short run's last epoch, then the long run's
    assert rows["part"][0]["lr"] == 0 and [r["lr"] for r in rows["part"][1:]] == [r["lr"] for r in rows["full"][1:]]
    strip = [{k: v for k, v in r.items() if k not in ("samples_per_s", "epoch_s", "lr")} for r in rows["part"]]
    assert strip == [{k: v for k, v in r.items() if k not in ("samples_per_s", "epoch_s", "lr")}
                     for r in rows["full"]]
    wa = load_checkpoint(tmp_path / "full" / "last.pt")["model"]
    wb = load_checkpoint(tmp_path / "part" / "last.pt")["model"]
    assert all(torch.equal(wa[k], wb[k]) for k in wa)


def test_resuming_below_the_epochs_done_is_refused(tiny_overrides, tmp_path):
    train(load_config(None, [*tiny_overrides, "optim.epochs=2"]))
    with pytest.raises(ValueError, match=r"optim.epochs 1 is below the 2 epochs .*last\.pt has already trained"):
        train(load_config(None, [*tiny_overrides, "optim.epochs=1"]), resume=True)


def test_a_step_budget_ends_the_run_mid_epoch(tiny_overrides, tmp_path):
    # 24 training shapes in batches of 8: 3 steps an epoch, so 7 steps end in epoch 3
    cfg = load_config(None, [*tiny_overrides, "optim.epochs=10", "optim.max_steps=7", "optim.schedule=cosine"])
    metrics = train(cfg)
    out = tmp_path / "run"
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [(r["epoch"], r["step"]) for r in rows] == [(1, 3), (2, 6), (3, 7)]
    assert rows[-1]["lr"] == 0  # the cosine schedule spans the 3 epochs the budget leaves
    assert load_checkpoint(out / "last.pt")["step"] == 7 and (out / "report.md").is_file()
    assert metrics["samples"] == 12
    train(cfg, resume=True)  # a finished run stays finished
    assert len((out / "metrics.jsonl").read_text().splitlines()) == 3
    with pytest.raises(ValueError, match=r"optim.max_steps 5 is below the 7 steps .* has already trained"):
        train(load_config(None, [*tiny_overrides, "optim.epochs=10", "optim.max_steps=5",
                                 "optim.schedule=cosine"]), resume=True)


def test_a_step_budget_of_whole_epochs_is_the_epoch_run(tiny_overrides, tmp_path):
    base = [*tiny_overrides, "optim.schedule=cosine"]
    train(load_config(None, [*base, "optim.epochs=2", f"log.out_dir={tmp_path / 'epochs'}"]))
    train(load_config(None, [*base, "optim.epochs=50", "optim.max_steps=6", f"log.out_dir={tmp_path / 'steps'}"]))
    wa = load_checkpoint(tmp_path / "epochs" / "last.pt")["model"]
    wb = load_checkpoint(tmp_path / "steps" / "last.pt")["model"]
    assert all(torch.equal(wa[k], wb[k]) for k in wa)


def _rows(out) -> list[dict]:
    return [{k: v for k, v in json.loads(line).items() if k not in ("samples_per_s", "epoch_s")}
            for line in (out / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("every", ["epoch", "step"])
def test_a_step_budget_run_interrupted_and_resumed_ends_like_the_uninterrupted_one(tiny_overrides, tmp_path,
                                                                                   every):
    # 3 steps an epoch: 8 steps are 2 whole epochs and 2 steps of the third
    budget = [*tiny_overrides, "optim.epochs=10", "optim.max_steps=8", "optim.optimizer=adamw",
              "optim.schedule=cosine", f"optim.schedule_every={every}", "model.dropout=0.5"]
    train(load_config(None, [*budget, f"log.out_dir={tmp_path / 'full'}"]))
    parted = load_config(None, [*budget, f"log.out_dir={tmp_path / 'part'}"])
    train(parted, max_epochs=1)  # "interrupted" after epoch 1
    assert load_checkpoint(tmp_path / "part" / "last.pt")["step"] == 3
    train(parted, resume=True)
    assert [(r["epoch"], r["step"]) for r in _rows(tmp_path / "full")] == [(1, 3), (2, 6), (3, 8)]
    assert _rows(tmp_path / "part") == _rows(tmp_path / "full")
    wa, wb = (load_checkpoint(tmp_path / name / "last.pt") for name in ("full", "part"))
    assert wa["step"] == wb["step"] == 8
    assert all(torch.equal(wa["model"][k], wb["model"][k]) for k in wa["model"])


def test_epoch_end_hooks_see_the_run_once_per_epoch(tiny_overrides, tmp_path):
    seen = []

    def hook(run):  # called after last.pt is written: it holds this epoch
        saved = load_checkpoint(run.out / "last.pt")
        seen.append((run.epoch, run.step, run.row["epoch"], saved["epoch"], saved["step"], run.epochs,
                     "overall_accuracy" in run.metrics, run.core is run.model))

    cfg = load_config(None, [*tiny_overrides, "optim.epochs=10", "optim.max_steps=7", "log.eval_every=2"])
    train(cfg, max_epochs=1, on_epoch_end=[hook])
    metrics = train(cfg, resume=True, on_epoch_end=[hook, lambda run: seen.append("second")])
    # each epoch once, in the call that trained it; 7 steps of 3 an epoch are 3 epochs; evaluated at
    # epoch 2 (eval_every) and 3 (the last); one process: the model is not wrapped
    assert seen == [(1, 3, 1, 1, 3, 3, False, True), (2, 6, 2, 2, 6, 3, True, True), "second",
                    (3, 7, 3, 3, 7, 3, True, True), "second"]
    assert metrics["samples"] == 12


def test_a_cosine_over_steps_follows_the_step_budget(tiny_overrides, tmp_path):
    # 7 steps (3 an epoch): the cosine advances every step and reaches 0 at step 7; a row's lr is
    # the one set for the next step
    train(load_config(None, [*tiny_overrides, "optim.epochs=10", "optim.max_steps=7", "optim.schedule=cosine",
                             "optim.schedule_every=step"]))
    rows = _rows(tmp_path / "run")
    want = [1e-3 * (1 + math.cos(math.pi * step / 7)) / 2 for step in (3, 6)]
    assert [r["lr"] for r in rows[:2]] == pytest.approx(want, rel=1e-9)
    assert rows[2]["lr"] == pytest.approx(0, abs=1e-12)
    # the step decay counts steps too (x0.5 after steps 2, 4 and 6), across a resume as well
    train(load_config(None, [*tiny_overrides, "optim.epochs=10", "optim.max_steps=7", "optim.schedule=step",
                             "optim.step_size=2", "optim.gamma=0.5", "optim.schedule_every=step",
                             f"log.out_dir={tmp_path / 'decay'}"]), max_epochs=1)
    train(load_config(None, [*tiny_overrides, "optim.epochs=10", "optim.max_steps=7", "optim.schedule=step",
                             "optim.step_size=2", "optim.gamma=0.5", "optim.schedule_every=step",
                             f"log.out_dir={tmp_path / 'decay'}"]), resume=True)
    assert [r["lr"] for r in _rows(tmp_path / "decay")] == pytest.approx([1e-3 / 2, 1e-3 / 8, 1e-3 / 8])


def test_a_run_cut_mid_epoch_by_its_step_budget_is_not_extended(tiny_overrides, tmp_path):
    # 7 steps of 3 an epoch: epoch 3 was cut after 1 of its 3 steps
    train(load_config(None, [*tiny_overrides, "optim.epochs=10", "optim.max_steps=7"]))
    for more in ("optim.max_steps=8", "optim.max_steps=0"):
        with pytest.raises(ValueError, match=r"last.pt ended 7 steps in, inside epoch 3, where optim.max_steps 7 "
                                             r"stopped it; a run resumes only at an epoch boundary, so "
                                             r"(optim.max_steps 8|no step budget) cannot continue it exactly"):
            train(load_config(None, [*tiny_overrides, "optim.epochs=10", more]), resume=True)
    assert load_checkpoint(tmp_path / "run" / "last.pt")["step"] == 7  # nothing was touched
    # a budget that ended on an epoch boundary continues exactly (tested above for epochs)
    train(load_config(None, [*tiny_overrides, "optim.epochs=10", "optim.max_steps=6",
                             f"log.out_dir={tmp_path / 'whole'}"]))
    train(load_config(None, [*tiny_overrides, "optim.epochs=10", "optim.max_steps=8",
                             f"log.out_dir={tmp_path / 'whole'}"]), resume=True)
    assert load_checkpoint(tmp_path / "whole" / "last.pt")["step"] == 8
