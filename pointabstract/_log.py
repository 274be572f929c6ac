"""Notes: what the library says while it works (a cache being built, files left out of a split, a
line per epoch) are records of the :mod:`logging` logger ``"pointabstract"`` and its children, one
per module (``logging.getLogger(__name__)``, e.g. ``"pointabstract.engine.restored"``).

The library never configures logging: importing it adds one ``NullHandler`` to
``"pointabstract"`` and nothing else, so a program that uses the Python API decides what is shown
(``logging.basicConfig(level=logging.INFO)`` shows every note; ``logging.getLogger("pointabstract")
.setLevel(logging.ERROR)`` silences them). Levels: ``INFO`` for progress (stage and epoch lines,
what ``--overwrite`` replaced, a cache being built), ``WARNING`` for the ``note: ...`` lines about
the user's data or set-up (files left out of a split, a data root found elsewhere, a renderer
given up).

The command line shows them through :func:`cli_notes`: each record's message alone, with no
level or name, on stderr, or on stdout for the notes passed ``extra=STDOUT`` (the lines a command
has always printed there: one per epoch, one per generated split, what ``--overwrite`` replaced).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["LOGGER", "STDOUT", "cli_notes"]

LOGGER = "pointabstract"
_STREAM = "pointabstract_stream"
STDOUT = {_STREAM: "stdout"}  # ``extra=`` of a note the command line prints on stdout


class _CommandLineHandler(logging.Handler):
    """Writes a record's message and a newline to the stream of the moment (``sys.stdout`` or
    ``sys.stderr``, looked up per record so redirections and pytest's capture see it)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            stream = sys.stdout if getattr(record, _STREAM, None) == "stdout" else sys.stderr
            stream.write(record.getMessage() + "\n")
            stream.flush()
        except Exception:  # logging's contract: a failing handler reports, never raises
            self.handleError(record)


@contextmanager
def cli_notes() -> Iterator[None]:
    """Show the library's notes as the command line always printed them, for the duration.

    Adds a handler to ``"pointabstract"`` that writes each message alone (see the module
    docstring), sets the logger to ``INFO`` unless a level was set on it already (a caller that
    set ``ERROR`` keeps its silence), and stops propagation to the root logger so that a handler
    some other library installed there cannot print a note twice. Everything is restored on exit;
    nested uses add nothing.
    """
    logger = logging.getLogger(LOGGER)
    if any(isinstance(h, _CommandLineHandler) for h in logger.handlers):
        yield
        return
    handler, level, propagate = _CommandLineHandler(), logger.level, logger.propagate
    if level == logging.NOTSET:
        logger.setLevel(logging.INFO)
    logger.propagate = False
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        logger.propagate = propagate
