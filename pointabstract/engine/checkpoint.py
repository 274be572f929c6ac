"""Checkpoints written atomically: a kill mid-save never leaves a broken file behind."""

from __future__ import annotations

import os
import random
from pathlib import Path

import numpy as np
import torch

__all__ = ["atomic_save", "check_finite_weights", "load_checkpoint", "rng_state", "set_rng_state"]


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
    missing = sorted({"model", "config", "epoch"} - set(ckpt)) if isinstance(ckpt, dict) else ["model"]
    mappings = not missing and isinstance(ckpt["config"], dict) and isinstance(ckpt["model"], dict)
    if not mappings or "model" not in ckpt["config"]:
        plain = isinstance(ckpt, dict) and ckpt and all(torch.is_tensor(v) for v in ckpt.values())
        kind = "a plain state_dict" if plain else f"a {type(ckpt).__name__}"
        detail = (f"missing {missing}" if missing else "its config names no model" if mappings
                  else "its 'config' / 'model' entries are not mappings")
        raise ValueError(f"{path} is not a pointabstract checkpoint ({kind}, {detail}); "
                         "give a last.pt / best.pt written by `pointabstract train`")
    return ckpt


def check_finite_weights(state: dict, where: str) -> None:
    """ValueError naming ``where`` when a floating-point tensor of ``state`` holds NaN or Inf
    (the weights of a run that diverged must never be evaluated or trained on)."""
    bad = [k for k, v in state.items()
           if torch.is_tensor(v) and v.is_floating_point() and not v.isfinite().all()]
    if bad:
        raise ValueError(f"{where} holds NaN/Inf weights ({len(bad)} tensor(s), e.g. {bad[0]!r}): it was "
                         "saved after training diverged; use an earlier checkpoint")


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
