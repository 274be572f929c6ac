"""pointabstract sample / batch dicts <-> PyTorch Geometric ``Data`` / ``Batch``.

Field mapping (one row per key of :data:`pointabstract.data.SAMPLE_KEYS`):

=============  ========================  =====================================================
ours           PyG                       note
=============  ========================  =====================================================
``pos``        ``pos`` (N, 3)            node positions
``normal``     ``normal`` (N, 3)         PyG's ``SamplePoints`` name; ``normal_key="x"`` for
                                         ``ShapeNet``, which stores normals as ``x``
``label``      ``y`` (1,) or ``label``   ``y`` when ``target="label"`` (ModelNet)
``part``       ``y`` (N,) or ``part``    ``y`` when ``target="part"`` (ShapeNet)
``category``   ``category`` (1,)         as PyG's ``ShapeNet``
=============  ========================  =====================================================

A ragged batch dict (with ``lengths``) becomes a ``Batch`` of clouds of their own sizes, and a
``Batch`` of unequal clouds comes back padded with ``lengths`` exactly as
:func:`pointabstract.data.collate` pads (``pos`` / ``normal`` zeros, ``part`` -1).
Needs torch_geometric (extra ``pyg``).
"""

from __future__ import annotations

import numpy as np
import torch

from .. import _validate as V

__all__ = ["from_pyg_batch", "from_pyg_data", "to_pyg_batch", "to_pyg_data"]

PART_PAD = -1  # = pointabstract.data.PART_PAD (not imported: that package loads h5py / trimesh)
_TARGETS = ("label", "part")
_NORMAL_KEYS = ("normal", "x")





def _check_options(target: str, normal_key: str) -> None:
    """The options every converter takes, checked at each entry."""
    V.check_choice("target", target, _TARGETS)
    V.check_choice("normal_key", normal_key, _NORMAL_KEYS)


def _names(target: str, normal_key: str) -> dict[str, str]:
    """our key -> PyG attribute name."""
    return {"pos": "pos", "normal": normal_key, "label": "y" if target == "label" else "label",
            "part": "y" if target == "part" else "part", "category": "category"}


def to_pyg_data(sample: dict, *, target: str = "label", normal_key: str = "normal"):
    """One sample dict -> ``torch_geometric.data.Data``.

    Args:
        sample: ``pos`` (N, 3) and optionally ``normal`` (N, 3), ``part`` (N,), ``label`` int,
            ``category`` int (numpy arrays or tensors); other keys are copied as they are.
        target: which field becomes ``y``: ``"label"`` (classification) or ``"part"``.
        normal_key: the attribute that holds normals, ``"normal"`` or ``"x"``.

    Returns:
        Data with ``pos`` float32 (N, 3), ``y`` and the other fields (see the module table).
    """
    from torch_geometric.data import Data

    _check_options(target, normal_key)
    if not isinstance(sample, dict) or "pos" not in sample:
        got = sorted(sample) if isinstance(sample, dict) else type(sample).__name__
        raise ValueError(f"sample must be a dict with at least 'pos', got {got}")
    pos = torch.as_tensor(np.asarray(sample["pos"]), dtype=torch.float32)
    if pos.dim() != 2 or pos.shape[1] != 3:
        raise ValueError(f"sample['pos'] must have shape (N, 3), got {tuple(pos.shape)}")
    names = _names(target, normal_key)
    fields = {}
    for key, value in sample.items():
        if key in ("label", "category"):
            fields[names[key]] = torch.tensor([int(value)], dtype=torch.int64)
        elif key == "part":
            fields[names[key]] = torch.as_tensor(np.asarray(value), dtype=torch.int64)
        elif key == "normal":
            fields[names[key]] = torch.as_tensor(np.asarray(value), dtype=torch.float32)
        else:
            fields[names.get(key, key)] = pos if key == "pos" else value
    return Data(**fields)


def from_pyg_data(data, *, target: str = "label", normal_key: str = "normal") -> dict:
    """``Data`` -> one sample dict of numpy arrays (the inverse of :func:`to_pyg_data`).

    Returns:
        ``pos`` (N, 3) float32 and, when present, ``normal`` (N, 3) float32, ``part`` (N,)
        int64, ``label`` int, ``category`` int.
    """
    _check_options(target, normal_key)
    if getattr(data, "pos", None) is None:
        raise ValueError(f"data must have a 'pos' attribute, got {data!r}")
    sample = {}
    for key, name in _names(target, normal_key).items():
        value = getattr(data, name, None)
        if value is None:
            continue
        value = value.detach().cpu()
        if key in ("label", "category"):
            sample[key] = int(value.reshape(-1)[0])
        else:
            dtype = np.int64 if key == "part" else np.float32
            sample[key] = value.numpy().astype(dtype, copy=False)
    return sample


def to_pyg_batch(batch: dict, *, target: str = "label", normal_key: str = "normal"):
    """A batch dict (as :func:`pointabstract.data.collate` makes) -> ``torch_geometric.data.Batch``.

    Args:
        batch: ``pos`` (B, N, 3), optional ``normal`` (B, N, 3), ``part`` (B, N), ``label`` (B,),
            ``category`` (B,), and ``lengths`` (B,) for ragged clouds (padding is dropped).
        target / normal_key: as in :func:`to_pyg_data`.

    Returns:
        Batch of B graphs; ``batch.batch`` (sum N_b,) is the cloud id of every node.
    """
    from torch_geometric.data import Batch, Data

    _check_options(target, normal_key)
    if not isinstance(batch, dict) or "pos" not in batch:
        got = sorted(batch) if isinstance(batch, dict) else type(batch).__name__
        raise ValueError(f"batch must be a dict with at least 'pos', got {got}")
    pos = batch["pos"]
    if not isinstance(pos, torch.Tensor) or pos.dim() != 3 or pos.shape[-1] != 3:
        got = tuple(pos.shape) if isinstance(pos, torch.Tensor) else type(pos).__name__
        raise ValueError(f"batch['pos'] must be a tensor of shape (B, N, 3), got {got}")
    b, n = pos.shape[:2]
    lengths = batch.get("lengths")
    sizes = [n] * b if lengths is None else [int(v) for v in lengths]
    if len(sizes) != b or any(not 0 < s <= n for s in sizes):
        raise ValueError(f"batch['lengths'] must hold B = {b} values in [1, {n}], got {sizes}")
    names = _names(target, normal_key)
    graphs = []
    for i, size in enumerate(sizes):
        fields = {}
        for key in ("pos", "normal", "part"):
            if key in batch:
                fields[names[key]] = batch[key][i, :size]
        for key in ("label", "category"):
            if key in batch:
                fields[names[key]] = batch[key][i : i + 1].long()
        graphs.append(Data(**fields))
    return Batch.from_data_list(graphs)


def from_pyg_batch(batch, *, target: str = "label", normal_key: str = "normal") -> dict:
    """``Batch`` -> a batch dict laid out like :func:`pointabstract.data.collate`'s output.

    Returns:
        ``pos`` (B, N, 3) float32 and, when present, ``normal`` (B, N, 3), ``part`` (B, N)
        int64, ``label`` (B,), ``category`` (B,); ``lengths`` (B,) only when the clouds differ
        in size (padding: zeros, ``part`` -1).
    """
    from torch_geometric.utils import to_dense_batch

    _check_options(target, normal_key)
    if getattr(batch, "pos", None) is None or getattr(batch, "batch", None) is None:
        raise ValueError(f"batch must be a torch_geometric Batch with 'pos', got {batch!r}")
    names = _names(target, normal_key)
    size = int(batch.num_graphs)
    out = {}
    pos, mask = to_dense_batch(batch.pos.float(), batch.batch, batch_size=size)
    out["pos"] = pos
    for key, pad, dtype in (("normal", 0.0, torch.float32), ("part", PART_PAD, torch.int64)):
        value = getattr(batch, names[key], None)
        if value is not None:
            out[key] = to_dense_batch(value.to(dtype), batch.batch, fill_value=pad, batch_size=size)[0]
    for key in ("label", "category"):
        value = getattr(batch, names[key], None)
        if value is not None:
            out[key] = value.reshape(size).long()
    lengths = mask.sum(1)
    if bool((lengths != lengths[0]).any()):
        out["lengths"] = lengths
    return out
