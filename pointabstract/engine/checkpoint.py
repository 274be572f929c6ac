"""Checkpoints written atomically: a kill mid-save never leaves a broken file behind."""

from __future__ import annotations

import os
import random
from pathlib import Path

import numpy as np
import torch

__all__ = ["atomic_save", "load_checkpoint", "rng_state", "set_rng_state"]


def atomic_save(obj, path: str | Path) -> Path:
    """``torch.save`` to a temporary file in the same folder, fsync, then rename over ``path``.

    The rename is atomic on POSIX file systems, so ``path`` always holds either the previous
    complete checkpoint or the new complete one.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            torch.save(obj, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path


def load_checkpoint(path: str | Path) -> dict:
    """Load a checkpoint written by the trainer, with a clear error when it is not one."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint {path} does not exist")
    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=False)
    except Exception as err:  # truncated or foreign file
        raise ValueError(f"{path} is not a readable checkpoint ({type(err).__name__}: {err})") from None
    missing = {"model", "config", "epoch"} - set(ckpt) if isinstance(ckpt, dict) else {"model"}
    if missing:
        raise ValueError(f"{path} is not a pointabstract checkpoint (missing {sorted(missing)})")
    return ckpt


def rng_state() -> dict:
    """Every global random state a training run draws from."""
    return {"torch": torch.get_rng_state(), "numpy": np.random.get_state(), "python": random.getstate(),
            "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None}


def set_rng_state(state: dict) -> None:
    torch.set_rng_state(state["torch"])
    np.random.set_state(state["numpy"])
    random.setstate(state["python"])
    if state.get("cuda") is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
