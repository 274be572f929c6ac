"""The runs of a learning curve (``bench curves``): one per (variant, budget, seed), reused when
finished under the current protocol, trained one at a time or by J worker processes.

Each run lives in ``runs/<variant>/<unit><budget>/seed<s>`` and records the protocol it was
trained under (:mod:`.protocol`). A finished run whose protocol matches is reused, an
interrupted one resumed; a run of another protocol (other training code, thread count, torch or
device; or none recorded) is trained again from scratch in its folder (the bench's own), unless
``keep_stale``: then a finished one is kept and its row says why it is stale, so the records can
label it. The A/A control's cells train the control variant at seed ``s + AA_OFFSET`` into that
variant's own folders, and pair with the control at seed ``s``.

With ``jobs`` > 1 the cells go to a pool of ``jobs`` processes (spawned, each limited to the
protocol's thread count) that take them from one queue in the order given; a run's result does
not depend on which process trains it or on how many run beside it.

A ledger (:mod:`.ledger`, ``--ledger``) carries finished runs' metrics where their folders are
gone: a cell it records under the current protocol and the same settings is not trained again.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .comparison import AA_OFFSET, SCALES, Comparison
from .ledger import Ledger, settings_digest
from .protocol import differences, read_protocol, write_protocol

__all__ = ["Cell", "finished_metrics", "plan", "run_cells", "train_cell"]


@dataclass(frozen=True)
class Cell:
    """One run of a curve."""

    variant: str  # the row's label (the control's A/A rows: "<control>_aa")
    config: str  # the variant whose overrides it trains
    budget: int
    seed: int  # the pairing seed (the row's)
    train_seed: int  # the seed it trains with

    def folder(self, runs: Path, unit: str) -> Path:
        return Path(runs) / self.config / f"{unit}{self.budget}" / f"seed{self.train_seed}"


def plan(comp: Comparison, budgets, seeds: list[int], *, control: bool) -> list[Cell]:
    """Budget-major, then seed, then variant (a stopped curve has its short budgets and first
    seeds); with ``control`` and ``comp.control``, each seed's A/A cell after the variants."""
    cells = []
    for budget in budgets:
        for seed in seeds:
            cells += [Cell(v, v, budget, seed, seed) for v in comp.variants]
            if control and comp.control:
                cells.append(Cell(f"{comp.control}_aa", comp.control, budget, seed, seed + AA_OFFSET))
    return cells


def finished_metrics(cfg, out: Path) -> dict | None:
    """The final metrics (``metrics.json``) of a run in ``out`` that reached ``cfg``'s budget with
    the same settings, or None. Read without resuming: a run written with older parameter names
    cannot be resumed (its optimiser state does not match), but its result stands."""
    from ..engine.trainer import _resume_from

    if not (out / "metrics.json").is_file():
        return None
    try:
        ckpt, _ = _resume_from(cfg, out, allow_config_change=False)
    except (OSError, ValueError):  # another model or settings, a damaged file, not finished
        return None
    budget = cfg.optim.max_steps
    done = ckpt["step"] >= budget if budget > 0 else ckpt["epoch"] >= cfg.optim.epochs
    try:
        metrics = json.loads((out / "metrics.json").read_text())
    except (OSError, ValueError):
        return None
    return metrics if done and metrics.get("epoch") == ckpt["epoch"] else None  # not an older evaluation's


def train_cell(comp: Comparison, cell: Cell, runs: Path, extra: dict, protocol: dict,
               keep_stale: bool = False) -> tuple[dict, list[str]]:
    """Train (or reuse / resume) one run; returns its final metrics and, for a kept stale run,
    what differs from ``protocol`` (``[]`` otherwise)."""
    from ..engine import load_config, train

    out = cell.folder(runs, comp.unit)
    cfg = load_config(comp.preset, comp.overrides(cell.config, cell.budget, cell.train_seed, out, extra))
    stale = differences(read_protocol(out), protocol)
    if (out / "last.pt").is_file():
        finished = finished_metrics(cfg, out)
        if finished is not None and (not stale or keep_stale):
            return finished, stale
        if not stale:
            try:  # an interrupted run of this protocol and these settings continues
                return train(cfg, resume=True), []
            except ValueError:  # other settings (or a damaged file) in the benchmark's own folder
                pass
    write_protocol(out, protocol)  # before training: a resumed run never mixes two protocols
    return train(cfg, overwrite=True), []


def _set_threads(threads: int) -> None:
    import torch

    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)


def _row(comp: Comparison, cell: Cell, metrics: dict, stale: list[str]) -> dict:
    row = {"variant": cell.variant, "budget": cell.budget, "seed": cell.seed}
    if cell.train_seed != cell.seed:
        row["trained_seed"] = cell.train_seed
    for key in comp.recorded:
        if isinstance(metrics.get(key), (int, float)):
            row[key] = float(metrics[key]) * SCALES.get(key, 1)
    if stale:
        row["stale"] = "; ".join(stale)
    return row


def _settings(comp: Comparison, cell: Cell, runs: Path, extra: dict) -> str:
    from ..engine import load_config

    out = cell.folder(runs, comp.unit)
    return settings_digest(load_config(comp.preset, comp.overrides(cell.config, cell.budget, cell.train_seed,
                                                                   out, extra)))


def run_cells(comp: Comparison, cells: list[Cell], *, runs: Path, extra: dict, protocol: dict, jobs: int = 1,
              keep_stale: bool = False, ledger: Ledger | None = None, train: bool = True,
              progress: Callable[[str], None] = print) -> list[dict]:
    """Every cell's row, in the order of ``cells``: ``{"variant", "budget", "seed",
    ["trained_seed",] metric: value (scaled), ..., ["stale": why]}``. Each run trains with
    ``protocol["threads"]`` torch threads: in this process (``jobs`` = 1; its thread count is
    restored afterwards) or in a pool of ``jobs`` spawned processes. With a ``ledger``
    (:mod:`.ledger`), a cell it records under ``protocol`` with the same settings is taken from
    it, and every other run finished under ``protocol`` is appended to it. ``train=False``: every
    cell must come from the ledger; the cells it lacks are named in the error, none is trained."""
    import torch

    settings = {cell: _settings(comp, cell, runs, extra) for cell in cells} if ledger is not None else {}

    def report(cell: Cell, row: dict, note: str = "") -> None:
        shown = row.get(comp.metric, "n/a")
        progress(f"{cell.variant} {comp.unit} {cell.budget} seed {cell.train_seed}: {comp.metric} {shown}"
                 + (f" (stale, kept: {row['stale']})" if "stale" in row else "") + note)

    def done(cell: Cell, metrics: dict, stale: list[str]) -> None:
        rows[cell] = _row(comp, cell, metrics, stale)
        if ledger is not None and not stale:
            ran = read_protocol(cell.folder(runs, comp.unit))  # the commit it was trained at
            ledger.add(cell.config, comp.unit, cell.budget, cell.train_seed, settings=settings[cell],
                       protocol=ran if ran and not differences(ran, protocol) else protocol, metrics=metrics)
        report(cell, rows[cell])

    rows: dict[Cell, dict] = {}
    for cell in cells:
        recorded = ledger.find(cell.config, comp.unit, cell.budget, cell.train_seed, settings=settings[cell],
                               protocol=protocol) if ledger is not None else None
        if recorded is not None:
            rows[cell] = _row(comp, cell, recorded, [])
            report(cell, rows[cell], f" (from the ledger {ledger.path})")
    todo = [c for c in cells if c not in rows]
    if todo and not train:
        where = f"the ledger {ledger.path}" if ledger is not None else "a ledger (none given)"
        shown = ", ".join(f"{c.variant} {c.budget} seed {c.train_seed}" for c in todo[:6])
        raise ValueError(f"{len(todo)} of {len(cells)} runs are not in {where} with their current settings "
                         f"under its protocol ({shown}{', ...' if len(todo) > 6 else ''}); nothing is "
                         "trained from a ledger")
    if jobs == 1 or not todo:
        before = torch.get_num_threads()
        _set_threads(protocol["threads"])
        try:
            for cell in todo:
                done(cell, *train_cell(comp, cell, runs, extra, protocol, keep_stale))
        finally:
            _set_threads(before)
        return [rows[c] for c in cells]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    pool = ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_set_threads, initargs=(protocol["threads"],))
    try:
        futures = {pool.submit(train_cell, comp, cell, runs, extra, protocol, keep_stale): cell
                   for cell in todo}
        for future in as_completed(futures):
            done(futures[future], *future.result())
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)  # the runs under way finish; the rest never start
        raise
    pool.shutdown()
    return [rows[c] for c in cells]
