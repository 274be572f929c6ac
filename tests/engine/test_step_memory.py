"""The memory of one training step, measured before training (engine/tasks/step_memory.py) and
checked against the free memory (preflight.check_step_memory)."""

from __future__ import annotations

import time

import pytest
import torch

from pointabstract.data import collate
from pointabstract.engine import load_config, train
from pointabstract.engine.tasks import build_task, preflight, step_memory
from pointabstract.models import build_model
from tests.fixtures import tiny_model


def test_the_peak_follows_every_tensor_until_it_is_released():
    """Hand-computed: 4,000 + 8,000 bytes alive at once, a view adds nothing, a release counts."""
    with step_memory._Peak(set()) as peak:
        a = torch.ones(1000)  # 4,000 bytes
        b = torch.ones(2000)  # 8,000 more: 12,000 alive
        del a
        view = b[:10]  # shares b's storage
        c = torch.ones(500)  # 2,000: 10,000 alive
        del view
    assert (peak.peak, peak.now) == (12_000, 10_000) and b.numel() + c.numel() == 2500


def _recon(tmp_path, data, points):
    # the paper's decoder width (D'+2), the model these sizes and ratios were measured on
    return load_config(None, ["model=capsule_ae_demo_dr", "model.decoder_width=0", "data.dataset=modelnet40",
                              f"data.root={data}",
                              f"data.num_points={points}", "data.batch_size=8", "data.workers=0", "optim.epochs=1",
                              f"log.out_dir={tmp_path / 'run'}", "log.progress=false", "log.tensorboard=false",
                              "device=cpu"])


def test_a_step_that_cannot_fit_is_refused_before_any_sample_is_read(tiny_data, tmp_path, monkeypatch):
    """data.num_points=1000000 for the demo capsule autoencoder with 0.5 GiB free: one line
    naming the sizes that could fit, before a sample is loaded (it used to end in an allocator
    traceback after the preflight had loaded every sample at a million points)."""
    monkeypatch.setattr(step_memory, "free_memory", lambda cfg, world: (2**29, "this machine"))
    monkeypatch.setattr(preflight, "check_datasets", lambda *a, **k: pytest.fail("samples were read first"))
    start = time.perf_counter()
    with pytest.raises(ValueError, match=r"^data.num_points=1000000 with data.batch_size=8: one training step of "
                                         r"'capsule_ae_demo_dr' needs at least \d.\d GiB \(the activations it keeps "
                                         r"for the backward pass, measured at 256 and 512 points and scaled "
                                         r"linearly\), more than the 512.0 MiB free on this machine; the most that "
                                         r"could fit: data.num_points=[0-9,]+$"):
        train(_recon(tmp_path, tiny_data, 1_000_000))
    assert time.perf_counter() - start < 60
    assert not (tmp_path / "run" / "last.pt").exists()


def test_between_the_kept_activations_and_the_peak_the_peak_decides(tiny_data, tmp_path):
    cfg = _recon(tmp_path, tiny_data, 1_000_000)
    task = build_task(cfg)
    (kept, _, weights), (peak, _, _) = step_memory.step_bytes(cfg, task), step_memory.step_bytes(cfg, task, peak=True)
    assert 1.2 * kept < peak < step_memory.PEAK_OVER_KEPT * kept  # ops change method above 1,024 points
    free = int((kept + peak) / 2 * 1_000_000 * 8 + weights)
    with pytest.raises(ValueError, match=r"needs at least \d+.\d GiB \(its peak, measured at 2048 and 4096 points "
                                         r"and scaled linearly\), .* the most that could fit: "
                                         r"data.num_points=[0-9,]+ or data.batch_size=[4-7]$"):
        preflight.check_step_memory(cfg, task, available=free)
    preflight.check_step_memory(cfg, task, available=int(1.01 * (peak * 1_000_000 * 8 + weights)) + 2**24)


def test_what_fits_trains_and_the_rng_is_left_alone(tiny_data, tmp_path):
    cfg = _recon(tmp_path, tiny_data, 64)
    task = build_task(cfg)
    state = torch.random.get_rng_state()
    preflight.check_step_memory(cfg, task, available=2**30)
    assert torch.equal(state, torch.random.get_rng_state())
    with pytest.raises(ValueError, match=r"data.num_points=64 with data.batch_size=8: one training step of "
                                         r"'capsule_ae_demo_dr' needs at least \d.\d MiB \(the activations it keeps "
                                         r"for the backward pass, measured at 64 points and scaled linearly\), more "
                                         r"than the 4.0 MiB free on this device; the most that could fit: "
                                         r"data.num_points=\d+ or data.batch_size=\d$"):
        preflight.check_step_memory(cfg, task, available=4 * 2**20)


def test_the_measured_peak_scales_to_a_larger_cloud():
    """The linear fit at 2,048 and 4,096 points predicts the peak at 16,384 within 5 %, from below."""
    cfg = load_config(None, ["model=capsule_ae_demo_dr", "data.num_points=16384", *tiny_model("capsule_ae_demo_dr")])
    task = build_task(cfg)
    per_point, per_cloud, _ = step_memory.step_bytes(cfg, task, peak=True)
    model = build_model(cfg.model, **{**cfg.model_args, **task.model_args()}).train()
    measured = step_memory._peak_bytes(model, task, collate(step_memory._probe_clouds(cfg, 16384))) / 2
    assert 0.95 * measured <= per_point * 16384 + per_cloud <= 1.001 * measured
