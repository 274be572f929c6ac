"""Weights-only model folders: ``config.json`` + ``model.safetensors``, no pickle anywhere.

What ``pointabstract export CKPT DIR`` and ``save_pretrained(DIR)`` write, and what
``pointabstract.load(DIR)``, ``eval`` and ``view`` read in place of a checkpoint. The folder holds
what rebuilding the model needs and nothing of training (no optimiser, scheduler or RNG state):

- ``config.json``: ``format`` / ``format_version``, the ``pointabstract_version`` that wrote it,
  ``model`` and ``task``, ``config`` (the run's resolved flat config, the keys of
  ``config.yaml``), ``names`` (class names, part categories or the training data's categories),
  ``task_state`` (what the task's checkpoint entry holds), ``normalization`` (the frame and N
  inputs are brought to; informational: loading recomputes it from ``config``) and ``source``
  (checkpoint file name, epoch, step, best metric);
- ``model.safetensors``: the model's ``state_dict``, every tensor with its own dtype.

JSON and safetensors are data formats: reading either never runs code from the file.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import torch

__all__ = ["CONFIG", "FORMAT", "FORMAT_VERSION", "WEIGHTS", "check_export_target", "is_pretrained",
           "load_model_source", "read_pretrained", "tensor_summary", "write_pretrained"]

FORMAT = "pointabstract-pretrained"
FORMAT_VERSION = 1
CONFIG, WEIGHTS = "config.json", "model.safetensors"
_NEEDED = ("format", "format_version", "model", "task", "config", "task_state")


def is_pretrained(path: str | Path) -> bool:
    """Whether ``path`` is a folder (an exported model, or a folder given in its place)."""
    return Path(path).is_dir()


def load_model_source(path: str | Path) -> dict:
    """A trainer checkpoint (file) or an exported folder, as the checkpoint-shaped dict the
    restore paths read: ``model`` (state dict), ``config`` (flat), ``task_state``, ``epoch``."""
    if is_pretrained(path):
        return read_pretrained(path)
    from .checkpoint import load_checkpoint

    return load_checkpoint(path)


def read_pretrained(path: str | Path) -> dict:
    """Read an exported folder (``config.json`` + ``model.safetensors``).

    Returns:
        ``{"model": state_dict, "config": flat config, "task_state": dict, "epoch": int | None,
        "pretrained": the parsed config.json}``.

    Raises:
        FileNotFoundError: a folder without the two files.
        ValueError: ``config.json`` that is not this format's JSON, a newer format version,
            weights that safetensors cannot read (one line naming the file).
    """
    folder = Path(path)
    missing = [name for name in (CONFIG, WEIGHTS) if not (folder / name).is_file()]
    if missing:
        raise FileNotFoundError(f"{folder} is a folder without {' and '.join(missing)}: give a trainer "
                                "checkpoint (last.pt / best.pt) or a folder written by "
                                "`pointabstract export`")
    meta = _read_config(folder / CONFIG)
    try:
        from safetensors.torch import load_file

        state = load_file(folder / WEIGHTS, device="cpu")
    except Exception as err:  # noqa: BLE001 - safetensors raises its own types for every malformed file
        raise ValueError(f"{folder / WEIGHTS} is not a readable safetensors file "
                         f"({type(err).__name__}: {' '.join(str(err).split())[:200]})") from None
    source = meta.get("source") if isinstance(meta.get("source"), dict) else {}
    return {"model": state, "config": dict(meta["config"]), "task_state": dict(meta["task_state"]),
            "epoch": source.get("epoch"), "pretrained": meta}


def _read_config(path: Path) -> dict:
    """``config.json`` parsed and checked (one-line ValueErrors naming ``path``)."""
    try:
        meta = json.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{path} is not a JSON text ({' '.join(str(err).split())})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ValueError(f"{path} is not a pointabstract model config (no \"format\": \"{FORMAT}\"); give a "
                         f"folder written by `pointabstract export`")
    missing = [key for key in _NEEDED if key not in meta]
    if missing:
        raise ValueError(f"{path} misses {missing}: it was not written by `pointabstract export`")
    version = meta["format_version"]
    if not isinstance(version, int) or isinstance(version, bool) or version > FORMAT_VERSION:
        raise ValueError(f"{path} has format_version {version!r}; this pointabstract reads up to "
                         f"{FORMAT_VERSION} (upgrade pointabstract)")
    for key in ("config", "task_state"):
        if not isinstance(meta[key], dict):
            raise ValueError(f"{path}: {key!r} must be a JSON object, got {type(meta[key]).__name__}")
    return meta


def write_pretrained(out: str | Path, state: dict, meta: dict, *, overwrite: bool = False) -> Path:
    """Write ``meta`` (the ``config.json`` fields besides ``format`` and ``format_version``) and
    ``state`` (tensors) into the folder ``out``, built beside it and swapped in whole.

    ``out`` may be missing or empty; a folder holding an earlier export is replaced only with
    ``overwrite``; a file, or a folder holding anything else, is refused (nothing is touched).
    """
    out = Path(out)
    check_export_target(out, overwrite)
    from safetensors.torch import save_file

    text = json.dumps({"format": FORMAT, "format_version": FORMAT_VERSION, **meta}, indent=1,
                      allow_nan=False) + "\n"
    tensors = {k: v.detach().to("cpu").contiguous().clone() for k, v in state.items()}  # no shared storage
    out.parent.mkdir(parents=True, exist_ok=True)
    new = out.parent / f".{out.name}.export-new-{os.getpid()}"
    old = out.parent / f".{out.name}.export-old-{os.getpid()}"
    shutil.rmtree(new, ignore_errors=True)
    new.mkdir()
    try:
        save_file(tensors, str(new / WEIGHTS), metadata={"format": "pt"})
        (new / CONFIG).write_text(text, encoding="utf-8")
        if out.exists():
            os.replace(out, old)
        os.replace(new, out)
    finally:
        shutil.rmtree(new, ignore_errors=True)
    shutil.rmtree(old, ignore_errors=True)
    return out


def check_export_target(out: Path, overwrite: bool) -> None:
    """FileExistsError unless ``out`` may receive an export: missing, empty, or (with
    ``overwrite``) holding an earlier export and nothing else."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"{out} is a file; the export goes into a folder: give a new folder name")
    held = sorted(p.name for p in out.iterdir()) if out.is_dir() else []
    if not held:
        return
    foreign = [name for name in held if name not in (CONFIG, WEIGHTS)]
    if not foreign and CONFIG in held:
        try:
            _read_config(out / CONFIG)
        except ValueError:
            foreign = [CONFIG]  # someone else's config.json
    elif not foreign:
        foreign = held  # weights without a config: not an export
    if foreign:
        raise FileExistsError(f"{out} holds files an export does not write (e.g. {foreign[0]!r}): refused, "
                              f"nothing there is touched; give a new or empty folder")
    if not overwrite:
        raise FileExistsError(f"{out} already holds an exported model; pass --overwrite (overwrite=True) "
                              f"to replace it")


def tensor_summary(state: dict) -> str:
    """``"1,234,567 values in 45 tensors"`` for a state dict (what the CLI prints)."""
    tensors = [v for v in state.values() if torch.is_tensor(v)]
    return f"{sum(t.numel() for t in tensors):,} values in {len(tensors)} tensors"
