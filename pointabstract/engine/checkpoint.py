"""Checkpoints are data: written atomically (a kill mid-save never leaves a broken file behind)
and loaded with ``weights_only=True`` (loading a file never runs code from it)."""

from __future__ import annotations

import errno
import io
import os
import pickle
import random
import zipfile
from pathlib import Path

import numpy as np
import torch

__all__ = ["UnsafeCheckpointError", "atomic_save", "check_finite_weights", "load_checkpoint", "rng_state",
           "set_rng_state"]

# What checkpoints written before the numpy RNG state was stored as a tensor hold besides tensors
# and Python containers: numpy arrays and scalars. Rebuilding them runs no code from the file
# (torch's weights-only unpickler still checks everything inside them), so they stay loadable.
# Compatibility shim, removed in 0.2.0 (docs/development.md#compatibility-shims).
_DTYPES = ("UInt32DType", "Float64DType", "Float32DType", "Int64DType", "Int32DType")
_NUMPY_DATA = [np.ndarray, np.dtype,
               *(getattr(getattr(np, "dtypes", None), name, np.dtype) for name in _DTYPES)]
for _name in ("_reconstruct", "scalar"):
    for _module in ("numpy._core.multiarray", "numpy.core.multiarray"):
        try:
            _NUMPY_DATA.append(getattr(__import__(_module, fromlist=[_name]), _name))
            break
        except (ImportError, AttributeError):
            continue


class UnsafeCheckpointError(ValueError):
    """A checkpoint file asks to load Python objects a checkpoint never holds (unpickling them
    could run code from the file): it is refused, and nothing in it was run."""


def atomic_save(obj, path: str | Path) -> Path:
    """``torch.save`` to a temporary file in the same folder, fsync, then rename over ``path``.

    The rename is atomic on POSIX file systems, so ``path`` always holds either the previous
    complete checkpoint or the new complete one.

    Raises:
        OSError (ENOSPC): the disk is full; the message names ``path``, how much was to be
            written, and that the previous ``path`` (if any) is kept unchanged.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    buffer = io.BytesIO()  # serialised first: torch's zip writer hides ENOSPC in an "enforce fail"
    torch.save(obj, buffer)
    data = buffer.getbuffer()
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as err:
        if err.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        kept = (f"the previous {path.name} is kept unchanged" if path.exists()
                else f"no {path.name} was written")
        raise OSError(err.errno, f"no space left on device writing {path} ({len(data) / 2**20:.1f} MB); "
                                 f"{kept}; free some space and run again") from None
    finally:
        if tmp.exists():
            tmp.unlink()
    return path


def load_checkpoint(path: str | Path) -> dict:
    """Load a checkpoint written by the trainer, with a clear error when it is not one."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint {path} does not exist")
    _check_archive(path)
    try:
        with torch.serialization.safe_globals(_NUMPY_DATA):
            ckpt = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # a file asking for more than data, or a truncated or foreign file
        unsafe = _unsafe_globals(path) if isinstance(err, pickle.UnpicklingError) else ""
        if unsafe:
            raise UnsafeCheckpointError(f"{path} refused: it asks to load {unsafe}, which a pointabstract "
                                        "checkpoint never holds and which could run code when loaded; "
                                        "nothing from it was run") from None
        first = " ".join(str(err).split())[:300]
        raise ValueError(f"{path} is not a readable checkpoint ({type(err).__name__}: {first})") from None
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


def _check_archive(path: Path) -> None:
    """ValueError naming ``path`` when it is not a whole torch zip archive: empty, another kind of
    file, cut short (a copy or download that stopped), or a record whose CRC-32 does not match
    its bytes (torch itself reads flipped bytes in a tensor without noticing)."""
    with open(path, "rb") as f:
        head = f.read(4)
    if not head:
        raise ValueError(f"{path} is not a readable checkpoint (an empty file)")
    if head != b"PK\x03\x04":
        raise ValueError(f"{path} is not a readable checkpoint (not a torch zip archive: it starts with "
                         f"{head!r})")
    try:
        with zipfile.ZipFile(path) as archive:
            bad = archive.testzip()
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as err:
        raise ValueError(f"{path} is damaged: cut short or altered ({' '.join(str(err).split())[:120]}); "
                         "it cannot be loaded") from None
    if bad is not None:
        raise ValueError(f"{path} is damaged: its record {bad!r} does not match its checksum (altered "
                         "bytes); it cannot be loaded")


def _unsafe_globals(path: Path) -> str:
    """The Python objects (``'module.name'``, comma-separated) beyond plain data that the
    checkpoint at ``path`` would import, read without running anything; "" when none (or when
    the file is not a torch zip archive at all)."""
    allowed = {f"{getattr(g, '__module__', '')}.{getattr(g, '__name__', '')}" for g in _NUMPY_DATA}
    try:
        names = [n for n in torch.serialization.get_unsafe_globals_in_checkpoint(path) if n not in allowed]
    except Exception:  # noqa: BLE001 - not a zip checkpoint: the caller says it is unreadable
        names = []
    return ", ".join(repr(n) for n in names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")


def check_finite_weights(state: dict, where: str) -> None:
    """ValueError naming ``where`` when a floating-point tensor of ``state`` holds NaN or Inf
    (the weights of a run that diverged must never be evaluated or trained on)."""
    bad = [k for k, v in state.items()
           if torch.is_tensor(v) and v.is_floating_point() and not v.isfinite().all()]
    if bad:
        raise ValueError(f"{where} holds NaN/Inf weights ({len(bad)} tensor(s), e.g. {bad[0]!r}): it was "
                         "saved after training diverged; use an earlier checkpoint")


def rng_state() -> dict:
    """Every global random state a training run draws from, as tensors and Python values only
    (what ``weights_only`` loading accepts): numpy's MT19937 keys are an int64 tensor."""
    name, keys, pos, has_gauss, gauss = np.random.get_state()
    return {"torch": torch.get_rng_state(),
            "numpy": (name, torch.from_numpy(keys.astype(np.int64)), int(pos), int(has_gauss), float(gauss)),
            "python": random.getstate(),
            "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None}


def set_rng_state(state: dict) -> None:
    """Restore what :func:`rng_state` returned (also from checkpoints that stored numpy's keys
    as a numpy array, a shim removed in 0.2.0)."""
    torch.set_rng_state(state["torch"])
    name, keys, *rest = state["numpy"]
    keys = keys.numpy() if torch.is_tensor(keys) else np.asarray(keys)
    np.random.set_state((name, keys.astype(np.uint32), *rest))
    random.setstate(state["python"])
    if state.get("cuda") is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
