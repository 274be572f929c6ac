"""A 2-process gloo run on CPU trains like a 1-process run with the same global batch.

``data.batch_size`` is the global batch (each process takes half), each process's loss is
weighted by its share of the global batch, BatchNorm statistics are over the global batch
(``sync_bn``), so the two runs differ only by float summation order (measured: train loss
within 6e-6). Tolerance: per-epoch train loss and train accuracy within 1e-4 (absolute); test
accuracy within one test shape (1/12 here: a shape at a decision boundary may flip). Weights are
not compared: Adam turns the float noise in the (mathematically zero) gradients of biases
followed by BatchNorm into full-size steps (up to 0.017 apart), which BatchNorm cancels.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pointabstract.engine import load_checkpoint
from tests.fixtures import free_port, tiny_model

ROOT = Path(__file__).resolve().parents[2]
TOLERANCE = 1e-4


def _train(launcher: list[str], args: list[str], out: Path, config: str = "demo") -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, *launcher, "-m", "pointabstract.cli", "train", config, *args,
                           f"log.out_dir={out}", "log.progress=true"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def _rows(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_two_processes_match_one_with_the_same_global_batch(tiny_overrides, tmp_path):
    # no dropout: one process draws the masks of 8 clouds from one stream, two processes those of
    # 4 each from their own streams, so with dropout the runs differ by more than float noise
    args = [*tiny_overrides, "optim.epochs=3", "data.batch_size=8", "model.dropout=0.0"]
    one = _train([], args, tmp_path / "one")
    two = _train(["-m", "torch.distributed.run", "--nproc_per_node=2", f"--master_port={free_port()}"],
                 args, tmp_path / "two")
    assert two.stdout.count("test overall accuracy") == 1  # rank 0 alone prints the summary
    assert one.stdout.count("test overall accuracy") == 1
    for a, b in zip(_rows(tmp_path / "one"), _rows(tmp_path / "two"), strict=True):
        assert a["step"] == b["step"] and a["test_samples"] == b["test_samples"] == 12
        for key in ("train_loss", "train_accuracy"):
            assert abs(a[key] - b[key]) <= TOLERANCE, (key, a[key], b[key])
        for key in ("test_overall_accuracy", "test_mean_class_accuracy"):
            assert abs(a[key] - b[key]) <= 1 / 12 + 1e-9, (key, a[key], b[key])
    assert load_checkpoint(tmp_path / "two" / "last.pt")["epoch"] == 3


@pytest.mark.slow
def test_a_global_batch_that_does_not_split_is_refused(tiny_overrides, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
                           f"--master_port={free_port()}", "-m", "pointabstract.cli", "train", "demo",
                           *tiny_overrides, "data.batch_size=7"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode != 0
    assert "error: data.batch_size (7) is the global batch and must divide evenly over the 2 processes" \
        in proc.stderr
    # (torchrun prints its own ChildFailedError traceback; none comes from our code)
    assert "pointabstract/engine" not in proc.stderr and "pointabstract/cli" not in proc.stderr


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    from tests.fixtures import write_tiny_synthetic

    return write_tiny_synthetic(tmp_path_factory.mktemp("synth"), n=64)


@pytest.mark.slow
@pytest.mark.parametrize("model, dataset, metric", [
    # the decoder's training grids come from per-sample noise seeds (DecoderNoiseSeed), not from
    # each process's global RNG, so a sample's grid does not depend on how the batch is split
    ("capsule_ae_demo_dr", "modelnet40", "chamfer"),
    ("sequoia_seg_demo", "shapenet_part", "instance_miou")])
def test_two_processes_match_one_for_the_other_tasks(synthetic, tmp_path, model, dataset, metric):
    args = [f"data.root={synthetic}", f"data.dataset={dataset}", "data.num_points=64", "data.batch_size=8",
            "data.eval_batch_size=8", "data.workers=0", "optim.epochs=2", "log.tensorboard=false",
            "device=cpu", *tiny_model(model)]
    _train([], args, tmp_path / "one", config=model)
    _train(["-m", "torch.distributed.run", "--nproc_per_node=2", f"--master_port={free_port()}"],
           args, tmp_path / "two", config=model)
    one, two = _rows(tmp_path / "one"), _rows(tmp_path / "two")
    assert len(one) == len(two) == 2
    shapes = one[-1]["test_samples"] if "test_samples" in one[-1] else None
    for a, b in zip(one, two):
        assert a["step"] == b["step"]
        assert abs(a["train_loss"] - b["train_loss"]) <= TOLERANCE * max(1.0, abs(a["train_loss"])), (a, b)
        if metric == "chamfer":  # a mean over shapes of float sums: float noise only
            assert abs(a[f"test_{metric}"] - b[f"test_{metric}"]) <= 1e-4 * abs(a[f"test_{metric}"]), (a, b)
        else:  # a mean over shapes of per-shape IoUs: one shape's prediction may flip near a boundary
            n = shapes or 8
            assert abs(a[f"test_{metric}"] - b[f"test_{metric}"]) <= 1 / n + 1e-9, (a, b)
