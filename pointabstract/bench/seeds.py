"""Run a comparison over several seeds and report mean ± std: the one results format every
model comparison uses (a markdown table and a JSON file under ``runs/bench/``, written atomically
and never by a run that measured nothing: :mod:`.records`).

A difference between two variants is called *beyond the seed spread* when their
``mean ± std`` intervals do not overlap (``|m_a - m_b| > s_a + s_b``); with 3 seeds this is a
rough screen, not a significance test, and the tables say so. The papers' comparisons
(``bench curves``) decide by paired seeds instead: :mod:`.paired`.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from .. import _validate as V
from .records import write_records

__all__ = ["beyond_spread", "format_table", "run_seeds", "seed_list", "summarise", "write_results"]


def seed_list(seeds: int | Sequence[int]) -> list[int]:
    """``3`` -> ``[0, 1, 2]``; an explicit list is kept (duplicates refused)."""
    if isinstance(seeds, bool):
        raise TypeError(f"seeds must be a count or a list of ints, got {seeds!r}")
    if isinstance(seeds, int):
        return list(range(V.check_int("seeds", seeds, low=1)))
    out = [int(s) for s in seeds]
    if not out or len(set(out)) != len(out):
        raise ValueError(f"seeds must be a non-empty list of distinct ints, got {list(seeds)}")
    return out


def run_seeds(variants: Sequence[str], run_one: Callable[[str, int], dict], *,
              seeds: int | Sequence[int], progress: Callable[[str], None] = print) -> list[dict]:
    """Call ``run_one(variant, seed)`` for every variant and seed (seed-major order, so a
    stopped run still has every variant at the first seeds); returns one row per call:
    ``{"variant", "seed", "seconds", **run_one's scalars}``."""
    rows = []
    for seed in seed_list(seeds):
        for variant in variants:
            started = time.perf_counter()
            result = run_one(variant, seed)
            rows.append({"variant": variant, "seed": seed, **result,
                         "seconds": time.perf_counter() - started})
            shown = ", ".join(f"{k} {v:.4g}" for k, v in result.items() if isinstance(v, (int, float)))
            progress(f"{variant} seed {seed}: {shown}")
    return rows


def summarise(rows: list[dict], columns: Sequence[str]) -> list[dict]:
    """Per variant (in first-seen order): ``{"variant", "n", col: {"mean", "std", "values"}}``;
    std is the sample standard deviation (0 with one seed)."""
    order = list(dict.fromkeys(r["variant"] for r in rows))
    out = []
    for variant in order:
        mine = [r for r in rows if r["variant"] == variant]
        entry = {"variant": variant, "n": len(mine)}
        for col in columns:
            values = [float(r[col]) for r in mine if isinstance(r.get(col), (int, float))]
            entry[col] = {"mean": statistics.fmean(values) if values else float("nan"),
                          "std": statistics.stdev(values) if len(values) > 1 else 0.0, "values": values}
        out.append(entry)
    return out


def beyond_spread(a: dict, b: dict) -> bool:
    """Whether two ``{"mean", "std"}`` summaries differ by more than their seed spreads."""
    return abs(a["mean"] - b["mean"]) > a["std"] + b["std"]


def format_table(summary: list[dict], columns: Sequence[str], *, labels: dict[str, str] | None = None,
                 digits: int = 4, reference: str | None = None, key: str | None = None) -> str:
    """A markdown table of ``mean ± std`` per variant and column. With ``reference`` and ``key``
    a last column says whether each variant's ``key`` differs from the reference's beyond the
    seed spread."""
    labels = labels or {}
    head = ["variant", "seeds", *(labels.get(c, c) for c in columns)]
    ref = next((s for s in summary if s["variant"] == reference), None) if reference and key else None
    if ref is not None:
        head.append(f"{labels.get(key, key)} vs {reference}")
    lines = ["| " + " | ".join(head) + " |", "|---|---:|" + "---:|" * (len(head) - 2)]
    for s in summary:
        cells = [s["variant"], str(s["n"])]
        cells += [f"{s[c]['mean']:.{digits}g} ± {s[c]['std']:.2g}" for c in columns]
        if ref is not None:
            cells.append("(reference)" if s is ref else
                         "beyond spread" if beyond_spread(s[key], ref[key]) else "within spread")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_results(name: str, rows: list[dict], table: str, *, out_dir: str | Path = "runs/bench",
                  command: str = "", notes: str = "") -> tuple[Path, Path]:
    """``out_dir/<name>.md`` (command, table, notes) and ``out_dir/<name>.json`` (every row),
    written atomically (:func:`.records.write_records`).

    Raises:
        ValueError: ``rows`` is empty: the run measured nothing, and the previous record is kept.
    """
    out = Path(out_dir)
    md, js = out / f"{name}.md", out / f"{name}.json"
    text = [f"# {name}", ""]
    if command:
        text += [f"`{command}`", ""]
    text += [table, ""]
    if notes:
        text += [notes, ""]
    text.append("mean ± sample std over seeds; 'beyond spread' = the mean ± std intervals do not "
                "overlap (a rough screen with few seeds, not a significance test).")
    write_records({md: "\n".join(text) + "\n", js: json.dumps({"command": command, "rows": rows}, indent=2)},
                  measured=len(rows), what=f"bench {name}")
    return md, js
