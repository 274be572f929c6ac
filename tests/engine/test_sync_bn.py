"""Global-batch BatchNorm: the maths against torch's BatchNorm in a one-process gloo group (the
two-process equivalence is tests/engine/test_ddp_equivalence.py), and the conversion."""

import copy

import pytest
import torch
from torch import nn

from pointabstract.engine.sync_bn import convert_sync_batchnorm, global_batch_norm, global_moments
from pointabstract.engine.trainer import ShardSampler
from pointabstract.nn import PointBatchNorm, PrimaryPointCapsules


@pytest.fixture
def one_process_group(tmp_path):
    torch.distributed.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0,
                                         world_size=1)
    yield
    torch.distributed.destroy_process_group()


@pytest.mark.parametrize("layer, shape, channels_last", [(PointBatchNorm(5), (3, 7, 5), True),
                                                         (nn.BatchNorm1d(5), (4, 5, 6), False),
                                                         (nn.BatchNorm2d(5), (2, 5, 3, 3), False)])
def test_matches_torch_batch_norm(one_process_group, layer, shape, channels_last):
    torch.manual_seed(0)
    with torch.no_grad():
        layer.weight.uniform_(0.5, 1.5)
        layer.bias.uniform_(-1, 1)
    ours = copy.deepcopy(layer).train()
    x = torch.randn(shape, dtype=torch.float64) * 3 + 1
    a, b = x.clone().requires_grad_(), x.clone().requires_grad_()
    ref = layer.double().train()(a)
    out = global_batch_norm(ours.double(), b, channels_last=channels_last)
    torch.testing.assert_close(out, ref)
    grad = torch.randn_like(ref)
    ref.backward(grad)
    out.backward(grad)
    torch.testing.assert_close(b.grad, a.grad)
    torch.testing.assert_close(ours.weight.grad, layer.weight.grad)
    torch.testing.assert_close(ours.running_mean, layer.running_mean)
    torch.testing.assert_close(ours.running_var, layer.running_var)
    assert int(ours.num_batches_tracked) == 1


def test_conversion_keeps_names_and_single_process_behaviour():
    model = nn.Sequential(nn.Linear(3, 4), PointBatchNorm(4), nn.Sequential(nn.BatchNorm1d(4)))
    keys = list(model.state_dict())
    x = torch.randn(2, 6, 4)
    before = model[1](x)
    convert_sync_batchnorm(model)
    assert type(model[1]).__name__ == "GlobalPointBatchNorm" and isinstance(model[1], PointBatchNorm)
    assert type(model[2][0]).__name__ == "GlobalBatchNorm1d"
    assert list(model.state_dict()) == keys
    torch.testing.assert_close(model[1](x), before)  # no process group: the original layer
    convert_sync_batchnorm(model)  # twice is harmless
    assert type(model[1]).__name__ == "GlobalPointBatchNorm"


@pytest.mark.parametrize("n, batch, world", [(24, 8, 2), (25, 8, 2), (26, 8, 2), (23, 6, 3), (7, 4, 2)])
def test_process_batches_make_up_the_global_batches(n, batch, world):
    one = ShardSampler(n, shuffle=True, seed=3, batch_size=batch)
    order = list(one)
    shards = []
    for rank in range(world):
        sampler = ShardSampler(n, rank=rank, world_size=world, shuffle=True, seed=3, batch_size=batch)
        idx = list(sampler)
        assert len(idx) == len(sampler)
        shards.append([idx[i : i + batch // world] for i in range(0, len(idx), batch // world)])
    assert len({len(s) for s in shards}) == 1  # every process runs the same number of steps
    for step, parts in enumerate(zip(*shards)):
        assert sorted(sum(parts, [])) == sorted(order[step * batch : (step + 1) * batch])
    dropped = n % batch if 0 < n % batch < world else 0
    assert sum(len(s) for shard in shards for s in shard) == n - dropped


def _capsules(seed=0):
    torch.manual_seed(seed)
    module = PrimaryPointCapsules(6, 4, hidden=(8, 12)).double().train()
    with torch.no_grad():  # BatchNorm scales of both signs (the max-pool point search flips for < 0)
        module.bn_weight.uniform_(-1.5, 1.5)
    return module


def _capsule_batch():
    g = torch.Generator().manual_seed(1)
    return torch.randn(6, 20, 3, generator=g, dtype=torch.float64) * 2 + 0.5, \
        torch.randn(6, 6, 4, generator=g, dtype=torch.float64)


def _capsule_worker(rank: int, world: int, store: str, out: str) -> None:
    torch.distributed.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
    try:
        module = convert_sync_batchnorm(_capsules())
        pos, weights = _capsule_batch()
        part = slice(rank * len(pos) // world, (rank + 1) * len(pos) // world)  # this process's shapes
        u = module(pos[part])
        (u * weights[part]).sum().backward()
        grads = {name: p.grad.clone() for name, p in module.named_parameters()}
        for g in grads.values():  # summed over processes (DDP averages; the loss here is a sum)
            torch.distributed.all_reduce(g)
        torch.save({"u": u.detach(), "grads": grads, "buffers": dict(module.named_buffers())}, f"{out}/{rank}.pt")
    finally:
        torch.distributed.destroy_process_group()


def test_primary_capsule_batch_norms_use_the_global_batch_under_ddp(tmp_path):
    """Two gloo processes, each with half the shapes, give the one-process outputs, gradients and
    running statistics of the whole batch (the shared MLP's BatchNorms and the branch BatchNorms)."""
    import torch.multiprocessing as mp

    mp.spawn(_capsule_worker, args=(2, str(tmp_path / "store"), str(tmp_path)), nprocs=2)
    module = _capsules()
    pos, weights = _capsule_batch()
    u = module(pos)
    (u * weights).sum().backward()
    parts = [torch.load(tmp_path / f"{rank}.pt") for rank in range(2)]
    torch.testing.assert_close(torch.cat([p["u"] for p in parts]), u.detach(), rtol=1e-10, atol=1e-12)
    for name, p in module.named_parameters():
        for part in parts:
            torch.testing.assert_close(part["grads"][name], p.grad, rtol=1e-9, atol=1e-11, msg=name)
    for name, b in module.named_buffers():
        for part in parts:
            torch.testing.assert_close(part["buffers"][name], b, rtol=1e-10, atol=1e-12, msg=name)


def test_primary_capsules_are_converted_and_unchanged_in_one_process(one_process_group):
    module = _capsules()
    converted = convert_sync_batchnorm(_capsules())
    assert type(converted).__name__ == "GlobalPrimaryPointCapsules"
    assert isinstance(converted, PrimaryPointCapsules) and list(converted.state_dict()) == list(module.state_dict())
    pos, _ = _capsule_batch()
    torch.testing.assert_close(converted(pos), module(pos))
    flat = torch.randn(30, 5, dtype=torch.float64)  # the global moments of one process: the local ones
    for ours, ref in zip(global_moments(flat), module.batch_moments(flat)):
        torch.testing.assert_close(torch.as_tensor(ours), torch.as_tensor(ref))


def test_a_point_batch_norm_subclass_keeps_channels_last(one_process_group, monkeypatch):
    """The layout follows the class hierarchy, not the class name: a renamed subclass of
    PointBatchNorm normalises its last dimension on the global path too."""
    import pointabstract.engine.sync_bn as sync_bn

    class Renamed(PointBatchNorm):
        pass

    layer = Renamed(4).train()
    x = torch.randn(3, 7, 4) * 2 + 1
    ref = copy.deepcopy(layer)(x)
    monkeypatch.setattr(sync_bn, "_world", lambda: 2)  # take the all-reduce path (one process: a sum of one)
    convert_sync_batchnorm(layer)
    assert type(layer).__name__ == "GlobalRenamed"
    torch.testing.assert_close(layer(x), ref)
    convert_sync_batchnorm(layer)  # converted once only
    assert type(layer).__mro__[1] is Renamed
