"""The transform protocol: ``Transform`` (draw once, apply to every field) and ``Compose``.

A transform is called as ``transform(sample, rng) -> new sample``. It never mutates the
input dict or its arrays: the returned dict is new and shares no array with the input, so
a dataset may cache what it loads and hand out the same arrays every epoch.

Randomness is drawn once per call, from the numpy ``Generator`` passed in (the dataset
gives one seeded from (seed, epoch, index), see :func:`pointabstract.data.sample_rng`), and
the same draw is applied to every field it concerns (``pos``, ``normal``, ``part``, ...).
Nothing reads global random state, so a sample depends only on its generator and never on
the number of DataLoader workers.
"""

from __future__ import annotations

import inspect
import numbers
from collections.abc import Callable, Sequence

import numpy as np

__all__ = ["Compose", "Transform"]

# Per-sample (not per-point) keys of the sample dict: never indexed by point selections.
_SAMPLE_LEVEL_KEYS = ("label", "category")


class Transform:
    """Base class of the transforms: subclasses implement ``_draw`` and ``_apply``.

    ``_draw(sample, rng) -> params`` takes every random number the call needs (nothing for
    deterministic transforms); ``_apply(sample, params) -> dict`` builds the new sample from
    them, for every field, without touching ``sample``. The base class checks the sample and
    the generator, and copies any array the subclass passed through unchanged, so the result
    never aliases the input.

    Subclasses store each constructor argument under its own name, which ``repr`` shows.
    """

    #: whether the transform draws random numbers (and so needs ``rng``)
    random: bool = False

    def __call__(self, sample: dict, rng: np.random.Generator | int | None = None) -> dict:
        """Transform one sample.

        Args:
            sample: dict with ``pos`` (N, 3) float array and optionally ``normal`` (N, 3),
                ``part`` (N,) int, ``label``, ``category`` (see :mod:`pointabstract.data.datasets.base`).
            rng: numpy Generator (or an int seed) supplying every random number; may be None
                for deterministic transforms only.

        Returns:
            a new dict; the input dict and its arrays are left untouched.
        """
        check_sample(sample)
        rng = as_generator(rng, required=self.random, who=type(self).__name__)
        out = self._apply(sample, self._draw(sample, rng))
        return _fresh(out, sample)

    def _draw(self, sample: dict, rng: np.random.Generator | None):
        return None

    def _apply(self, sample: dict, params) -> dict:
        raise NotImplementedError

    def __repr__(self) -> str:
        params = list(inspect.signature(type(self).__init__).parameters.values())[1:]  # not self
        names = [p.name for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        args = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        return f"{type(self).__name__}({args})"


class Compose(Transform):
    """Apply transforms in order, passing the same generator along (it advances between them).

    Args:
        transforms: sequence of callables ``(sample, rng) -> sample``.

    Example::

        train = Compose([NormalizeUnitSphere(), RandomScale(), RandomTranslate(0.2)])
        sample = train(sample, rng)
    """

    def __init__(self, transforms: Sequence[Callable]):
        if isinstance(transforms, (str, bytes)) or not isinstance(transforms, Sequence):
            raise TypeError(f"transforms must be a sequence of transforms, got {type(transforms).__name__}")
        for i, t in enumerate(transforms):
            if not callable(t):
                raise TypeError(f"transforms[{i}] is not callable: {t!r}")
        self.transforms = list(transforms)

    @property
    def random(self) -> bool:  # plain callables count as random: they may need the generator
        return any(getattr(t, "random", True) for t in self.transforms)

    def __call__(self, sample: dict, rng: np.random.Generator | int | None = None) -> dict:
        check_sample(sample)
        # An int seed becomes one generator here, so the steps draw different numbers.
        rng = as_generator(rng, required=self.random, who="Compose")
        out = sample
        for t in self.transforms:
            out = t(out, rng)
        return _fresh(dict(out), sample)

    def __repr__(self) -> str:
        if not self.transforms:
            return "Compose([])"
        inner = "".join(f"    {t!r},\n" for t in self.transforms)
        return f"Compose([\n{inner}])"


# ---------------------------------------------------------------------------- helpers


def as_generator(rng, *, required: bool, who: str) -> np.random.Generator | None:
    """``rng`` as a numpy Generator (an int seeds a new one); None only when not ``required``."""
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None and not required:
        return None
    if isinstance(rng, numbers.Integral) and not isinstance(rng, bool):
        return np.random.default_rng(int(rng))
    raise TypeError(f"{who} draws random numbers: rng must be a numpy.random.Generator or an int seed, "
                    f"got {type(rng).__name__}")


def check_sample(sample) -> int:
    """Check the fields a transform relies on; return the number of points N."""
    if not isinstance(sample, dict):
        raise TypeError(f"sample must be a dict, got {type(sample).__name__}")
    if "pos" not in sample:
        raise ValueError(f"sample has no 'pos' (keys: {sorted(sample)})")
    pos = sample["pos"]
    if not isinstance(pos, np.ndarray):
        raise TypeError(f"sample['pos'] must be a numpy array, got {type(pos).__name__}")
    if pos.ndim != 2 or pos.shape[1] != 3 or pos.shape[0] == 0 or not np.issubdtype(pos.dtype, np.floating):
        raise ValueError(f"sample['pos'] must be a float array of shape (N, 3) with N > 0, "
                         f"got {pos.dtype} {pos.shape}")
    n = pos.shape[0]
    if "normal" in sample:
        normal = sample["normal"]
        ok = isinstance(normal, np.ndarray) and normal.shape == (n, 3)
        if not ok or not np.issubdtype(normal.dtype, np.floating):
            raise ValueError(f"sample['normal'] must be a float array of shape ({n}, 3) like pos, "
                             f"got {_describe(normal)}")
    if "part" in sample:
        part = sample["part"]
        ok = isinstance(part, np.ndarray) and part.shape == (n,) and np.issubdtype(part.dtype, np.integer)
        if not ok:
            raise ValueError(f"sample['part'] must be an int array of shape ({n},), got {_describe(part)}")
    return n


def point_keys(sample: dict) -> list[str]:
    """Keys of the per-point fields: arrays whose first dimension is N (except label, category)."""
    n = len(sample["pos"])
    return [k for k, v in sample.items()
            if k not in _SAMPLE_LEVEL_KEYS and isinstance(v, np.ndarray) and v.ndim >= 1 and len(v) == n]


def select_points(sample: dict, index: np.ndarray) -> dict:
    """A new sample holding points ``index`` (M,) of every per-point field, in that order."""
    out = dict(sample)
    for k in point_keys(sample):
        out[k] = sample[k][index]
    return out


def _describe(x) -> str:
    if isinstance(x, np.ndarray):
        return f"{x.dtype} {x.shape}"
    return type(x).__name__


def _fresh(out: dict, sample: dict) -> dict:
    """Copy every array of ``out`` that is (or views) an array of ``sample``."""
    inputs = [v for v in sample.values() if isinstance(v, np.ndarray)]
    for k, v in out.items():
        if isinstance(v, np.ndarray) and any(np.may_share_memory(v, w) for w in inputs):
            out[k] = v.copy()
    return out
