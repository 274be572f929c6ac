"""torch.distributed set-up for runs launched with torchrun (gloo on CPU, NCCL on CUDA)."""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch

__all__ = ["DistContext", "init_distributed"]


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


def init_distributed(device: str = "auto") -> DistContext:
    """Read torchrun's environment (RANK, WORLD_SIZE, LOCAL_RANK) and pick the device.

    ``device="auto"``: CUDA (one GPU per local rank) when available, else CPU.
    """
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    dev = torch.device(device)
    if dev.type == "cuda" and dev.index is None:
        dev = torch.device("cuda", local)
    if dev.type == "cuda":
        torch.cuda.set_device(dev)
    if world > 1 and not torch.distributed.is_initialized():
        torch.distributed.init_process_group("nccl" if dev.type == "cuda" else "gloo")
    return DistContext(rank, world, local, dev)
