"""Kill a training run (SIGKILL) at random moments, during checkpoint writes and during the
final phase, resume it each time, and end with exactly the files of an uninterrupted run."""

import functools
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from pointabstract.engine import load_checkpoint
from tests.fixtures import tiny_model, write_tiny_synthetic

ROOT = Path(__file__).resolve().parents[2]

# run by each training process: SIGKILL itself inside the N-th checkpoint write (the temporary
# file half written, before its rename) or at the start of the final report, as KILL_AT says
PRELUDE = """
import os, signal, sys
import pointabstract.engine.run_dir as run_dir
kind, _, count = os.environ.get("KILL_AT", "").partition(":")
calls = [0]
real_fsync = os.fsync

def fsync(fd):
    if ".pt.tmp-" in os.readlink(f"/proc/self/fd/{fd}"):
        calls[0] += 1
        if kind == "save" and calls[0] == int(count):
            os.ftruncate(fd, os.fstat(fd).st_size // 2); os.kill(os.getpid(), signal.SIGKILL)
    return real_fsync(fd)

def report(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)

os.fsync = fsync
if kind == "report":
    run_dir.write_report = report
from pointabstract.cli import main
sys.exit(main(sys.argv[1:]))
"""

TIMING = ("samples_per_s", "epoch_s")


def _run_task(args, out: Path, kill_at: str = "", kill_after: float | None = None, config: str = "demo") -> int:
    resume = ["--resume"] if (out / "last.pt").is_file() else []
    env = {**os.environ, "KILL_AT": kill_at, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", PRELUDE, "train", config, *args, f"log.out_dir={out}",
                             *resume], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if kill_after is not None:
        try:
            proc.wait(timeout=kill_after)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode in (0, -signal.SIGKILL), err.decode()[-3000:]
    return proc.returncode


def _rows(out: Path) -> list[dict]:
    return [{k: v for k, v in json.loads(line).items() if k not in TIMING}
            for line in (out / "metrics.jsonl").read_text().splitlines()]


def _tiny_run(model: str, root: Path, dataset: str) -> list[str]:
    """key=value overrides training ``model`` at its registry tiny size on the tiny synthetic set."""
    return [f"data.root={root}", f"data.dataset={dataset}", "data.num_points=64", "data.batch_size=4",
            "data.eval_batch_size=8", "data.workers=0", "log.progress=false", "log.tensorboard=false",
            "device=cpu", *tiny_model(model)]


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    return write_tiny_synthetic(tmp_path_factory.mktemp("synth"))


@pytest.mark.slow
@pytest.mark.parametrize("task", ["classification", "reconstruction", "part_segmentation"])
def test_killed_and_resumed_runs_end_like_an_uninterrupted_one(tiny_overrides, synthetic, tmp_path, task):
    config, args = {
        "classification": ("demo", [*tiny_overrides, "optim.epochs=3"]),
        "reconstruction": ("capsule_ae_demo_dr",
                           [*_tiny_run("capsule_ae_demo_dr", synthetic, "modelnet40"), "optim.epochs=3"]),
        "part_segmentation": ("sequoia_seg_demo",
                              [*_tiny_run("sequoia_seg_demo", synthetic, "shapenet_part"), "optim.epochs=3"]),
    }[task]
    _run = functools.partial(_run_task, config=config)
    full, chain = tmp_path / "full", tmp_path / "chain"
    assert _run(args, full) == 0
    rng = random.Random(11)
    # 3 epochs write 3 last.pt + the best.pt of improving epochs (epoch 1 always): the kills
    # inside saves and reports always land (each run has at least two saves left), the timed
    # ones land wherever the moment falls (imports, an epoch, a save) or after the run ended
    kills = ["save:2", "save:1", "save:2", "report", f"time:{rng.uniform(2, 8):.1f}",
             f"time:{rng.uniform(2, 8):.1f}", "report"]
    codes = []
    for kill in kills:
        started = time.perf_counter()
        if kill.startswith("time:"):
            codes.append(_run(args, chain, kill_after=float(kill[5:])))
        else:
            codes.append(_run(args, chain, kill_at=kill))
        assert time.perf_counter() - started < 300
    assert codes.count(-signal.SIGKILL) >= 5, codes  # the chain really was interrupted
    assert _run(args, chain) == 0  # the last resume finishes whatever is left
    assert _rows(chain) == _rows(full)
    assert json.loads((chain / "metrics.json").read_text()) == json.loads((full / "metrics.json").read_text())
    for name in ("last.pt", "best.pt"):
        a, b = load_checkpoint(full / name), load_checkpoint(chain / name)
        assert a["epoch"] == b["epoch"] and a["best_epoch"] == b["best_epoch"], name
        assert all(torch.equal(a["model"][k], b["model"][k]) for k in a["model"]), name
    assert load_checkpoint(chain / "best.pt")["epoch"] == load_checkpoint(chain / "last.pt")["best_epoch"]
    assert (chain / "report.md").is_file() and (chain / "curves.png").is_file()
    assert json.loads((chain / "metrics.json").read_text())["task"] == task
    assert not list(chain.glob(".*tmp*"))  # temporaries of killed saves were removed
