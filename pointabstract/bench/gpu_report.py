"""The records of ``pointabstract bench gpu``: the summary table (one row per section), the
sections' own tables, and ``summary.md`` / ``summary.json`` written atomically."""

from __future__ import annotations

import json
import sys
from pathlib import Path

__all__ = ["details", "markdown", "table", "write"]

_TITLES = {"kernels": "Kernels", "tests": "CUDA-marked tests", "ops": "Ops against the torch one-liners",
           "train": "Training steps (paper sizes) and Table 4's max batch", "demo": "make demo and predict"}


def table(results: dict, *, total_s: float) -> str:
    """Markdown: section | status | seconds | cap | what it found."""
    lines = ["| section | status | s | cap s | result |", "|---|---|---:|---:|---|"]
    for name, r in results.items():
        summary = str(r.get("summary", "")).replace("|", "/")
        lines.append(f"| {name} | {r['status']} | {r['seconds']:.1f} | {r.get('cap_s', 0):.0f} | {summary} |")
    lines.append(f"| total | | {total_s:.1f} | | |")
    return "\n".join(lines)


def details(results: dict) -> str:
    """Each section's own table, notes and failures, under a heading."""
    parts = []
    for name, r in results.items():
        body = [f"### {_TITLES.get(name, name)}", ""]
        body += [f"- {note}" for note in r.get("notes", [])]
        if name == "tests":
            body += [f"- FAILED {line}" for line in r.get("rows", [])]
        if r.get("table"):
            body += ["", r["table"]]
        if len(body) > 2:
            parts.append("\n".join(body))
    return "\n\n".join(parts)


def markdown(results: dict, *, device: str, total_s: float, args) -> str:
    """The whole summary.md: the command, the device, the summary table, then the details."""
    command = "pointabstract " + " ".join(sys.argv[1:]) if sys.argv[1:2] == ["bench"] else \
        "pointabstract bench gpu " + " ".join(sys.argv[1:])
    return "\n".join([
        "# GPU check", "", f"`{command.strip()}` on {device}; budget {args.budget_s:.0f} s, "
        f"{'quick' if args.quick else 'full'} sizes.", "", table(results, total_s=total_s), "",
        details(results), ""])


def write(out: Path, text: str, results: dict, *, device: str, total_s: float) -> list[Path]:
    """``summary.md`` and ``summary.json`` under ``out`` (atomically; nothing when no section ran)."""
    from .records import write_records

    record = {"device": device, "total_s": total_s, "sections": results}
    texts = {out / "summary.md": text, out / "summary.json": json.dumps(record, indent=1, default=str)}
    return write_records(texts, measured=len(results), what="bench gpu")
