"""Make PyTorch Geometric's own layers run on pointabstract's ops when pyg-lib is missing.

PyG 2.8's point-cloud code calls pyg-lib's operators directly (``DynamicEdgeConv``, ``XConv``
and ``GravNetConv`` call ``torch.ops.pyg.knn``; ``torch_geometric.nn.fps`` / ``knn`` /
``radius`` ... and ``knn_interpolate`` go through ``torch.ops.pyg.fps`` / ``knn`` / ``radius``)
and refuse to run unless ``torch_geometric.typing.WITH_FPS`` / ``WITH_KNN`` / ``WITH_RADIUS``
are set. :func:`register_pyg_ops` defines those three operators with pyg-lib's schemas, backed
by :mod:`pointabstract.interop.pyg`, and sets the flags; ``remove()`` (or leaving the ``with``
block) takes both back. Operators pyg-lib already provides are left alone.

Two ways to use it::

    with register_pyg_ops():            # for a block
        conv = DynamicEdgeConv(mlp, k=20)
        out = conv(x, batch)

    register_pyg_ops()                  # for the rest of the process (e.g. top of a script)

The registration is process-wide (every thread sees it). Layers that check the flags in
their constructor (``DynamicEdgeConv``) must be built while it is active.

Without any patching, a static graph does the same job: ``EdgeConv(mlp)(x, knn_graph(x, k,
batch, loop=True))`` equals ``DynamicEdgeConv(mlp, k)(x, batch)``.
"""

from __future__ import annotations

import torch

from . import pyg as _pyg
from ._ragged import check_nodes, cloud_sizes, ptr_sizes

__all__ = ["PygOpsRegistration", "register_pyg_ops"]

# pyg-lib's operator schemas (pyg_lib/csrc/ops/{fps,knn,radius}.cpp), so PyG's calls bind
_SCHEMAS = {
    "fps": "fps(Tensor src, Tensor ptr, float ratio=0.5, bool random_start=True) -> Tensor",
    "knn": "knn(Tensor x, Tensor y, Tensor? ptr_x=None, Tensor? ptr_y=None, int k=1, "
           "bool cosine=False, int num_workers=1) -> Tensor",
    "radius": "radius(Tensor x, Tensor y, Tensor? ptr_x=None, Tensor? ptr_y=None, float r=1.0, "
              "int max_num_neighbors=32, int num_workers=1, bool ignore_same_index=False) -> Tensor",
}
_FLAGS = {"fps": "WITH_FPS", "knn": "WITH_KNN", "radius": "WITH_RADIUS"}


def _batch(name, ptr, x):
    """(B + 1,) offsets -> (N,) sorted cloud ids and B; ``None`` stays one cloud."""
    if ptr is None:
        return None, None
    counts = ptr_sizes(name, ptr, x, None)
    return torch.repeat_interleave(torch.arange(counts.numel(), device=x.device), counts), counts.numel()


def _fps(src, ptr, ratio=0.5, random_start=True):
    return _pyg.fps(src, None, ratio, random_start, ptr=ptr)


def _knn(x, y, ptr_x=None, ptr_y=None, k=1, cosine=False, num_workers=1):
    x, y = check_nodes("x", x), check_nodes("y", y)
    bx, sx = _batch("ptr_x", ptr_x, x)
    by, sy = _batch("ptr_y", ptr_y, y)
    return _pyg.knn(x, y, k, bx, by, cosine, num_workers, max(sx or 1, sy or 1))


def _radius(x, y, ptr_x=None, ptr_y=None, r=1.0, max_num_neighbors=32, num_workers=1,
            ignore_same_index=False):
    x, y = check_nodes("x", x), check_nodes("y", y)
    bx, sx = _batch("ptr_x", ptr_x, x)
    by, sy = _batch("ptr_y", ptr_y, y)
    cx, cy = cloud_sizes([("ptr_x", bx, x), ("ptr_y", by, y)], max(sx or 1, sy or 1))
    return _pyg._radius_edges(x, y, float(r), cx, cy, int(max_num_neighbors),
                              ignore_same_index=bool(ignore_same_index), same=False)


_IMPLS = {"fps": _fps, "knn": _knn, "radius": _radius}


class PygOpsRegistration:
    """What :func:`register_pyg_ops` installed; ``remove()`` or ``with`` exit undoes it.

    Attributes:
        ops: names of the operators defined here (those pyg-lib did not already provide).
    """

    def __init__(self, ops: list[str], library, flags: dict[str, bool]):
        self.ops = ops
        self._library = library
        self._flags = flags  # flag name -> its value before

    def remove(self) -> None:
        """Undefine the operators and restore PyG's flags (a second call does nothing)."""
        import torch_geometric.typing as pyg_typing

        if self._library is not None:
            self._library._destroy()  # torch has no public way to undefine an operator
            self._library = None
        for flag, before in self._flags.items():
            setattr(pyg_typing, flag, before)
        self._flags = {}
        global _ACTIVE
        _ACTIVE = None

    def __enter__(self) -> PygOpsRegistration:
        return self

    def __exit__(self, *exc) -> None:
        self.remove()

    def __repr__(self) -> str:
        return f"PygOpsRegistration(ops={self.ops}, active={self._library is not None})"


_ACTIVE: PygOpsRegistration | None = None


def register_pyg_ops() -> PygOpsRegistration:
    """Define ``torch.ops.pyg.fps`` / ``knn`` / ``radius`` on pointabstract's ops (see module doc).

    Returns:
        the :class:`PygOpsRegistration`; use it as a context manager or call ``remove()``.

    Raises:
        ImportError: torch_geometric is not installed.
        RuntimeError: a registration is already active (remove it first).
    """
    import torch_geometric.typing as pyg_typing

    if _ACTIVE is not None:
        raise RuntimeError(f"pointabstract's PyG operators are already registered: {_ACTIVE!r}")
    missing = [name for name in _SCHEMAS if not hasattr(torch.ops.pyg, name)]
    library = torch.library.Library("pyg", "FRAGMENT") if missing else None
    for name in missing:
        library.define(_SCHEMAS[name])
        library.impl(name, _IMPLS[name], "CompositeExplicitAutograd")
    flags = {_FLAGS[name]: getattr(pyg_typing, _FLAGS[name]) for name in _SCHEMAS}
    for flag in flags:
        setattr(pyg_typing, flag, True)
    return _activate(PygOpsRegistration(missing, library, flags))


def _activate(registration):
    global _ACTIVE
    _ACTIVE = registration
    return registration
