"""Precise BatchNorm statistics on a hand-computable model (the capsule autoencoder's case is
in test_reconstruction.py)."""

import pytest
import torch

from pointabstract.engine.precise_bn import recalibrate_batchnorm


class _NormOnly(torch.nn.Module):
    """pos (B, N, 3) -> BatchNorm over all points, plus a weight BatchNorm must not touch."""

    def __init__(self):
        super().__init__()
        self.bn = torch.nn.BatchNorm1d(3)
        self.scale = torch.nn.Parameter(torch.ones(3))

    def forward(self, pos):
        return self.bn(pos.reshape(-1, 3)) * self.scale


def test_recalibrate_batchnorm_averages_batch_statistics_hand_computed():
    g = torch.Generator().manual_seed(0)
    data = [{"pos": torch.randn(5, 3, generator=g) * (i + 1) + i} for i in range(6)]
    model = _NormOnly()
    model.bn.momentum = 0.3
    before = {k: v.clone() for k, v in model.named_parameters()}
    rng = torch.get_rng_state()
    used = recalibrate_batchnorm(model, data, batches=2, batch_size=2, seed=7, device="cpu")
    order = torch.randperm(6, generator=torch.Generator().manual_seed(7)).tolist()
    batches = [torch.cat([data[i]["pos"] for i in order[j:j + 2]]) for j in (0, 2)]  # (10, 3) each
    want_mean = sum(b.mean(0) for b in batches) / 2
    want_var = sum(b.var(0, unbiased=True) for b in batches) / 2
    assert used == 2 and model.training and model.bn.momentum == 0.3
    torch.testing.assert_close(model.bn.running_mean, want_mean)
    torch.testing.assert_close(model.bn.running_var, want_var)
    assert all(torch.equal(v, before[k]) for k, v in model.named_parameters())
    assert torch.equal(torch.get_rng_state(), rng)
    # more batches than the data holds: every sample once; a model without BatchNorm: nothing to do
    assert recalibrate_batchnorm(model, data, batches=50, batch_size=4, seed=0, device="cpu") == 2
    assert recalibrate_batchnorm(torch.nn.Linear(3, 3), data, batches=2, batch_size=2, seed=0, device="cpu") == 0
    with pytest.raises(ValueError, match="batches must be a positive int, got 0"):
        recalibrate_batchnorm(model, data, batches=0, batch_size=2, seed=0, device="cpu")


def test_under_ddp_each_process_takes_its_share_of_every_batch(monkeypatch):
    # synced BatchNorm layers merge the processes' statistics: each batch must be split over the
    # processes, not run whole by each (which counts it once per process); a batch with fewer
    # samples than processes is skipped (a process would have nothing to run)
    seen = []

    class _Recorder(_NormOnly):
        def forward(self, pos):
            seen.append(pos[:, 0, 0].tolist())
            return super().forward(pos)

    data = [{"pos": torch.full((5, 3), float(i))} for i in range(7)]
    dist = torch.distributed
    monkeypatch.setattr(dist, "is_initialized", lambda: True)
    monkeypatch.setattr(dist, "get_world_size", lambda: 2)
    monkeypatch.setattr(dist, "get_rank", lambda: 1)
    used = recalibrate_batchnorm(_Recorder(), data, batches=4, batch_size=2, seed=3, device="cpu")
    order = torch.randperm(7, generator=torch.Generator().manual_seed(3)).tolist()
    assert seen == [[float(order[1])], [float(order[3])], [float(order[5])]] and used == 3  # order[6]: alone
