"""Folder listings and list files, as the loaders read them and name them in their errors."""

from __future__ import annotations

from pathlib import Path

__all__ = ["list_folder", "read_names"]


def list_folder(path: Path, limit: int = 20) -> str:
    """A short listing of a folder for error messages (``a/, b.txt, ... and 3 more``)."""
    if not path.is_dir():
        return "(it does not exist)" if not path.exists() else "(it is a file, not a folder)"
    entries = sorted(p.name + ("/" if p.is_dir() else "") for p in path.iterdir())
    if not entries:
        return "(empty)"
    more = f", ... and {len(entries) - limit} more" if len(entries) > limit else ""
    return ", ".join(entries[:limit]) + more


def read_names(path: Path) -> list[str]:
    """Non-blank stripped lines of a list file; an error names the file when it is unusable."""
    if not path.is_file():
        raise ValueError(f"{path}: file not found (in {list_folder(path.parent)})")
    names = [line.strip() for line in path.read_text().splitlines() if line.strip()]
    if not names:
        raise ValueError(f"{path}: empty list")
    seen = set()
    for number, name in enumerate(names, start=1):
        if name in seen:
            raise ValueError(f"{path}: {name!r} listed twice (entry {number})")
        seen.add(name)
    return names
