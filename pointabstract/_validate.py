"""Input checks shared by the whole package: public functions validate every argument with
these helpers before any work, so one condition always gets one wording.

Every helper raises ``TypeError`` for the wrong kind of object or dtype and ``ValueError`` for
a wrong shape, value or range, in one line that names the argument and shows what arrived.
Scalars: :func:`check_int` (optionally ``None``), :func:`check_int_in` (an index in a closed
range), :func:`check_float` / :func:`check_positive`, :func:`check_bool`, :func:`check_choice`.
Tensors: :func:`check_cloud`, :func:`check_features` (per-point features of a cloud),
:func:`check_shape`, :func:`check_ids` (integer ids / labels in a range), :func:`check_index`,
:func:`check_lengths`, :func:`check_same_batch`. :func:`min_max` reads a tensor's range with one
copy to the host (one GPU synchronisation).
"""

from __future__ import annotations

import math
import numbers
import operator

import numpy as np
import torch


def check_cloud(name: str, x, *, dim: int | None = 3, allow_empty: bool = False,
                min_points: int = 1, finite: bool = True, squares: bool = False) -> torch.Tensor:
    """Check a batched cloud or feature tensor ``(B, N, C)`` (``C == dim`` when ``dim`` is set).

    Unless ``allow_empty``, B >= 1 and N >= ``min_points`` (a model whose layers need a few
    points per cloud raises it). ``finite`` also refuses NaN / Inf values (one pass over the data).
    ``squares`` (the models' ``pos``) also refuses finite coordinates beyond
    :func:`square_limit`, whose squared distances overflow the dtype (a model would turn them
    into NaN or Inf inside).
    """
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if not x.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got dtype {x.dtype}")
    if x.dim() != 3:
        want = f"(B, N, {dim})" if dim is not None else "(B, N, C)"
        raise ValueError(f"{name} must have shape {want}, got {tuple(x.shape)}")
    if dim is not None and x.shape[-1] != dim:
        raise ValueError(f"{name} must have shape (B, N, {dim}), got {tuple(x.shape)}")
    if x.shape[-1] == 0:
        raise ValueError(f"{name} must have at least one channel, got {tuple(x.shape)}")
    if not allow_empty and (x.shape[0] == 0 or x.shape[1] < max(min_points, 1)):
        points = "one point" if min_points <= 1 else f"{min_points} points"
        raise ValueError(f"{name} must hold at least one cloud of at least {points}, "
                         f"got {tuple(x.shape)}")
    if finite or squares:
        extent = finite_extent(name, x)
        limit, dtype = square_limit(x.dtype), str(x.dtype).replace("torch.", "")
        if squares and extent > limit:
            raise ValueError(f"{name} holds coordinates up to {extent:.3g} in absolute value: their squared "
                             f"distances overflow {dtype} (|coordinates| must stay below {limit:.3g}); scale "
                             "the cloud, e.g. into the unit sphere (NormalizeUnitSphere) the models train in")
    return x


def square_limit(dtype) -> float:
    """The largest ``|coordinate|`` whose squared distances stay finite in ``dtype`` (a torch or
    numpy float dtype): ``sqrt(max / 12)``, as two points in ``[-L, L]^3`` are at most ``12 L^2``
    apart squared. float32: 5.3e18; float64: 3.9e153."""
    info = torch.finfo(dtype) if isinstance(dtype, torch.dtype) else np.finfo(dtype)
    return math.sqrt(float(info.max) / 12)


def finite_extent(name: str, x: torch.Tensor) -> float:
    """The largest ``|value|`` of a floating-point tensor; ValueError naming it when it holds
    NaN or Inf. (The neighbour ops reuse the extent to spot clouds too large for their dtype.)
    """
    if x.device.type == "meta" or x.numel() == 0:
        return 0.0
    if x.device.type == "cpu" and x.dtype in (torch.float32, torch.float64):
        a = x.detach().numpy()  # numpy's reductions cost a few us, torch's up to ~0.5 ms
        lo, hi = float(a.min()), float(a.max())  # NaN propagates into both
    else:
        lo, hi = min_max(x.detach())
    if not (math.isfinite(lo) and math.isfinite(hi)):
        bad = (~torch.isfinite(x)).nonzero()[0].tolist()
        raise ValueError(f"{name} holds NaN or Inf values (first at index {tuple(bad)})")
    return max(-lo, hi)


def min_max(x: torch.Tensor) -> tuple:
    """``(x.min(), x.max())`` as Python numbers (int for integer tensors): on the CPU two
    reductions, elsewhere one ``aminmax`` and a single copy to the host (one synchronisation of a
    GPU instead of two). NaN propagates into both."""
    if x.device.type == "cpu":
        return x.min().item(), x.max().item()
    lo, hi = torch.stack(torch.aminmax(x)).tolist()
    return lo, hi


def check_same_batch(name_a: str, a: torch.Tensor, name_b: str, b: torch.Tensor,
                     *, same_channels: bool = True, same_dtype: bool = True) -> None:
    """Check that two clouds share device, batch size and (optionally) channels and dtype."""
    if a.device != b.device:
        raise ValueError(f"{name_a} and {name_b} must be on the same device, "
                         f"got {a.device} and {b.device}")
    if a.shape[0] != b.shape[0]:
        raise ValueError(f"{name_a} and {name_b} must have the same batch size B, "
                         f"got {a.shape[0]} and {b.shape[0]}")
    if same_channels and a.shape[-1] != b.shape[-1]:
        raise ValueError(f"{name_a} and {name_b} must have the same number of channels C, "
                         f"got {a.shape[-1]} and {b.shape[-1]}")
    if same_dtype and a.dtype != b.dtype:
        raise TypeError(f"{name_a} and {name_b} must have the same dtype, "
                        f"got {a.dtype} and {b.dtype}")


def check_lengths(name: str, lengths, batch: int, n: int, device: torch.device,
                  *, allow_zero: bool = False) -> torch.Tensor:
    """Return ``lengths`` as an int64 tensor ``(B,)`` with every value in ``[1, N]``.

    ``None`` means every cloud is full (all ``N`` points valid).
    """
    if lengths is None:
        return torch.full((batch,), n, dtype=torch.int64, device=device)
    if not isinstance(lengths, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of dtype int64, got {type(lengths).__name__}")
    if lengths.dtype != torch.int64:
        raise TypeError(f"{name} must have dtype int64, got {lengths.dtype}")
    if lengths.shape != (batch,):
        raise ValueError(f"{name} must have shape (B,) = ({batch},), got {tuple(lengths.shape)}")
    if lengths.device != device:
        raise ValueError(f"{name} must be on {device}, got {lengths.device}")
    if batch:
        lo, hi = min_max(lengths)
        low_ok = 0 if allow_zero else 1
        if lo < low_ok or hi > n:
            raise ValueError(f"{name} must lie in [{low_ok}, {n}] (N = {n}), got values in [{lo}, {hi}]")
    return lengths


def _arrived(value) -> str:
    """What arrived, for a message: the type and a one-line, shortened repr (a tensor or an
    array by its shape, whose repr can span many lines)."""
    if isinstance(value, (torch.Tensor, np.ndarray)) and value.ndim:
        return f"{type(value).__name__} of shape {tuple(value.shape)}"
    text = " ".join(repr(value.item() if isinstance(value, np.generic) else value).split())
    return f"{type(value).__name__} {text if len(text) <= 60 else text[:57] + '...'}"


def check_int(name: str, value, *, low: int | None = None, high: int | None = None,
              what: str = "N", allow_none: bool = False, note: str = "") -> int | None:
    """Check an integer argument (a Python int or a numpy integer, not a bool, float or
    tensor) with ``low <= value <= high``; returns it as a Python int. ``allow_none`` lets
    ``None`` through (messages then say "or None"); ``note`` (e.g. ``" (the block's M)"``) is
    added after the condition."""
    if value is None and allow_none:
        return None
    alt = " or None" if allow_none else ""
    if isinstance(value, (bool, np.bool_, torch.Tensor)):
        raise TypeError(f"{name} must be an int{alt}, got {_arrived(value)}")
    try:
        value = operator.index(value)  # int and numpy integers; refuses floats
    except TypeError:
        raise TypeError(f"{name} must be an int{alt}, got {_arrived(value)}") from None
    if low is not None and value < low:
        want = "a positive int" if low == 1 else f"an int >= {low}"
        raise ValueError(f"{name} must be {want}{alt}{note}, got {value}")
    if high is not None and value > high:
        raise ValueError(f"{name} must be at most {what} = {high}{note}, got {value}")
    return value


def check_int_in(name: str, value, low: int, high: int, *, note: str = "") -> int:
    """Check an int in the closed range ``[low, high]``, such as the index of an item among
    ``n`` (``check_int_in("capsule", c, 0, n - 1)``); ``note`` says where the bounds come from.
    E.g. ``level must be an int in [1, 4] (1: leaves, 4: the root), got 7``."""
    if isinstance(value, (bool, np.bool_, torch.Tensor)):
        raise TypeError(f"{name} must be an int, got {_arrived(value)}")
    try:
        value = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an int, got {_arrived(value)}") from None
    if not low <= value <= high:
        raise ValueError(f"{name} must be an int in [{low}, {high}]{note}, got {value}")
    return value


def check_count(name: str, value, upper: int, what: str = "N") -> int:
    """Check an integer count such as ``m`` or ``k``: ``1 <= value <= upper``."""
    return check_int(name, value, low=1, high=upper, what=what)


def check_float(name: str, value, *, low: float | None = None, high: float | None = None,
                low_open: bool = False, high_open: bool = False) -> float:
    """Check a finite real number (int, float or numpy scalar, not a bool or tensor) in the
    interval from ``low`` to ``high`` (each bound closed unless ``*_open``); returns a float.
    E.g. ``max_ratio must be a finite number in [0.0, 1.0), got 1.5``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {_arrived(value)}")
    value = float(value)
    too_low = low is not None and (value <= low if low_open else value < low)
    too_high = high is not None and (value >= high if high_open else value > high)
    if not np.isfinite(value) or too_low or too_high:
        if low == 0 and low_open and high is None:
            raise ValueError(f"{name} must be a positive finite number, got {value!r}")
        left = "(-inf" if low is None else f"{'(' if low_open else '['}{low!r}"
        right = "inf)" if high is None else f"{high!r}{')' if high_open else ']'}"
        raise ValueError(f"{name} must be a finite number in {left}, {right}, got {value!r}")
    return value


def check_positive(name: str, value) -> float:
    """Check a positive finite real number (int, float or numpy scalar); returns a float."""
    return check_float(name, value, low=0.0, low_open=True)


def check_choice(name: str, value, choices, *, allow_none: bool = False, note: str = ""):
    """Check that ``value`` is one of ``choices`` (or ``None`` with ``allow_none``); ``note``
    (e.g. ``" for an autoencoder"``) is added after the list. Returns ``value``."""
    if value is None and allow_none:
        return None
    try:
        ok = value in choices and not isinstance(value, (bool, np.bool_))  # True == 1
    except (TypeError, ValueError):  # unhashable (against a dict / set), or an array
        ok = False
    if not ok:
        alt = " or None" if allow_none else ""
        raise ValueError(f"{name} must be one of {list(choices)}{alt}{note}, got {value!r}")
    return value


def check_index(name: str, idx, batch: int, n: int, device: torch.device,
                *, allow_invalid: bool = True) -> torch.Tensor:
    """Check an index tensor ``(B, ...)`` of int64 into a dimension of size ``N``.

    With ``allow_invalid`` the value -1 (padding produced by ``knn`` / ``ball_query``) passes.
    """
    if not isinstance(idx, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of dtype int64, got {type(idx).__name__}")
    if idx.dtype != torch.int64:
        raise TypeError(f"{name} must have dtype int64, got {idx.dtype}")
    if idx.dim() < 2 or idx.shape[0] != batch:
        raise ValueError(f"{name} must have shape (B, ...) with B = {batch}, got {tuple(idx.shape)}")
    if idx.device != device:
        raise ValueError(f"{name} must be on {device}, got {idx.device}")
    if idx.numel():
        lo, hi = min_max(idx)
        low_ok = -1 if allow_invalid else 0
        if lo < low_ok or hi >= n:
            raise ValueError(f"{name} values must lie in [{low_ok}, {n - 1}], got values in [{lo}, {hi}]")
    return idx


def _shape_text(shape: tuple) -> str:
    return f"({shape[0]},)" if len(shape) == 1 else f"({', '.join(map(str, shape))})"


def check_shape(name: str, x, shape: tuple, letters: str, *, floating: bool = True) -> torch.Tensor:
    """Check a tensor of exactly ``shape`` (written ``letters``, e.g. ``"(B, C)"``), floating
    point when ``floating``; e.g. ``logits must have shape (B, C) = (4, 10), got (4, 9)``.
    A ``None`` in ``shape`` accepts any size and is written as its letter: ``(None, 7, 4)``
    with ``"(B, P, D)"`` gives ``u must have shape (B, P, D) = (B, 7, 4), got (7, 4)``."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if floating and not x.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got dtype {x.dtype}")
    shape = tuple(shape)
    if x.dim() != len(shape) or any(s is not None and s != n for s, n in zip(shape, x.shape)):
        names = letters.strip("()").split(", ")
        want = tuple(names[i] if s is None else s for i, s in enumerate(shape))
        raise ValueError(f"{name} must have shape {letters} = {_shape_text(want)}, got {tuple(x.shape)}")
    return x


def check_ids(name: str, ids, shape: tuple, letters: str, *, low: int = 0,
              high: int | None = None) -> torch.Tensor:
    """Check an int64 id tensor of exactly ``shape`` (written ``letters``) whose values lie in
    ``[low, high)`` (``high=None``: no upper bound); never clamped, never broadcast."""
    if not isinstance(ids, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of dtype int64, got {type(ids).__name__}")
    if ids.dtype != torch.int64:
        raise TypeError(f"{name} must have dtype int64, got {ids.dtype}")
    check_shape(name, ids, shape, letters, floating=False)
    if ids.numel():
        lo, hi = min_max(ids)
        if lo < low or (high is not None and hi >= high):
            bound = f"lie in [{low}, {high - 1}]" if high is not None else f"be >= {low}"
            raise ValueError(f"{name} values must {bound}, got values in [{lo}, {hi}]")
    return ids


def check_bool(name: str, value) -> bool:
    """Check a flag that must be a real ``bool`` (a string such as ``"False"`` is truthy)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {_arrived(value)}")
    return bool(value)


def check_features(name: str, x, pos: torch.Tensor, *, pos_name: str = "pos",
                   channels: int | None = None, finite: bool = True) -> torch.Tensor:
    """Check per-point features ``x: (B, N, C)`` of the cloud ``pos: (B, N, 3)`` (checked
    first): floating point, the same B and N and device as ``pos``, ``C == channels`` when
    given, finite when ``finite``. E.g. ``x must have shape (B, N, C) = (2, 64, C) matching
    pos (2, 64, 3), got (2, 63, 8)``."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if not x.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got dtype {x.dtype}")
    c = "C" if channels is None else channels
    if x.dim() != 3 or x.shape[:2] != pos.shape[:2] or (channels is not None and x.shape[2] != channels):
        raise ValueError(f"{name} must have shape (B, N, C) = ({pos.shape[0]}, {pos.shape[1]}, {c}) "
                         f"matching {pos_name} {tuple(pos.shape)}, got {tuple(x.shape)}")
    if x.device != pos.device:
        raise ValueError(f"{name} must be on {pos.device} like {pos_name}, got {x.device}")
    return check_cloud(name, x, dim=None, allow_empty=True, finite=finite)


def batch_size(data, dims: int, ids) -> int:
    """B for checking a pair such as (logits, labels): the first dimension of ``data`` when it
    has ``dims`` dimensions, else the length of 1-D ``ids``, else 0 (so that the message names
    whichever of the two does not fit)."""
    if isinstance(data, torch.Tensor) and data.dim() == dims:
        return int(data.shape[0])
    if isinstance(ids, torch.Tensor) and ids.dim() == 1:
        return len(ids)
    return 0
