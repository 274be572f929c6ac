"""torch.distributed set-up for runs launched with torchrun (gloo on CPU, NCCL on CUDA)."""

from __future__ import annotations

import os
import re
import warnings
from dataclasses import dataclass

import torch

__all__ = ["DistContext", "all_reduce_sum", "check_device", "init_distributed"]

@dataclass
class DistContext:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    device: torch.device = torch.device("cpu")

    @property
    def is_main(self) -> bool:
        """Rank 0: the only process that logs, plots and writes checkpoints."""
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.world_size > 1

    def barrier(self) -> None:
        if self.distributed:
            torch.distributed.barrier()

    def close(self) -> None:
        if self.distributed and torch.distributed.is_initialized():
            torch.distributed.destroy_process_group()


def check_device(device: str | torch.device, *, what: str = "device") -> torch.device:
    """The torch device named by ``device`` (``"cpu"``, ``"cuda"``, ``"cuda:N"``), with a ValueError
    naming ``what`` when the name is not one of those or this machine / torch build has no such GPU."""
    name = str(device)
    if not re.fullmatch(r"cpu|cuda(:\d+)?", name):
        raise ValueError(f"{what} must be cpu, cuda or cuda:N, got {name!r}")
    dev = torch.device(name)
    if dev.type == "cuda":
        gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if gpus == 0:
            build = "a CPU-only torch build" if torch.version.cuda is None else "no GPU visible"
            raise ValueError(f"{what} {name!r} asked for, but CUDA is not available here "
                             f"({build}, torch {torch.__version__}); use cpu")
        if dev.index is not None and dev.index >= gpus:
            raise ValueError(f"{what} {name!r} asked for, but only {gpus} GPU(s) are visible")
    return dev


def init_distributed(device: str = "auto") -> DistContext:
    """Read torchrun's environment (RANK, WORLD_SIZE, LOCAL_RANK) and pick the device.

    ``device="auto"``: CUDA, one GPU per local rank, when there are enough GPUs for the
    processes on this node; otherwise CPU (gloo), with a warning when GPUs are present.
    ``device="cuda"`` with more local processes than GPUs is a ValueError.
    """
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    local_world = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if device == "auto":
        device = "cuda" if gpus >= local_world else "cpu"
        if gpus and device == "cpu" and local == 0:
            warnings.warn(f"{local_world} processes per node but {gpus} GPU(s): training on CPU "
                          f"with gloo (launch at most {gpus} processes per node to use the GPUs)",
                          stacklevel=2)
    dev = check_device(device)
    if dev.type == "cuda" and dev.index is None:
        if local >= gpus:
            raise ValueError(f"device='cuda' with {local_world} processes per node but {gpus} GPU(s): "
                             f"launch at most {gpus} processes per node, or use device=cpu")
        dev = torch.device("cuda", local)
    if dev.type == "cuda":
        torch.cuda.set_device(dev)
    if world > 1 and not torch.distributed.is_initialized():
        torch.distributed.init_process_group("nccl" if dev.type == "cuda" else "gloo")
    return DistContext(rank, world, local, dev)


def all_reduce_sum(tensor: torch.Tensor) -> torch.Tensor:
    """The element-wise sum of ``tensor`` over the processes of a torch.distributed run, as a new
    tensor (``tensor`` itself is never changed); outside a distributed run, ``tensor`` unchanged.

    The one "all-reduce if distributed" of the metrics: every meter sums its counts with it."""
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        tensor = tensor.clone()
        torch.distributed.all_reduce(tensor)
    return tensor
