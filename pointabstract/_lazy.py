"""Names of a package loaded from its submodules on first use (PEP 562), so that importing the
package costs nothing beyond itself: ``__getattr__, __dir__ = lazy_exports(__name__, EXPORTS,
globals())`` in its ``__init__``, with ``EXPORTS`` mapping each public name to its submodule
(``"module:name"`` when the package exports it under another name)."""

from __future__ import annotations

import importlib
from collections.abc import Callable

__all__ = ["lazy_exports"]


def lazy_exports(package: str, exports: dict[str, str], namespace: dict) -> tuple[Callable, Callable]:
    """The module-level ``__getattr__`` and ``__dir__`` of ``package`` for ``exports``
    (name -> submodule path relative to the package, e.g. ``"core.colors"``, or
    ``"generator:CLASS_NAMES"`` for a name the submodule defines under another name)."""
    def __getattr__(name: str):
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attr = exports[name].partition(":")
        return getattr(importlib.import_module(f".{module}", package), attr or name)

    def __dir__():
        return sorted([*namespace, *exports])

    return __getattr__, __dir__
