"""A ledger of finished curve runs (``bench curves --ledger FILE``): one JSON line per run.

A learning curve at 8 seeds takes hours to tens of hours, more than one machine or one working
session holds, and its run folders (checkpoints, logs) are too large to keep or to move. The
ledger keeps what a verdict needs of each finished run, one JSON object per line::

    {"comparison": "sequoia_seg", "variant": "softmax", "unit": "epochs", "budget": 10,
     "train_seed": 1003, "settings": "<sha256 of the run's resolved config, 16 hex>",
     "protocol": {"commit": ..., "source": ..., "threads": 1, "torch": ..., "device": "cpu",
                  "data": {"datasets/synthetic-hard": "<sha256 of its files, 16 hex>"}},
     "metrics": {"instance_miou": 0.7412, "epoch": 10, ...}}

``settings`` hashes the run's whole resolved config except what a run may change without
changing its result (:data:`~pointabstract.engine.run_dir.FREE_TO_CHANGE`: the output folder,
workers, progress output), so a variant whose overrides or preset changed is never matched.
A cell found in the ledger with the same settings and a protocol that matches the current one
on :data:`.protocol.MATCHED` (training code, threads, torch, device) and in the data fingerprints
both record (:func:`.protocol.differences`) is not trained again: its
metrics are the ones that run wrote, and training it again gives the identical number (the
determinism test of :mod:`.curve_runs`). Every other run that ``bench curves`` trains or reuses
under the current protocol is appended, so the file can be committed as the per-run record
behind a published verdict and a curve can be continued on another machine with the same
command. Lines are only ever appended; a damaged line is an error, never skipped.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from .protocol import MATCHED, describe, differences

__all__ = ["Ledger", "settings_digest"]


def settings_digest(cfg) -> str:
    """sha256 (first 16 hex digits) of ``cfg``'s resolved flat config, leaving out the keys a run
    may change freely (output folder, workers, progress, evaluation batch size; and the budget,
    which the ledger records itself)."""
    from ..engine.config import to_flat
    from ..engine.run_dir import FREE_TO_CHANGE

    flat = {k: v for k, v in to_flat(cfg).items() if k not in FREE_TO_CHANGE}
    text = json.dumps(flat, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _scalars(metrics: dict) -> dict:
    return {k: v for k, v in metrics.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}


class Ledger:
    """The finished runs of ``comparison`` recorded in ``path`` (a JSON Lines file; missing: empty;
    lines of other comparisons are kept and never matched)."""

    _KEYS = ("comparison", "variant", "unit", "budget", "train_seed", "settings", "protocol", "metrics")

    def __init__(self, path: str | Path, comparison: str):
        self.path, self.comparison = Path(path), comparison
        self.entries: list[dict] = []
        if self.path.is_file():
            for number, line in enumerate(self.path.read_text().splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    entry = json.loads(line)
                except ValueError as err:
                    raise ValueError(f"{self.path} line {number} is not JSON ({err}); a ledger line is "
                                     "never skipped: mend or remove it") from None
                missing = [k for k in self._KEYS if not isinstance(entry, dict) or k not in entry]
                if missing:
                    raise ValueError(f"{self.path} line {number} lacks {missing}; mend or remove it")
                self.entries.append(entry)
        elif self.path.exists():
            raise ValueError(f"--ledger {self.path} is not a file")

    def find(self, variant: str, unit: str, budget: int, train_seed: int, *, settings: str,
             protocol: dict) -> dict | None:
        """The metrics of a recorded run of ``variant`` (the variant whose overrides it trained) at
        ``budget`` and ``train_seed`` with these settings under ``protocol`` (equal on
        :data:`.protocol.MATCHED`), or None."""
        key = (self.comparison, variant, unit, budget, train_seed, settings)
        for entry in self.entries:
            if (entry["comparison"], entry["variant"], entry["unit"], entry["budget"], entry["train_seed"],
                    entry["settings"]) != key:
                continue
            if not differences(entry["protocol"], protocol):
                return dict(entry["metrics"])
        return None

    def protocol(self) -> dict:
        """The one protocol this comparison's runs in the file were trained under (the first entry's,
        commit included), for records drawn from the ledger alone (``bench curves --from-ledger``).
        Refuses a file without runs of the comparison, or whose runs differ on :data:`.protocol.MATCHED`
        or record two fingerprints of one dataset folder: one table never mixes protocols. The
        returned ``data`` holds every folder's fingerprint any of them recorded."""
        mine = [e for e in self.entries if e["comparison"] == self.comparison]
        if not mine:
            raise ValueError(f"{self.path} holds no run of {self.comparison}")
        kinds = {tuple(e["protocol"].get(k) for k in MATCHED): e["protocol"] for e in mine}
        if len(kinds) > 1:
            shown = "; ".join(describe(p) for p in kinds.values())
            raise ValueError(f"{self.path}: the runs of {self.comparison} were trained under {len(kinds)} "
                             f"protocols ({shown}); records drawn from it would mix them")
        data: dict[str, set] = {}
        for e in mine:
            for root, fp in (e["protocol"].get("data") or {}).items():
                data.setdefault(root, set()).add(fp)
        mixed = {root: sorted(fps) for root, fps in data.items() if len(fps) > 1}
        if mixed:
            shown = "; ".join(f"{root}: {' and '.join(fps)}" for root, fps in mixed.items())
            raise ValueError(f"{self.path}: the runs of {self.comparison} read different data in one folder "
                             f"({shown}); records drawn from it would mix them")
        protocol = dict(mine[0]["protocol"])
        if data:
            protocol["data"] = {root: next(iter(fps)) for root, fps in sorted(data.items())}
        return protocol

    def add(self, variant: str, unit: str, budget: int, train_seed: int, *, settings: str, protocol: dict,
            metrics: dict) -> bool:
        """Append this run unless the ledger holds it already (same cell, settings and protocol);
        returns whether a line was written. Written by one process (``bench curves``' main one)."""
        if self.find(variant, unit, budget, train_seed, settings=settings, protocol=protocol) is not None:
            return False
        entry = {"comparison": self.comparison, "variant": variant, "unit": unit, "budget": int(budget),
                 "train_seed": int(train_seed), "settings": settings, "protocol": dict(protocol),
                 "metrics": _scalars(metrics)}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a") as f:
            f.write(json.dumps(entry, sort_keys=True) + "\n")
            f.flush()
            os.fsync(f.fileno())
        self.entries.append(entry)
        return True
