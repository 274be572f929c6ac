"""Every registered model at its tiny size on the device under test (CUDA; the CPU in ``bench gpu``'s
dry run) against the same weights on the CPU: forward, backward, and a bf16 autocast step.

Tolerance (float32 on both sides, TF32 off so CUDA matmuls and convolutions round like the CPU's):
outputs within rtol 1e-4 / atol 1e-5, parameter gradients within rtol 1e-3 / atol 1e-4 x the
gradient's largest entry. float32 rounds at 6e-8 relative; the tiny models sum at most a few
hundred terms per output through about ten layers in another order on each device, which stays
below 1e-5 relative (1e-4 for gradients, whose sums are longer and cancel more); a wrong index,
mask or padding rule moves outputs by 1e-2 or more. Models that draw random numbers in their
forward (random centroid initialisation) only need finite outputs and gradients on the device.
"""

import copy

import pytest
import torch

from pointabstract.bench.gpu_steps import random_batch
from pointabstract.bench.gpu_tests import device_under_test
from pointabstract.engine import build_task, load_config
from pointabstract.models import MODELS, build_model, model_task

DEVICE = device_under_test()
pytestmark = [pytest.mark.cuda, pytest.mark.skipif(DEVICE is None, reason="no CUDA device")]

_ARGS = {"classification": {"num_classes": 40}, "reconstruction": {},
         "part_segmentation": {"num_parts": 50, "num_categories": 16}}
_OUT = {"classification": "logits", "reconstruction": "points", "part_segmentation": "logits"}


@pytest.fixture(autouse=True)
def _no_tf32():
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def _model(name: str) -> torch.nn.Module:
    torch.manual_seed(0)
    return build_model(name, tiny=True, **_ARGS[model_task(name)]).eval()


def _forward(model, name: str, batch: dict, device) -> torch.Tensor:
    pos = batch["pos"].to(device)
    if model_task(name) == "part_segmentation":
        return model(pos, batch["category"].to(device))["logits"]
    return model(pos)[_OUT[model_task(name)]]


def _draws_random_numbers(model, name: str, batch: dict) -> bool:
    outs = []
    for seed in (1, 2):
        torch.manual_seed(seed)
        with torch.no_grad():
            outs.append(_forward(model, name, batch, "cpu"))
    return not torch.equal(*outs)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_forward_and_backward_match_cpu(name):
    cpu = _model(name)
    dev = copy.deepcopy(cpu).to(DEVICE)
    batch = random_batch(model_task(name), 2, 64, seed=3)
    out_cpu, out_dev = _forward(cpu, name, batch, "cpu"), _forward(dev, name, batch, DEVICE)
    assert out_dev.device.type == DEVICE.type and out_dev.dtype == torch.float32
    weight = torch.randn(out_cpu.shape, generator=torch.Generator().manual_seed(4))
    (out_cpu * weight).sum().backward()
    (out_dev * weight.to(DEVICE)).sum().backward()
    assert torch.isfinite(out_dev).all()
    grads = [(n, p.grad, q.grad) for (n, p), q in zip(cpu.named_parameters(), dev.parameters())]
    assert all(q is not None and torch.isfinite(q).all() for _, p, q in grads if p is not None), name
    if _draws_random_numbers(cpu, name, batch):
        return  # a random subset on each device: nothing to compare
    torch.testing.assert_close(out_dev.detach().cpu(), out_cpu.detach(), rtol=1e-4, atol=1e-5)
    # a gradient that is zero in exact arithmetic (a bias before a softmax over the axis it is
    # added along) is rounding noise on both devices: its tolerance is set by the model's largest
    # gradient (1e-5 of it), the others by their own largest entry (1e-4 of it)
    top = max(float(g.abs().max()) for _, g, _ in grads if g is not None)
    for param, g_cpu, g_dev in grads:
        if g_cpu is None:
            assert g_dev is None, param
            continue
        atol = 1e-4 * float(g_cpu.abs().max()) + 1e-5 * top
        torch.testing.assert_close(g_dev.cpu(), g_cpu, rtol=1e-3, atol=atol, msg=lambda m, p=param: f"{name}.{p}: {m}")


@pytest.mark.parametrize("name", sorted(MODELS))
def test_bf16_autocast_training_step(name):
    """One training step through the model's own task under bf16 autocast, as the trainer runs
    it on CUDA (``amp=true``): finite float32 loss and gradients, float32 weights, and a model
    output in bfloat16 or float32 (what the task casts to float32 before its loss)."""
    cfg = load_config(name, {"device": DEVICE.type})
    task = build_task(cfg)
    model = _model(name).to(DEVICE).train()
    batch = random_batch(cfg.task, 2, 64, seed=5)
    with torch.autocast(DEVICE.type, dtype=torch.bfloat16):
        out = _forward(model, name, batch, DEVICE)
        loss, stats = task.step(model, batch, DEVICE)
    assert out.dtype in (torch.bfloat16, torch.float32), out.dtype
    assert torch.isfinite(out.float()).all()
    assert loss.dtype == torch.float32 and torch.isfinite(loss), loss
    assert all(isinstance(v, float) for v in stats.values())
    loss.backward()
    for param_name, p in model.named_parameters():
        assert p.dtype == torch.float32, param_name
        assert p.grad is None or (p.grad.dtype == torch.float32 and torch.isfinite(p.grad).all()), param_name
    assert any(p.grad is not None for p in model.parameters())
