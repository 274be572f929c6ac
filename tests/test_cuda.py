"""CUDA paths through the engine and the benchmarks on the device under test (CUDA; the CPU in
``bench gpu``'s dry run): a training run with AMP, evaluation and predict on the device, the ops
benchmark's device peers. The ops and models have their own CUDA tests beside their other tests
(tests/ops/test_ops_cuda.py, tests/models/test_models_cuda.py); ``pointabstract bench gpu`` runs
every ``cuda``-marked test.
"""

import numpy as np
import pytest
import torch

from pointabstract.bench.gpu_tests import device_under_test
from pointabstract.models import build_model

from .fixtures import tiny_model, write_tiny_modelnet

DEVICE = device_under_test()
pytestmark = [pytest.mark.cuda, pytest.mark.skipif(DEVICE is None, reason="no CUDA device")]


def test_bf16_autocast_forward_backward_is_finite():
    torch.manual_seed(0)
    model = build_model("centroid_transformer", tiny=True, num_classes=5).to(DEVICE).train()
    with torch.autocast(DEVICE.type, dtype=torch.bfloat16):
        logits = model(torch.rand(4, 256, 3, device=DEVICE))["logits"]
    loss = logits.float().logsumexp(-1).mean()
    loss.backward()
    assert torch.isfinite(loss) and all(torch.isfinite(p.grad).all() for p in model.parameters()
                                        if p.grad is not None)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A tiny classifier trained 2 epochs on the device with amp (bf16 autocast on CUDA)."""
    from pointabstract.engine import load_config, train

    root = tmp_path_factory.mktemp("cuda_run")
    write_tiny_modelnet(root / "data")
    cfg = load_config(None, [f"data.root={root / 'data'}", "data.num_points=48", "data.batch_size=8",
                             "data.eval_batch_size=12", "data.workers=0", "optim.epochs=2",
                             f"log.out_dir={root / 'run'}", "log.progress=false", "log.tensorboard=false",
                             f"device={DEVICE}", "amp=true", *tiny_model("centroid_transformer")])
    return root, train(cfg)


def test_training_with_amp_writes_cpu_checkpoints(trained):
    from pointabstract.engine import load_checkpoint

    root, metrics = trained
    assert 0 <= metrics["overall_accuracy"] <= 1
    ckpt = load_checkpoint(root / "run" / "last.pt")
    assert ckpt["epoch"] == 2
    assert all(v.device.type == "cpu" for v in ckpt["model"].values())


def test_eval_on_the_device_matches_the_cpu(trained):
    from pointabstract.engine import evaluate_checkpoint

    root, _ = trained
    cpu = evaluate_checkpoint(root / "run" / "last.pt", out_dir=root / "eval_cpu", device="cpu")
    dev = evaluate_checkpoint(root / "run" / "last.pt", out_dir=root / "eval_dev", device=str(DEVICE))
    assert dev["overall_accuracy"] == pytest.approx(cpu["overall_accuracy"], abs=1 / 12 + 1e-9)  # one shape


def test_predict_on_the_device_matches_the_cpu(trained):
    from pointabstract import load

    root, _ = trained
    clouds = np.random.default_rng(0).uniform(-1, 1, (3, 48, 3)).astype(np.float32)
    cpu = load(root / "run" / "last.pt", device="cpu").predict(clouds)
    dev = load(root / "run" / "last.pt", device=str(DEVICE)).predict(clouds)
    assert [r.label for r in dev] == [r.label for r in cpu]
    for a, b in zip(dev, cpu):  # float32 on both; 1e-3 allows TF32 convolutions on CUDA
        np.testing.assert_allclose(a.probs, b.probs, atol=1e-3)


def test_ops_benchmark_times_device_peers():
    from pointabstract.bench import ops as bench

    work = [w for w in bench.workloads(None, str(DEVICE), tiny=True) if w.op == "knn" and w.label == "B=1 N=64 K=8"][0]
    if DEVICE.type == "cuda":
        assert set(work.peers) == {"dense torch"} | ({"torch-cluster", "pytorch3d"} & set(work.peers))
    ms, _ = bench.time_call(work.ours, repeats=2, slow_s=10.0, device=str(DEVICE))
    assert ms > 0
