"""Collation of sample dicts (numpy) into a batch dict of torch tensors, ragged clouds included."""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import numpy as np
import torch

from .. import _validate as V

__all__ = ["PART_PAD", "collate"]

#: value of ``part`` at padded positions of a ragged batch (ignored by losses and metrics)
PART_PAD = -1

_POINT_KEYS = ("pos", "normal", "part")
_INT_KEYS = ("label", "category")


def collate(samples: Sequence[dict]) -> dict:
    """Stack samples into a batch (use as a DataLoader's ``collate_fn``).

    Every sample must have the same keys. Clouds of different sizes (e.g. after
    ``RandomDropout``) are padded to the largest N: ``pos`` and ``normal`` with zeros,
    ``part`` with -1 (:data:`PART_PAD`), and the batch gains ``lengths``; padded rows are
    not points and must be masked with ``lengths`` by whoever reads them.

    Args:
        samples: B sample dicts with ``pos`` (N_b, 3) and optionally ``normal`` (N_b, 3),
            ``part`` (N_b,) int, ``label`` int, ``category`` int. Any other key is stacked
            when its values are arrays of one shape, numbers, or strings (kept as a list).

    Returns:
        dict with
        ``pos``: (B, N, 3) float32 (float64 input is rounded to float32), N = max N_b;
        ``normal``: (B, N, 3) float32, when the samples have normals;
        ``part``: (B, N) int64, when the samples have parts;
        ``label``, ``category``: (B,) int64, when the samples have them;
        ``lengths``: (B,) int64 number of real points of each cloud, only when the N_b differ.

    Raises:
        ValueError: a sample lacks a key of sample 0 or has one it lacks (the error names the
            sample index and the key), or a field has the wrong shape.
        TypeError: a field has the wrong type.
    """
    keys = _check_keys(samples)
    points = [_check_points(i, s) for i, s in enumerate(samples)]
    lengths = [len(p["pos"]) for p in points]
    n_max = max(lengths)
    batch: dict = {}
    for key, pad, dtype in (("pos", 0, np.float32), ("normal", 0, np.float32), ("part", PART_PAD, np.int64)):
        if key in keys:
            arrays = [p[key] for p in points]
            out = np.full((len(arrays), n_max, *arrays[0].shape[1:]), pad, dtype=dtype)
            for b, a in enumerate(arrays):
                out[b, : len(a)] = a
            batch[key] = torch.from_numpy(out)
    for key in keys:
        if key in _INT_KEYS:
            batch[key] = torch.tensor([_check_int(i, key, s[key]) for i, s in enumerate(samples)],
                                      dtype=torch.int64)
        elif key not in _POINT_KEYS:
            batch[key] = _stack_other(key, [s[key] for s in samples])
    if len(set(lengths)) > 1:
        batch["lengths"] = torch.tensor(lengths, dtype=torch.int64)
    return batch


def _check_keys(samples) -> list:
    if not isinstance(samples, Sequence) or isinstance(samples, (str, bytes)):
        raise TypeError(f"samples must be a list of sample dicts, got {type(samples).__name__}")
    if len(samples) == 0:
        raise ValueError("samples is empty: cannot collate a batch of 0 samples")
    for i, s in enumerate(samples):
        if not isinstance(s, dict):
            raise TypeError(f"sample {i} must be a dict, got {type(s).__name__}")
    keys = list(samples[0])
    if "pos" not in keys:
        raise ValueError(f"sample 0 has no 'pos' (keys: {sorted(keys)})")
    if "lengths" in keys:
        raise ValueError("samples must not have a 'lengths' key: collate adds it for ragged batches")
    for i, s in enumerate(samples[1:], start=1):
        for key in keys:
            if key not in s:
                raise ValueError(f"sample {i} has no {key!r}, which sample 0 has "
                                 f"(sample {i} keys: {sorted(s)})")
        for key in s:
            if key not in samples[0]:
                raise ValueError(f"sample {i} has {key!r}, which sample 0 lacks "
                                 f"(sample 0 keys: {sorted(keys)})")
    return keys


def _check_points(i: int, sample: dict) -> dict:
    """The per-point fields of sample ``i`` as numpy arrays, shapes and dtypes checked."""
    pos = _as_array(i, "pos", sample["pos"])
    if pos.ndim != 2 or pos.shape[1] != 3 or len(pos) == 0 or not _is_real(pos):
        raise ValueError(f"sample {i}: pos must be a float array of shape (N, 3) with N > 0, "
                         f"got {pos.dtype} {pos.shape}")
    out = {"pos": pos}
    if "normal" in sample:
        normal = _as_array(i, "normal", sample["normal"])
        if normal.shape != pos.shape or not _is_real(normal):
            raise ValueError(f"sample {i}: normal must be a float array of shape {pos.shape} like pos, "
                             f"got {normal.dtype} {normal.shape}")
        out["normal"] = normal
    if "part" in sample:
        part = _as_array(i, "part", sample["part"])
        if part.shape != (len(pos),) or not np.issubdtype(part.dtype, np.integer):
            raise ValueError(f"sample {i}: part must be an int array of shape ({len(pos)},), "
                             f"got {part.dtype} {part.shape}")
        out["part"] = part
    return out


def _as_array(i: int, key: str, value) -> np.ndarray:
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    if not isinstance(value, np.ndarray):
        raise TypeError(f"sample {i}: {key} must be a numpy array, got {type(value).__name__}")
    return value


def _is_real(a: np.ndarray) -> bool:
    return np.issubdtype(a.dtype, np.floating) or np.issubdtype(a.dtype, np.integer)


def _check_int(i: int, key: str, value) -> int:
    """``value`` (int, numpy integer or one-element integer array) as an int."""
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    if isinstance(value, np.ndarray):
        if value.size != 1:
            raise ValueError(f"sample {i}: {key} must be one int, got an array of shape {value.shape}")
        value = value.reshape(-1)[0]  # a numpy scalar
    return V.check_int(f"sample {i}: {key}", value)


def _stack_other(key: str, values: list):
    """Batch a field collate does not know: equal-shape arrays, numbers, or strings."""
    if all(isinstance(v, str) for v in values):
        return list(values)
    if all(isinstance(v, numbers.Number) and not isinstance(v, bool) for v in values):
        return torch.as_tensor(np.asarray(values))
    if all(isinstance(v, (np.ndarray, torch.Tensor)) for v in values):
        shapes = {tuple(v.shape) for v in values}
        if len(shapes) > 1:
            raise ValueError(f"field {key!r} has different shapes across samples {sorted(shapes)}: only "
                             f"pos, normal and part are padded")
        return torch.stack([torch.as_tensor(v) for v in values])
    kinds = sorted({type(v).__name__ for v in values})
    raise TypeError(f"field {key!r} cannot be collated: values of type {kinds} (expected arrays of one "
                    f"shape, numbers or strings)")
