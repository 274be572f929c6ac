"""CUDA paths: every op, the models and a training step on the GPU against the CPU result.

Skipped where torch sees no GPU (CI has none); run on a GPU machine with
``pytest tests/test_cuda.py``. CPU results come from the default CPU backends, so these
tests also check that the torch backend on CUDA agrees with the compiled CPU kernels.
"""

import pytest
import torch

from pointabstract import ops
from pointabstract.models import MODELS, build_model, model_config

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

CUDA = torch.device("cuda")


def _clouds(b, n, c=3, *, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(b, n, c, generator=g, dtype=dtype)


def test_backends_report_cuda_choices():
    assert ops.farthest_point_sample(_clouds(1, 8).cuda(), 2).device.type == "cuda"
    with pytest.raises(ValueError, match="numba"):
        ops.knn(_clouds(1, 8).cuda(), _clouds(1, 8).cuda(), 2, backend="numba")


@pytest.mark.parametrize("backend", ["auto", "numba", "torch"])  # auto: numba through the host
@pytest.mark.parametrize("n, m", [(7, 7), (1000, 64), (4096, 512)])
def test_fps_matches_cpu(n, m, backend):
    pos = _clouds(3, n)
    lengths = torch.tensor([n, max(1, n // 2), n])
    cpu = ops.farthest_point_sample(pos, m, lengths=lengths)
    gpu = ops.farthest_point_sample(pos.cuda(), m, lengths=lengths.cuda(), backend=backend)
    assert gpu.device.type == "cuda"
    assert torch.equal(gpu.cpu(), cpu)


@pytest.mark.parametrize("backend", ["numba", "torch"])
def test_fps_duplicates_on_cuda(backend):
    pos = torch.zeros(1, 10, 3, device=CUDA)
    pos[0, 5:] = 1.0
    idx = ops.farthest_point_sample(pos, 4, backend=backend)[0].tolist()
    assert idx[:2] == [0, 5]


@pytest.mark.parametrize("c, k", [(3, 1), (3, 16), (64, 20), (512, 8)])
def test_knn_matches_cpu(c, k):
    query, ref = _clouds(2, 300, c, seed=1), _clouds(2, 500, c, seed=2)
    qlen, rlen = torch.tensor([300, 120]), torch.tensor([500, 40])
    d_cpu, i_cpu = ops.knn(query, ref, k, query_lengths=qlen, ref_lengths=rlen)
    d_gpu, i_gpu = ops.knn(query.cuda(), ref.cuda(), k, query_lengths=qlen.cuda(), ref_lengths=rlen.cuda())
    assert i_gpu.device.type == "cuda"
    assert torch.equal(i_gpu.cpu(), i_cpu)
    torch.testing.assert_close(d_gpu.cpu(), d_cpu, equal_nan=True)


def test_knn_float32_agrees_on_distances():
    query = _clouds(4, 1024, dtype=torch.float32)
    d_cpu, _ = ops.knn(query, query, 20)
    d_gpu, _ = ops.knn(query.cuda(), query.cuda(), 20)
    torch.testing.assert_close(d_gpu.cpu(), d_cpu, atol=1e-6, rtol=1e-4)


@pytest.mark.parametrize("pad", ["first", "invalid"])
def test_ball_query_matches_cpu(pad):
    query, ref = _clouds(2, 64, seed=3), _clouds(2, 400, seed=4)
    d_cpu, i_cpu = ops.ball_query(query, ref, 0.15, 12, pad=pad)
    d_gpu, i_gpu = ops.ball_query(query.cuda(), ref.cuda(), 0.15, 12, pad=pad)
    assert torch.equal(i_gpu.cpu(), i_cpu)
    torch.testing.assert_close(d_gpu.cpu(), d_cpu)


def test_knn_graph_matches_cpu():
    pos = _clouds(1, 200)[0]
    batch = torch.repeat_interleave(torch.arange(2), torch.tensor([120, 80]))
    cpu = ops.knn_graph(pos, 6, batch=batch)
    gpu = ops.knn_graph(pos.cuda(), 6, batch=batch.cuda())
    assert torch.equal(gpu.cpu(), cpu)


@pytest.mark.parametrize("squared", [True, False])
def test_chamfer_forward_backward_matches_cpu(squared):
    x, y = _clouds(3, 256, seed=5), _clouds(3, 300, seed=6)
    y[:, :10] = x[:, :10]  # zero distances: gradients must stay finite
    grads = []
    for dev in ("cpu", "cuda"):
        a, b = x.to(dev, copy=True).requires_grad_(), y.to(dev, copy=True).requires_grad_()
        loss = ops.chamfer_distance(a, b, squared=squared)
        loss.backward()
        assert torch.isfinite(a.grad).all() and torch.isfinite(b.grad).all()
        grads.append((loss.detach().cpu(), a.grad.cpu(), b.grad.cpu()))
    for cpu, gpu in zip(*grads):
        torch.testing.assert_close(gpu, cpu)


def test_gathers_and_upsampling_match_cpu():
    x, pos_x, pos_y = _clouds(2, 50, 16, seed=7), _clouds(2, 50, seed=8), _clouds(2, 200, seed=9)
    idx = ops.farthest_point_sample(pos_y, 30)
    for fn, args in [(ops.gather_points, (x, idx.clamp(max=49))),
                     (ops.knn_interpolate, (x, pos_x, pos_y)),
                     (ops.nearest_upsample, (x, pos_x, pos_y))]:
        cpu = fn(*args)
        gpu = fn(*(a.cuda() for a in args))
        torch.testing.assert_close(gpu.cpu(), cpu)


def test_sampling_and_tree_on_cuda():
    pos = _clouds(2, 300)
    assert ops.random_sample(pos.cuda(), 10).device.type == "cuda"
    km_cpu = ops.kmeans_sample(pos, 8, iters=3)
    km_gpu = ops.kmeans_sample(pos.cuda(), 8, iters=3)
    torch.testing.assert_close(km_gpu.centroids.cpu(), km_cpu.centroids)
    cpu, gpu = ops.build_tree(pos, branching=4, leaf_size=8), ops.build_tree(pos.cuda(), branching=4, leaf_size=8)
    assert torch.equal(gpu.leaf_order.cpu(), cpu.leaf_order)
    for lc, lg in zip(cpu.levels, gpu.levels):
        assert torch.equal(lg.children.cpu(), lc.children)
        torch.testing.assert_close(lg.pos.cpu(), lc.pos)


# the centroid transformers (the classifiers whose centroid init this test reads)
@pytest.mark.parametrize("name", sorted(n for n, s in MODELS.items() if s.factory.__name__ == "CentroidTransformer"))
def test_models_match_cpu_forward_and_backward(name):
    torch.manual_seed(0)
    model = build_model(name, tiny=True, num_classes=5).double().eval()
    pos = _clouds(2, 64, seed=10)
    cpu = model(pos)["logits"]
    gpu_model = model.to(CUDA)
    out = gpu_model(pos.cuda(), return_features=True)
    if model_config(name).init != "random":  # random centroids: CUDA draws another subset
        torch.testing.assert_close(out["logits"].cpu(), cpu.detach())
    assert torch.isfinite(out["logits"]).all()
    out["logits"].sum().backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all()
               for p in gpu_model.parameters() if p.requires_grad)


def test_bf16_autocast_forward_is_finite():
    torch.manual_seed(0)
    model = build_model("centroid_transformer", tiny=True, num_classes=5).to(CUDA).train()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        logits = model(torch.rand(4, 256, 3, device=CUDA))["logits"]
    loss = logits.float().logsumexp(-1).mean()
    loss.backward()
    assert torch.isfinite(loss) and all(torch.isfinite(p.grad).all() for p in model.parameters()
                                        if p.grad is not None)


def test_training_on_cuda_with_amp(tmp_path):
    from pointabstract.engine import load_checkpoint, load_config, train

    from .fixtures import tiny_model, write_tiny_modelnet

    write_tiny_modelnet(tmp_path / "data")
    cfg = load_config(None, [f"data.root={tmp_path / 'data'}", "data.num_points=48", "data.batch_size=8",
                             "data.eval_batch_size=12", "data.workers=0", "optim.epochs=2",
                             f"log.out_dir={tmp_path / 'run'}", "log.progress=false",
                             "log.tensorboard=false", "device=cuda", "amp=true", *tiny_model("centroid_transformer")])
    metrics = train(cfg)
    assert 0 <= metrics["overall_accuracy"] <= 1
    ckpt = load_checkpoint(tmp_path / "run" / "last.pt")
    assert ckpt["epoch"] == 2
    assert all(v.device.type == "cpu" for v in ckpt["model"].values())


def test_ops_benchmark_times_cuda_peers():
    from pointabstract.bench import ops as bench

    work = [w for w in bench.workloads(None, "cuda") if w.op == "knn" and w.label == "B=1 N=64 K=8"][0]
    assert set(work.peers) == {"dense torch"} | ({"torch-cluster", "pytorch3d"} & set(work.peers))
    ms, _ = bench.time_call(work.ours, repeats=2, slow_s=10.0, device="cuda")
    assert ms > 0
