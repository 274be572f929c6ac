"""The run folder (``log.out_dir``): checked before training starts, cleared of temporary files
that a killed process left behind, the record of config changes made on ``--resume``, and
:class:`RunLog`, rank 0's writer of everything in it."""

from __future__ import annotations

import json
import os
import re
import shutil
from datetime import datetime, timezone
from pathlib import Path

import yaml

from .checkpoint import atomic_save, load_checkpoint
from .config import RunConfig, to_flat
from .plots import plot_curves
from .report import write_report

__all__ = ["FREE_TO_CHANGE", "RunLog", "check_writable_file", "config_changes", "prepare_out_dir",
           "record_config_changes", "remove_stale_temporaries"]

# keys that may differ on --resume without changing what is trained: how long, where it runs,
# how it is logged, how fast evaluation batches are
FREE_TO_CHANGE = frozenset({"optim.epochs", "device", "data.workers", "data.eval_batch_size",
                            "log.out_dir", "log.progress", "log.tensorboard", "log.eval_every"})

_TEMPORARY = re.compile(r"^\..+\.tmp-(\d+)$")  # atomic_save's ".<name>.tmp-<pid>"


def prepare_out_dir(path: str | Path) -> Path:
    """Create ``path`` (and its parents) and check that files can be written there.

    Raises:
        NotADirectoryError / FileExistsError: ``path`` or one of its parents is a file.
        PermissionError: the folder cannot be created or written (read-only, not ours).
    """
    out = Path(path)
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / f".write-test-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except FileExistsError:
        raise NotADirectoryError(f"log.out_dir {out} is a file, not a folder") from None
    except OSError as err:
        what = err.strerror or type(err).__name__
        where = f" ({err.filename})" if err.filename and str(err.filename) != str(out) else ""
        raise type(err)(f"log.out_dir {out} cannot be written: {what}{where}") from None
    return out


def check_writable_file(path: str | Path, *, what: str = "--out") -> Path:
    """Check, before any long work, that ``path`` can be written later: its folder is created
    (as :func:`prepare_out_dir`) and ``path`` itself is not a folder. Nothing is written to it."""
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"{what} {path} is a folder; give a file name")
    try:
        prepare_out_dir(path.parent)
    except OSError as err:
        raise type(err)(f"{what} {path}: {err}".replace("log.out_dir ", "folder ")) from None
    if path.exists() and not os.access(path, os.W_OK):
        raise PermissionError(f"{what} {path} cannot be written (read-only)")
    return path


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # a live process of another user
        return True
    return True


def remove_stale_temporaries(out: str | Path) -> list[Path]:
    """Delete the ``.<name>.tmp-<pid>`` files of checkpoint writes whose process is gone
    (a run killed mid-save); the files of live processes are kept. Returns what was removed."""
    removed = []
    for path in Path(out).glob(".*.tmp-*"):
        match = _TEMPORARY.match(path.name)
        pid = int(match.group(1)) if match else -1
        if match and path.is_file() and (pid == os.getpid() or not _alive(pid)):
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed


def config_changes(saved: dict, current: dict) -> dict[str, tuple]:
    """``{key: (saved value, current value)}`` for every key of both flat configs that differs."""
    return {key: (saved[key], current[key]) for key in sorted(set(saved) & set(current))
            if saved[key] != current[key]}


def record_config_changes(out: str | Path, changes: dict[str, tuple], *, epoch: int) -> Path:
    """Append the changes made when resuming at ``epoch`` to ``out/config_changes.yaml`` (a list
    of ``{epoch, time, changes: {key: {from, to}}}``), so config.yaml's history is not lost."""
    path = Path(out) / "config_changes.yaml"
    history = (yaml.safe_load(path.read_text()) or []) if path.exists() else []
    history.append({"epoch": epoch, "time": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                    "changes": {k: {"from": old, "to": new} for k, (old, new) in changes.items()}})
    path.write_text(yaml.safe_dump(history, sort_keys=False))
    return path


class RunLog:
    """Rank 0's outputs: config.yaml, metrics.jsonl, TensorBoard, checkpoints, plots."""

    def __init__(self, out: Path, cfg: RunConfig, resume: bool, start: int, changes: dict):
        self.out, self.cfg = out, cfg
        if changes:
            record_config_changes(out, changes, epoch=start)
        (out / "config.yaml").write_text(yaml.safe_dump(to_flat(cfg), sort_keys=True))
        self.jsonl = out / "metrics.jsonl"
        kept = []
        if resume and self.jsonl.exists():  # drop epochs logged after the checkpoint
            kept = [line for line in self.jsonl.read_text().splitlines()
                    if line.strip() and json.loads(line)["epoch"] <= start]
        self.jsonl.write_text("".join(line + "\n" for line in kept))
        self.tb = None
        if cfg.log.tensorboard:
            from torch.utils.tensorboard import SummaryWriter

            self.tb = SummaryWriter(str(out / "tb"), purge_step=start + 1 if resume else None)

    def repair_best(self, ckpt: dict) -> None:
        """A kill between the last.pt and best.pt writes of an epoch leaves best.pt one best
        epoch behind: copy last.pt over it when last.pt says its own epoch was the best."""
        best = self.out / "best.pt"
        if ckpt["best_epoch"] == ckpt["epoch"] and (not best.is_file()
                                                    or load_checkpoint(best)["epoch"] != ckpt["epoch"]):
            tmp = self.out / f".best.pt.tmp-{os.getpid()}"
            shutil.copyfile(self.out / "last.pt", tmp)
            os.replace(tmp, best)

    def epoch(self, row: dict, state: dict, *, is_best: bool) -> None:
        with self.jsonl.open("a") as f:
            f.write(json.dumps(row) + "\n")
        if self.tb is not None:
            for key, value in row.items():
                if key != "epoch" and isinstance(value, (int, float)):
                    self.tb.add_scalar(key, value, row["epoch"])
            self.tb.flush()
        atomic_save(state, self.out / "last.pt")
        if is_best:
            atomic_save(state, self.out / "best.pt")
        if self.cfg.log.progress:  # one line per epoch: readable in a terminal and in a log file
            shown = " ".join(f"{k} {v:.4g}" for k, v in row.items()
                             if k.startswith(("train_", "test_")) and isinstance(v, float))
            print(f"epoch {row['epoch']}/{self.cfg.optim.epochs} {shown} ({row['epoch_s']:.1f} s)",
                  flush=True)

    def finish(self, metrics: dict, task, *, epoch: int) -> None:
        """curves.png, then report.md and (last) metrics.json of the last evaluation."""
        if self.tb is not None:
            self.tb.close()
        plot_curves(self.jsonl, self.out / "curves.png", panels=task.curves())
        if metrics:
            record = {**metrics, "model": self.cfg.model, "task": self.cfg.task, "epoch": epoch,
                      "data_root": self.cfg.data.root}
            write_report(record, self.out, task=task, title=f"Training run of {self.cfg.model}")
