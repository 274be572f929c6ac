"""Neighbour attention on the device under test (CUDA; the CPU in ``bench gpu``'s dry run): the same
outputs and weights as on the CPU, with and without padded neighbours, and (CUDA) one host
synchronisation per call: the index check's single copy of (min, max)."""

import pytest
import torch

from pointabstract._validate import min_max
from pointabstract.bench.gpu_tests import device_under_test, host_syncs
from pointabstract.nn.attention import attend

DEVICE = device_under_test()
pytestmark = [pytest.mark.cuda, pytest.mark.skipif(DEVICE is None, reason="no CUDA device")]


def _inputs(pad: bool):
    g = torch.Generator().manual_seed(0)
    q = torch.randn(2, 12, 2, 4, generator=g, dtype=torch.float64)
    kv = torch.randn(2, 30, 16, generator=g, dtype=torch.float64)
    idx = torch.randint(0, 30, (2, 12, 5), generator=g)
    if pad:
        idx[0, 3, 2:] = -1
        idx[1, 7] = -1  # a query with only padding: zero output
    return q, kv, idx


@pytest.mark.parametrize("normalize", ["inputs", "centroids"])
@pytest.mark.parametrize("pad", [False, True])
def test_neighbour_attention_matches_cpu(pad, normalize):
    q, kv, idx = _inputs(pad)
    out_cpu, w_cpu = attend(q, kv, idx, normalize=normalize)
    out_dev, w_dev = attend(q.to(DEVICE), kv.to(DEVICE), idx.to(DEVICE), normalize=normalize)
    torch.testing.assert_close(out_dev.cpu(), out_cpu)
    torch.testing.assert_close(w_dev.cpu(), w_cpu)


@pytest.mark.skipif(DEVICE is None or DEVICE.type != "cuda", reason="counts CUDA synchronisations")
def test_one_host_sync_per_call():
    """attend synchronises as often as one copy of (min, max) to the host does: the index check's
    (torch may report one copy as more than one warning, hence the measured reference)."""
    q, kv, idx = (t.to(DEVICE) for t in _inputs(False))
    attend(q, kv, idx)  # warm-up: lazy CUDA initialisation is not the call's
    one_copy = host_syncs(lambda: min_max(idx))
    assert one_copy, "the sync debug mode reports no copy to the host"
    syncs = host_syncs(lambda: attend(q, kv, idx))
    assert len(syncs) == len(one_copy), (syncs, one_copy)  # before: 3 copies (min, max, any padding)
