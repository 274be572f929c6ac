"""Training on two machines, as users launch it: one ``torchrun --nnodes=2 --nproc_per_node=1`` per
node, meeting at a c10d rendezvous (here two "nodes" on this machine, at 127.0.0.1, gloo).

Two nodes of one process each train like one process with the same global batch, for every task
(the processes differ from test_ddp_equivalence.py's only in how they met: ranks from the
rendezvous, LOCAL_RANK 0 on both). Weights: every weight matrix and kernel (a ``*weight`` of 2
dimensions or more) within 1e-4 of the one-process run's, a tenth of one Adam step at the lr
used (measured, largest difference after 2 epochs: classification 3.6e-6, reconstruction 1.2e-5,
part segmentation 3.6e-6); biases and one-dimensional tensors are not compared, for the reason
test_ddp_equivalence.py gives (Adam turns float noise in the zero gradients of biases that
BatchNorm cancels into steps of full size, up to 8.5e-3 here, and BatchNorm's running means
follow them). A node that dies (its torchrun agent and worker killed at once) ends the
other node within seconds, its process saying so in one ``error:`` line.
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pointabstract.engine import load_checkpoint
from tests.fixtures import free_port, tiny_model

ROOT = Path(__file__).resolve().parents[2]
TOLERANCE = 1e-4
WEIGHTS = 1e-4  # a tenth of one Adam step at optim.lr 1e-3 (a wrong shard or gradient moves weights by steps)
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_WAIT_POLICY": "PASSIVE"}


def _node(port: int, args: list[str], log: Path) -> subprocess.Popen:
    """One node's ``torchrun`` (its agent starts the node's one training process)."""
    command = [sys.executable, "-m", "torch.distributed.run", "--nnodes=2", "--nproc_per_node=1",
               "--rdzv_backend=c10d", f"--rdzv_endpoint=127.0.0.1:{port}", f"--rdzv_id=test{port}",
               "-m", "pointabstract.cli", "train", *args]
    return subprocess.Popen(command, cwd=ROOT, env=ENV, stdout=(log / "out").open("w"),
                            stderr=(log / "err").open("w"))


def _two_nodes(args: list[str], tmp_path: Path) -> tuple[list[subprocess.Popen], list[Path]]:
    port, logs = free_port(), [tmp_path / "node0", tmp_path / "node1"]
    for log in logs:
        log.mkdir()
    return [_node(port, args, log) for log in logs], logs


def _rows(out: Path) -> list[dict]:
    import json

    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    from tests.fixtures import write_tiny_synthetic

    return write_tiny_synthetic(tmp_path_factory.mktemp("synth"), n=64)


def _task_args(task: str, tiny_data: Path, synthetic: Path) -> tuple[str, list[str], str]:
    """(preset, overrides, metric compared) of a tiny run of ``task``, one global batch of 8."""
    common = ["data.batch_size=8", "data.workers=0", "optim.epochs=2", "log.tensorboard=false",
              "log.progress=true", "device=cpu"]
    if task == "classification":
        return "demo", [f"data.root={tiny_data}", "data.num_points=48", "data.eval_batch_size=12",
                        "model.dropout=0.0", *common, *tiny_model("centroid_transformer")], "overall_accuracy"
    model, dataset, metric = {"reconstruction": ("capsule_ae_demo_dr", "modelnet40", "chamfer"),
                              "part_segmentation": ("sequoia_seg_demo", "shapenet_part", "instance_miou")}[task]
    return model, [f"data.root={synthetic}", f"data.dataset={dataset}", "data.num_points=64",
                   "data.eval_batch_size=8", *common, *tiny_model(model)], metric


@pytest.mark.slow
@pytest.mark.parametrize("task", ["classification", "reconstruction", "part_segmentation"])
def test_two_nodes_train_like_one_process(task, tiny_data, synthetic, tmp_path):
    preset, args, metric = _task_args(task, tiny_data, synthetic)
    one = subprocess.run([sys.executable, "-m", "pointabstract.cli", "train", preset, *args,
                          f"log.out_dir={tmp_path / 'one'}"], cwd=ROOT, env=ENV, capture_output=True, text=True,
                         timeout=600)
    assert one.returncode == 0, one.stderr[-3000:]
    nodes, logs = _two_nodes([preset, *args, f"log.out_dir={tmp_path / 'two'}"], tmp_path)
    for node, log in zip(nodes, logs):
        assert node.wait(timeout=600) == 0, (log / "err").read_text()[-3000:]
    summaries = [(log / "out").read_text().count("; outputs in ") for log in logs]
    assert sorted(summaries) == [0, 1]  # one rank 0 across the two nodes: it alone logs
    a, b = _rows(tmp_path / "one"), _rows(tmp_path / "two")
    assert len(a) == len(b) == 2
    for x, y in zip(a, b):
        assert x["step"] == y["step"] and x["test_samples"] == y["test_samples"]
        assert abs(x["train_loss"] - y["train_loss"]) <= TOLERANCE * max(1.0, abs(x["train_loss"])), (x, y)
        gap = 1e-4 * abs(x[f"test_{metric}"]) if metric == "chamfer" else 1 / x["test_samples"] + 1e-9
        assert abs(x[f"test_{metric}"] - y[f"test_{metric}"]) <= gap, (x, y)
    w1, w2 = (load_checkpoint(tmp_path / run / "last.pt")["model"] for run in ("one", "two"))
    matrices = [key for key, value in w1.items() if key.endswith("weight") and value.dim() >= 2]
    assert len(matrices) >= 4
    worst = max((float((w1[key] - w2[key]).abs().max()), key) for key in matrices)
    print(f"{task}: largest weight-matrix difference {worst[0]:.1e} ({worst[1]})")  # shown with pytest -s
    assert worst[0] <= WEIGHTS, worst


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
        except (OSError, IndexError, ValueError):
            continue
    return found


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds a node's processes in /proc")
@pytest.mark.parametrize("dies", ["rank 0", "rank 1"])
def test_a_node_that_dies_ends_the_other_within_seconds(dies, tiny_overrides, tmp_path):
    out = tmp_path / "run"
    nodes, logs = _two_nodes(["demo", *tiny_overrides, "optim.epochs=500", "log.progress=true"], tmp_path)
    try:
        deadline = time.monotonic() + 300
        while not ((out / "metrics.jsonl").is_file() and len(_rows(out)) >= 2):
            assert time.monotonic() < deadline and all(n.poll() is None for n in nodes)
            time.sleep(0.1)
        main = [i for i, log in enumerate(logs) if "epoch 1/500" in (log / "out").read_text()]
        assert len(main) == 1
        dead = main[0] if dies == "rank 0" else 1 - main[0]
        for pid in [nodes[dead].pid, *_children(nodes[dead].pid)]:  # the machine goes: agent and worker
            os.kill(pid, signal.SIGKILL)
        killed = time.monotonic()
        other = nodes[1 - dead]
        other.wait(timeout=60)
        took = time.monotonic() - killed
    finally:
        for node in nodes:
            for pid in [*_children(node.pid), node.pid] if node.poll() is None else []:
                os.kill(pid, signal.SIGKILL)
    print(f"the node of {dies} died: the other ended {took:.1f} s later")  # shown with pytest -s
    err = (logs[1 - dead] / "err").read_text()
    ours = [line for line in err.splitlines() if line.startswith(("error: ", "interrupted: ", "terminated "))]
    rank = 1 if dies == "rank 0" else 0
    assert other.returncode != 0 and took < 20, (took, err[-3000:])
    assert len(ours) == 1 and ours[0].startswith(f"error: process {rank} stopped because another training "
                                                 "process failed or was killed (its error, if it could print "
                                                 "one, is above, or in its own node's output)"), err[-3000:]
    assert "pointabstract/" not in err  # no traceback from our code (torchrun's agent prints its own report)
    if rank == 0:
        assert f"{out / 'last.pt'} (epoch " in ours[0] and ours[0].endswith("--resume")
    assert load_checkpoint(out / "last.pt")["epoch"] >= 1
