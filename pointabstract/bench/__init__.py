"""Benchmarks printed as tables: ``pointabstract bench NAME``.

Every benchmark is a module here with ``add_arguments(parser)`` and ``main(args) -> int``
(the module docstring's first line is the command's help), listed once in :data:`BENCHES`.
Comparisons over seeds share :mod:`.seeds` (mean ± std, markdown + JSON under runs/bench/).
Every record (those files, and the ``--out`` tables) is written through :mod:`.records`:
atomically, and never by a run that measured nothing; options that select nothing to measure
are refused before any work, with one line.
"""

from __future__ import annotations

import importlib

__all__ = ["BENCHES", "bench_module"]

# name -> module (imported when the command line is built)
BENCHES: dict[str, str] = {
    "ops": "pointabstract.bench.ops",
    "models": "pointabstract.bench.models",
    "data": "pointabstract.bench.data",
    "capsules": "pointabstract.bench.capsules",
    "sequoia": "pointabstract.bench.sequoia",
    "contextpool": "pointabstract.bench.contextpool",
    "parts": "pointabstract.bench.parts",
    "curves": "pointabstract.bench.curves",
    "train": "pointabstract.bench.train_speed",
    "predict": "pointabstract.bench.predict",
    "gpu": "pointabstract.bench.gpu",
    "ragged": "pointabstract.bench.ragged",
}


def bench_module(name: str):
    """The module of benchmark ``name``; ValueError listing the choices otherwise."""
    if name not in BENCHES:
        raise ValueError(f"unknown benchmark {name!r}; choose from {sorted(BENCHES)}")
    return importlib.import_module(BENCHES[name])
