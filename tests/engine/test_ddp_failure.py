"""A DDP run where one process fails ends everywhere, quickly, with that process's error, and
keeps its last good checkpoint for --resume."""

import subprocess
import sys
import time
from pathlib import Path

import pytest

from pointabstract.engine import load_checkpoint
from tests.fixtures import free_port

ROOT = Path(__file__).resolve().parents[2]

# run by each process: the process of rank FAIL_RANK raises in its FAIL_STEP-th training step
PRELUDE = """
import os, signal, sys
import pointabstract.engine.tasks.classification as classification
real, calls = classification.ClassificationTask.step, [0]

def step(self, model, batch, device):
    calls[0] += 1
    if os.environ["RANK"] == os.environ["FAIL_RANK"] and calls[0] == int(os.environ["FAIL_STEP"]):
        if os.environ["FAIL_HOW"] == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        raise ValueError(f"injected failure in the forward of process {os.environ['RANK']}")
    return real(self, model, batch, device)

classification.ClassificationTask.step = step
from pointabstract.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _torchrun(args, env, tmp_path):
    script = tmp_path / "prelude.py"
    script.write_text(PRELUDE)
    return subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
                           f"--master_port={free_port()}", str(script), "train", "demo", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)


@pytest.mark.slow
@pytest.mark.parametrize("fail_rank, how", [("0", "raise"), ("1", "raise"), ("1", "kill")])
def test_a_failing_process_ends_the_run_with_its_error(tiny_overrides, tmp_path, fail_rank, how):
    import os

    out = tmp_path / "run"
    args = [*tiny_overrides, "optim.epochs=3", "data.batch_size=8"]
    # 24 training shapes in global batches of 8: 3 steps an epoch; step 5 is in epoch 2
    env = {**os.environ, "FAIL_RANK": fail_rank, "FAIL_STEP": "5", "FAIL_HOW": how, "PYTHONPATH": str(ROOT)}
    started = time.monotonic()
    proc = _torchrun(args, env, tmp_path)
    assert proc.returncode != 0 and time.monotonic() - started < 60
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    if how == "raise":
        assert errors.pop(0) == f"error: injected failure in the forward of process {fail_rank}", proc.stderr
    other = "1" if fail_rank == "0" else "0"
    # the other process either sees the broken collective first (one error: line) or is ended by
    # torchrun's SIGTERM first (the interrupted / terminated line): a race, both say what is kept
    stopped = [line for line in proc.stderr.splitlines()
               if line.startswith((f"error: process {other} stopped because another training process failed",
                                   "interrupted: ", "terminated (SIGTERM): "))]
    assert stopped, proc.stderr[-3000:]
    if other == "0":
        assert "last.pt (epoch 1) is kept; continue with: pointabstract train demo " in stopped[0]
    assert f"[rank{other}]: Traceback" not in proc.stderr  # no second traceback hides the cause
    assert load_checkpoint(out / "last.pt")["epoch"] == 1
    env["FAIL_STEP"] = "0"  # no failure this time
    resumed = _torchrun([*args, "--resume"], env, tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert load_checkpoint(out / "last.pt")["epoch"] == 3
