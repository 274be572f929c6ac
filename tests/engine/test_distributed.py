"""Device choice under torchrun: one GPU per local process, or CPU (gloo)."""

import pytest
import torch

from pointabstract.engine.distributed import init_distributed


@pytest.fixture
def two_local_processes(monkeypatch):
    # LOCAL_RANK 1 of 2 on this node; WORLD_SIZE stays 1 so no process group is started.
    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    monkeypatch.delenv("WORLD_SIZE", raising=False)


def _gpus(monkeypatch, count):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: count > 0)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: count)
    monkeypatch.setattr(torch.cuda, "set_device", lambda dev: None)


def test_auto_uses_one_gpu_per_local_process(two_local_processes, monkeypatch):
    _gpus(monkeypatch, 2)
    assert init_distributed("auto").device == torch.device("cuda", 1)


def test_auto_falls_back_to_cpu_with_too_few_gpus(monkeypatch):
    monkeypatch.setenv("LOCAL_RANK", "0")
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    _gpus(monkeypatch, 1)
    with pytest.warns(UserWarning, match=r"2 processes per node but 1 GPU\(s\): training on CPU"):
        assert init_distributed("auto").device == torch.device("cpu")


def test_explicit_cuda_with_too_few_gpus_is_an_error(two_local_processes, monkeypatch):
    _gpus(monkeypatch, 1)
    with pytest.raises(ValueError, match=r"device='cuda' with 2 processes per node but 1 GPU\(s\)"):
        init_distributed("cuda")


def test_no_gpu_means_cpu(monkeypatch):
    _gpus(monkeypatch, 0)
    assert init_distributed("auto").device == torch.device("cpu")
