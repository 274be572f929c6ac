"""report.md and metrics.json of a training run or an evaluation: the header every task
shares, the task's own section, and figure sections handed in by the caller."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

__all__ = ["write_report"]


def write_report(metrics: dict, out: str | Path, *, task, title: str = "", curves: Path | None = None,
                 sections: list[str] = ()) -> Path:
    """Write ``report.md`` (with the task's plots), then ``metrics.json``, under ``out``.

    Args:
        metrics: the task's metrics plus ``model``, ``checkpoint``, ``epoch``, ``data_root``
            when known.
        out: the report folder (created).
        task: the run's task; its ``report(metrics, out)`` gives the body (and writes plots).
        title: the report's heading (default: "Evaluation of <model>").
        curves: a training-curves PNG to copy beside the report and embed.
        sections: further markdown sections (e.g. figures made by the viewer) appended last.

    Returns:
        The path of report.md.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if curves is not None and curves.exists() and curves.resolve() != (out / "curves.png").resolve():
        shutil.copy(curves, out / "curves.png")
    lines = [f"# {title or 'Evaluation of ' + str(metrics.get('model', 'model'))}", ""]
    where = [f"checkpoint `{metrics['checkpoint']}`" if "checkpoint" in metrics else "",
             f"epoch {metrics['epoch']}" if "epoch" in metrics else "",
             f"data `{metrics['data_root']}`" if "data_root" in metrics else ""]
    if any(where):
        lines += ["- " + ", ".join(w for w in where if w)]
    lines += [f"- task: {task.name}; {task.summary(metrics)}", ""]
    lines += task.report(metrics, out)
    lines.append("")
    if (out / "curves.png").exists():
        lines += ["## Training curves", "", "![training curves](curves.png)", ""]
    for section in sections:
        if section:
            lines += [section, ""]
    (out / "report.md").write_text("\n".join(lines))
    tmp = out / f".metrics.json.tmp-{os.getpid()}"  # written last and atomically: a run folder
    tmp.write_text(json.dumps(metrics, indent=2))  # with metrics.json holds its whole report
    os.replace(tmp, out / "metrics.json")
    return out / "report.md"
