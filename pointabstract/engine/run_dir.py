"""The run folder (``log.out_dir``): checked before training starts (one run per folder, one
process writing it at a time), cleared of temporary files that a killed process left behind,
the record of config changes made on ``--resume``, and :class:`RunLog`, rank 0's writer of
everything in it."""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import socket
from datetime import datetime, timezone
from pathlib import Path

import yaml

from .._log import STDOUT
from .checkpoint import atomic_save, load_checkpoint
from .config import RunConfig, to_flat
from .plots import plot_curves
from .report import write_report
from .run_manifest import (
    RUN_MANIFEST,
    foreign_run_files,
    read_run_manifest,
    record_run_files,
    remove_run_files,
)

__all__ = ["FREE_TO_CHANGE", "RUN_FILES", "RunFolderBusyError", "RunLock", "RunLog", "check_writable_file",
           "claim_run_folder", "config_changes", "prepare_out_dir", "record_config_changes",
           "remove_stale_temporaries"]

_log = logging.getLogger(__name__)  # notes: pointabstract/_log.py

# keys that may differ on --resume without changing what is trained: how long, where it runs,
# how it is logged, how fast evaluation batches are
FREE_TO_CHANGE = frozenset({"optim.epochs", "optim.max_steps", "device", "data.workers",
                            "data.eval_batch_size",
                            "log.out_dir", "log.progress", "log.tensorboard", "log.eval_every"})

# what `train` writes into a run folder (the last three are the tasks' report figures): a new run
# replaces exactly these, nothing else, and those no run of its own wrote only with `--overwrite`
RUN_FILES = ("last.pt", "best.pt", "metrics.jsonl", "metrics.json", "report.md", "curves.png", "config.yaml",
             "config_changes.yaml", "split.json", "tb", "confusion.png", "part_iou.png",
             "reconstructions.png")

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


def _describe_checkpoint(path: Path) -> str:
    """``last.pt (epoch 3 of 5, model 'demo')``, or why it cannot be read (never raises)."""
    try:
        ckpt = load_checkpoint(path)
        total = ckpt["config"].get("optim.epochs", "?")
        return f"{path.name} (epoch {ckpt['epoch']} of {total}, model '{ckpt.get('model_name', '?')}')"
    except (OSError, ValueError) as err:
        return f"{path.name} (unreadable: {str(err).split(';')[0][:120]})"


def claim_run_folder(out: str | Path, *, overwrite: bool = False) -> list[str]:
    """Check that a new run may be trained into ``out``: nothing there is replaced by mistake.

    A folder holding a checkpoint holds a run: refused without ``overwrite``; with it, the files of
    :data:`RUN_FILES` are removed (and nothing else: an ``eval_*`` report folder stays). In a
    folder without a checkpoint, a file of a :data:`RUN_FILES` name that no run of its own wrote
    (not in its manifest, :mod:`.run_manifest`: e.g. the preset being trained saved as
    ``config.yaml``) is refused without ``overwrite`` and removed, named, with it; what an earlier
    run of its own left there is removed. Returns what was removed.

    Raises:
        FileExistsError: ``out`` holds ``last.pt`` or ``best.pt``, or a file of a run's name that
            no run wrote, and ``overwrite`` is False.
    """
    out = Path(out)
    checkpoints = [out / name for name in ("last.pt", "best.pt") if (out / name).is_file()]
    foreign = foreign_run_files(out, RUN_FILES)
    if not checkpoints:
        return _claim_without_run(out, foreign, overwrite=overwrite)
    held = _describe_checkpoint(checkpoints[0])
    if not overwrite:
        raise FileExistsError(f"log.out_dir {out} already holds a run ({held}); continue it with --resume, "
                              "train into another log.out_dir, or pass --overwrite to replace it")
    manifest = read_run_manifest(out) is not None
    removed = remove_run_files(out, RUN_FILES)
    (out / RUN_MANIFEST).unlink(missing_ok=True)
    kept = sorted(p.name + ("/" if p.is_dir() else "") for p in out.iterdir() if not p.name.startswith("."))
    shown = [name + (" (not written by train)" if manifest and name in foreign else "") for name in removed]
    _log.info(f"--overwrite: replaced the run in {out}: {held}; removed {', '.join(shown)}"
              + (f"; kept {', '.join(kept)}" if kept else ""), extra=STDOUT)
    return removed


def _claim_without_run(out: Path, foreign: list[str], *, overwrite: bool) -> list[str]:
    """:func:`claim_run_folder` for a folder without a checkpoint."""
    if foreign and not overwrite:
        preset = (" (if config.yaml is the preset you are training, keep it outside log.out_dir: train "
                  "writes its resolved config there)" if "config.yaml" in foreign else "")
        raise FileExistsError(f"log.out_dir {out} holds {', '.join(foreign)}, which train writes but no run "
                              f"of its own wrote there{preset}: refused, nothing is touched; train into "
                              "another log.out_dir, move them away, or pass --overwrite to replace them")
    if foreign:
        _log.info(f"--overwrite: replaced in {out}: {', '.join(foreign)} (not written by train)",
                  extra=STDOUT)
    own = read_run_manifest(out) or set()
    removed = remove_run_files(out, [name for name in RUN_FILES if name in own or name in foreign])
    (out / RUN_MANIFEST).unlink(missing_ok=True)
    return removed


class RunFolderBusyError(OSError):
    """Another live process is training into the same run folder."""


class RunLock:
    """``out/.lock`` held by the one process that writes the run folder (rank 0).

    The lock file holds ``host pid``; a lock whose process is gone (killed, crashed) is stale and
    taken over without manual clean-up. Use as a context manager or call :meth:`acquire` /
    :meth:`release`.
    """

    def __init__(self, out: str | Path):
        self.path = Path(out) / ".lock"
        self.held = False

    def _owner(self) -> tuple[str, int] | None:
        try:
            host, pid = self.path.read_text().split()
            return host, int(pid)
        except (OSError, ValueError):  # vanished, or half-written by a process killed mid-write
            return None

    def acquire(self) -> RunLock:
        me = f"{socket.gethostname()} {os.getpid()}"
        for _ in range(3):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                owner = self._owner()
                if owner is not None and (owner[0] != socket.gethostname() or
                                          (owner[1] != os.getpid() and _alive(owner[1]))):
                    raise RunFolderBusyError(
                        f"log.out_dir {self.path.parent} is being written by another training (process "
                        f"{owner[1]} on {owner[0]}); wait for it to end or use another log.out_dir "
                        f"(if that process is gone, delete {self.path})") from None
                self.path.unlink(missing_ok=True)  # stale: its process is gone
                continue
            with os.fdopen(fd, "w") as f:
                f.write(me)
            self.held = True
            return self
        raise RunFolderBusyError(f"could not take the lock {self.path}: other processes keep taking it")

    def release(self) -> None:
        if self.held and self._owner() == (socket.gethostname(), os.getpid()):
            self.path.unlink(missing_ok=True)
        self.held = False

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


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

    def __init__(self, out: Path, cfg: RunConfig, resume: bool, start: int, changes: dict, *,
                 epochs: int | None = None):
        self.out, self.cfg = out, cfg
        self.epochs = cfg.optim.epochs if epochs is None else epochs  # this run's length
        record_run_files(out, ["config.yaml", "metrics.jsonl", *(["tb"] if cfg.log.tensorboard else []),
                               *(["config_changes.yaml"] if changes else [])])  # before writing them
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
        record_run_files(self.out, ["last.pt", "best.pt"])
        atomic_save(state, self.out / "last.pt")
        if is_best:
            atomic_save(state, self.out / "best.pt")
        if self.cfg.log.progress:  # one line per epoch: readable in a terminal and in a log file
            shown = " ".join(f"{k} {v:.4g}" for k, v in row.items()
                             if k.startswith(("train_", "test_")) and isinstance(v, float))
            _log.info(f"epoch {row['epoch']}/{self.epochs} {shown} ({row['epoch_s']:.1f} s)", extra=STDOUT)

    def finish(self, metrics: dict, task, *, epoch: int) -> None:
        """curves.png, then report.md and (last) metrics.json of the last evaluation."""
        if self.tb is not None:
            self.tb.close()
        # the report and the task's figures: every RUN_FILES name is this run's now (a new run
        # removed or was refused any other; a resumed one holds a run)
        record_run_files(self.out, RUN_FILES)
        plot_curves(self.jsonl, self.out / "curves.png", panels=task.curves())
        if metrics:
            record = {**metrics, "model": self.cfg.model, "task": self.cfg.task, "epoch": epoch,
                      "data_root": self.cfg.data.root}
            write_report(record, self.out, task=task, title=f"Training run of {self.cfg.model}")
