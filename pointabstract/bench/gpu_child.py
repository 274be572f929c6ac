"""The sections of ``pointabstract bench gpu`` that run Python in a child process: ops, train, demo.

``python -m pointabstract.bench.gpu_child SECTION OPTIONS_JSON RESULT_JSON`` runs one section
(each in its own process, so a CUDA error or a hang in one cannot take the others down) and
writes ``{"status": "ok" | "FAILED" | "skipped", "summary": one line, "rows": [...], "notes":
[...], "table": markdown}`` to RESULT_JSON. A measurement that fails is a row with its error;
the section then reports FAILED and goes on with the next measurement. Options: ``device``,
``quick``, ``tiny`` (the CPU dry run's sizes), ``deadline_s`` (seconds from the start after
which no new measurement starts), ``work`` (scratch folder), ``demo_epochs``, ``data``,
``cap_gib``.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

__all__ = ["SECTIONS", "demo_section", "ops_section", "train_section"]

_QUICK_TRAIN = ("centroid transformer (paper size)", "self-attention baseline (k = 40)",
                "capsule AE 12 caps, dynamic routing", "capsule AE 12 caps, centroid attention",
                "Sequoia segmenter N = 2k", "softmax segmenter N = 2k")
_LAST_BEFORE_TABLE4 = "Sequoia segmenter N = 8k"  # the max-batch rows run before this config


def _one_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0][:300] if text else ''}"


def ops_section(opts: dict, deadline: float) -> dict:
    """``bench ops`` on the device: ours against the torch one-liners and importable peers."""
    from . import ops as bench

    device = opts["device"]
    notes = [f"skipped: {name} not importable" for name in bench.missing_peers(device)]
    for note in notes:
        print(note, flush=True)
    print(f"# ops on {bench.environment(device)}", flush=True)
    rows = bench.run(quick=opts["quick"], repeats=1 if opts["tiny"] else 3 if opts["quick"] else 5,
                     device=device, tiny=opts["tiny"], progress=lambda s: print(s, flush=True))
    worst = bench.slowest_peer_ratio(rows)
    summary = (f"{len({(r.op, r.workload) for r in rows})} workloads; lowest peer / ours ratio "
               f"{worst:.2f}" if worst is not None else "no peer importable")
    return {"status": "ok", "summary": summary, "notes": notes, "table": bench.format_table(rows),
            "rows": [{**r.__dict__, "ratio": r.ratio} for r in rows]}


def train_section(opts: dict, deadline: float) -> dict:
    """One training step's speed and memory per paper-sized config, fp32 and bf16, then Table 4's
    largest batch of the capsule autoencoders under the memory cap."""
    from . import gpu_steps as steps

    device, tiny = opts["device"], opts["tiny"]
    names = _QUICK_TRAIN if opts["quick"] else tuple(steps.CONFIGS)
    routings = steps.CAPSULE_ROUTINGS if not opts["quick"] else steps.CAPSULE_ROUTINGS[::2]
    rows: list[dict] = []

    def add(row: dict) -> None:
        rows.append(row)
        _save(_train_result(rows))  # what a kill at the section's cap leaves

    for name in names:
        if name == _LAST_BEFORE_TABLE4:  # Table 4 before the 8k-point and full-attention rows
            for routing in routings:
                add(_max_batch_row(routing, opts, deadline))
        for amp in (False, True):
            row = {"config": name, "precision": "bf16 autocast" if amp else "fp32"}
            add(_attempt(row, deadline, lambda n=name, a=amp: steps.measure(
                n, device=device, amp=a, tiny=tiny, steps=2 if tiny else 5, count_syncs=not a)))
    if _LAST_BEFORE_TABLE4 not in names:
        for routing in routings:
            add(_max_batch_row(routing, opts, deadline))
    return _train_result(rows)


def _train_result(rows: list[dict]) -> dict:
    done = sum("error" not in r and "skipped" not in r for r in rows)
    return _finish(rows, _train_table(rows), f"{done} of {len(rows)} measurements")


def _max_batch_row(name: str, opts: dict, deadline: float) -> dict:
    from . import gpu_steps as steps

    row = {"config": name, "precision": "fp32", "what": "max batch"}
    return _attempt(row, deadline, lambda: steps.max_batch(
        name, device=opts["device"], cap_gib=opts["cap_gib"], limit=4 if opts["tiny"] else 1024,
        tiny=opts["tiny"], deadline=deadline))


def _attempt(row: dict, deadline: float, measure) -> dict:
    if time.monotonic() > deadline:
        row["skipped"] = "not run: section budget spent"
    else:
        try:
            row.update(measure())
        except Exception as err:  # the next measurement still runs
            row["error"] = _one_line(err)
    print(json.dumps(row), flush=True)
    return row


def _finish(rows: list[dict], table: str, summary: str, notes: list[str] | None = None) -> dict:
    failed = [r for r in rows if r.get("error")]
    skipped = [r for r in rows if "skipped" in r]
    if skipped:
        summary += f", {len(skipped)} not run ({skipped[0]['skipped']})"
    if failed:
        summary += f", {len(failed)} FAILED (first: {failed[0]['error']})"
    return {"status": "FAILED" if failed else "ok", "summary": summary, "rows": rows, "table": table,
            "notes": notes or []}


def _cell(row: dict, key: str, fmt: str) -> str:
    return format(row[key], fmt) if row.get(key) is not None else ""


def _train_table(rows: list[dict]) -> str:
    lines = ["| config | precision | B x N | step ms | samples/s | peak MiB | host syncs / step (top sites) "
             "| max batch (cap) | note |", "|---|---|---|---:|---:|---:|---|---|---|"]
    for r in rows:
        shape = f"{r['batch']} x {r['points']}" if "batch" in r else ""
        sites = f"{r['syncs_per_step']} ({', '.join(r['sync_sites'])})" if "syncs_per_step" in r else ""
        cap = (f"{r['max_batch']} ({r['cap_gib']:g} GiB)" if r.get("cap_gib") else
               f"{r['max_batch']} (no cap on CPU, limit {r['limit']})") if "max_batch" in r else ""
        bad = "" if r.get("finite_weights", True) else "NaN/Inf weights"
        note = r.get("error") or r.get("skipped") or bad
        lines.append(f"| {r['config']} | {r['precision']} | {shape} | {_cell(r, 'step_ms', '.1f')} | "
                     f"{_cell(r, 'samples_per_s', '.0f')} | {_cell(r, 'peak_mib', '.0f')} | {sites} | "
                     f"{cap} | {note} |")
    return "\n".join(lines)


def demo_section(opts: dict, deadline: float) -> dict:
    """``make demo``'s commands and ``predict`` on the device, each timed."""
    from .gpu_demo import demo_rows

    data = Path(opts["data"]) if opts.get("data") else None
    rows = demo_rows(Path(opts["work"]) / "demo", device=opts["device"], epochs=opts.get("demo_epochs"),
                     tiny=opts["tiny"], data=data, deadline=deadline,
                     progress=lambda s: print(s, flush=True), record=lambda r: _save(_demo_result(r, opts)))
    return _demo_result(rows, opts)


def _demo_result(rows: list[dict], opts: dict) -> dict:
    if len(rows) == 1 and "skipped" in rows[0] and rows[0]["what"] == "data synth":
        return {"status": "skipped", "summary": f"skipped: {rows[0]['skipped']}", "rows": rows,
                "table": "", "notes": [f"skipped: {rows[0]['skipped']}"]}
    from ..engine import load_config
    from .gpu_demo import PRESETS

    epochs, own = opts.get("demo_epochs"), " / ".join(str(load_config(p).optim.epochs) for p in PRESETS)
    note = (f"epochs: {epochs} per stage (the presets': {own})" if epochs is not None
            else f"epochs: the presets' ({', '.join(PRESETS)}: {own})")
    if opts["tiny"]:
        note = "dry-run sizes: 3 + 1 shapes per class, 64 points, 2 steps per run"
    lines = ["| command | s | result |", "|---|---:|---|"]
    for r in rows:
        result = r.get("error") and f"FAILED: {r['error']}" or r.get("skipped") or r.get("result", "")
        if r.get("files") and "s" in r:
            result = f"{r['files']} files, {r['s'] / r['files']:.2f} s per file {result}".strip()
        lines.append(f"| {r['what']} | {_cell(r, 's', '.1f')} | {result} |")
    return _finish(rows, "\n".join(lines), f"{len(rows)} commands; {note}", notes=[note])


_RESULT: list[Path] = []  # where main writes the result (also each partial one)


def _save(out: dict) -> None:
    for path in _RESULT:
        path.write_text(json.dumps(out, default=str))


SECTIONS = {"ops": ops_section, "train": train_section, "demo": demo_section}


def main(argv: list[str]) -> int:
    """Run section ``argv[0]`` with options ``argv[1]`` (JSON), writing the result to ``argv[2]``."""
    name, opts, result = argv[0], json.loads(argv[1]), Path(argv[2])
    _RESULT[:] = [result]
    deadline = time.monotonic() + float(opts["deadline_s"])
    try:
        out = SECTIONS[name](opts, deadline)
    except Exception as err:
        failed = {"status": "FAILED", "summary": _one_line(err), "rows": [], "table": ""}
        result.write_text(json.dumps(failed))
        raise
    result.write_text(json.dumps(out, default=str))
    return 0


if __name__ == "__main__":
    from .._log import cli_notes

    with cli_notes():  # the library's notes in the section's log, as `pointabstract` prints them
        sys.exit(main(sys.argv[1:]))
