"""Where ``pointabstract view`` writes (``--png``, ``--figure``, ``--html``), checked before any
checkpoint is loaded or anything is drawn, so a bad path costs no rendering time.

A path is refused in one line naming the option when:

- its name does not end in the format's suffix: ``.png`` for ``--png`` / ``--figure`` (the PNG
  writer picks the format by the suffix, so ``v.jpg`` would be a JPEG and ``notes.md`` an error
  after rendering), ``.html`` / ``.htm`` for ``--html`` (a page written as ``v.png`` is not what the
  name says);
- it is a folder, or its folder cannot be created or written (a probe file is written and removed:
  :func:`~.html.check_out_path`), or it is an existing file that cannot be written;
- it is an existing file the viewer did not write (a PNG without the viewer's text metadata,
  :data:`~.render.PNG_BACKEND_KEY`; a page without the viewer's data element, :data:`~.html.DATA_ID`)
  and ``overwrite`` is not given: the viewer replaces only its own earlier pictures and pages.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["SUFFIXES", "check_output", "check_outputs", "written_by_viewer"]

# option -> the file names it may write
SUFFIXES = {"--png": (".png",), "--figure": (".png",), "--html": (".html", ".htm")}


def written_by_viewer(path: Path) -> bool:
    """Whether ``path`` is a PNG or an HTML page that ``pointabstract view`` wrote."""
    if path.suffix.lower() == ".png":
        from .render import png_backend

        try:
            return png_backend(path) is not None
        except (OSError, ValueError):  # not an image PIL can open
            return False
    from .html import DATA_ID

    with open(path, "rb") as handle:
        return f'<script type="application/json" id="{DATA_ID}">'.encode() in handle.read()


def check_output(path: str | Path, option: str, *, overwrite: bool = False) -> tuple[Path, bool]:
    """``path`` checked as the file ``option`` writes (module docstring).

    Args:
        path: the output file.
        option: ``"--png"``, ``"--figure"`` or ``"--html"`` (a key of :data:`SUFFIXES`).
        overwrite: replace an existing file the viewer did not write.

    Returns:
        ``(path, foreign)``: ``foreign`` is True when an existing file the viewer did not write
        will be replaced (only with ``overwrite``), so the caller can say so.

    Raises:
        ValueError: one line naming ``option``: a wrong suffix, a folder, a folder that cannot be
            written, a read-only file, or a file of someone else's without ``overwrite``.
    """
    from .html import check_out_path

    path = Path(path)
    suffixes = SUFFIXES[option]
    if path.suffix.lower() not in suffixes and not path.is_dir():
        wanted = " or ".join(suffixes)
        raise ValueError(f"{option} {path}: the name must end in {wanted} (it writes "
                         f"{'a PNG image' if suffixes == ('.png',) else 'an HTML page'}), e.g. "
                         f"{path.with_suffix(suffixes[0]).name}")
    check_out_path(path, option=option)
    if not path.exists():
        return path, False
    if not os.access(path, os.W_OK):
        raise ValueError(f"{option} {path}: the file is read-only; choose another name")
    foreign = not written_by_viewer(path)
    if foreign and not overwrite:
        raise ValueError(f"{option} {path}: a file that pointabstract view did not write is there; choose "
                         "another name, or give --overwrite to replace it")
    return path, foreign


def check_outputs(paths: dict[str, str | Path | None], *, overwrite: bool = False) -> list[Path]:
    """:func:`check_output` of every ``{option: path}`` given (None: not given); returns the files
    of someone else's that ``overwrite`` lets the command replace (for it to say so)."""
    checked = [check_output(path, option, overwrite=overwrite) for option, path in paths.items()
               if path is not None]
    return [path for path, foreign in checked if foreign]
