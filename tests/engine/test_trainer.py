import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from pointabstract.engine import atomic_save, evaluate_checkpoint, load_checkpoint, load_config, train

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
    assert ckpt["config"]["model.widths"] == [8, 16, 16, 24]


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
    atomic_save({"model": {}, "config": {}, "epoch": 1}, path)

    def broken_save(obj, f):
        f.write(b"partial bytes")
        raise KeyboardInterrupt("killed mid-save")

    monkeypatch.setattr(torch, "save", broken_save)
    with pytest.raises(KeyboardInterrupt):
        atomic_save({"model": {}, "config": {}, "epoch": 2}, path)
    monkeypatch.undo()
    assert load_checkpoint(path)["epoch"] == 1
    assert [p.name for p in tmp_path.iterdir()] == ["ck.pt"]


def test_atomic_save_survives_sigkill(tmp_path):
    path = tmp_path / "ck.pt"
    atomic_save({"model": {}, "config": {}, "epoch": 1}, path)
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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_process_gloo_ddp(tiny_overrides, tmp_path):
    args = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
            f"--master_port={_free_port()}",
            "-m", "pointabstract.cli", "train", "demo", *tiny_overrides, "optim.epochs=1"]
    proc = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = tmp_path / "run"
    assert (out / "last.pt").is_file() and len(list(out.glob("*.pt"))) == 2  # last + best, rank 0 only
    assert len((out / "metrics.jsonl").read_text().splitlines()) == 1
