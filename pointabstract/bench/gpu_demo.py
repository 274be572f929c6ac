"""The demo half of ``pointabstract bench gpu``: ``make demo``'s three stages on one device, then
``predict`` on a few files, each command timed.

The commands are the Makefile's (``data synth``, ``train`` / ``eval`` of the demo presets, the
capsule comparison figure), run through :func:`pointabstract.cli.main` in this process (one
torch import and CUDA start for all of them) with ``device=...`` / ``--device`` added, the data
and runs in a scratch folder instead of ``datasets/`` and ``runs/``, and optionally fewer epochs.
"""

from __future__ import annotations

import contextlib
import io
import sys
import time
from pathlib import Path

__all__ = ["PRESETS", "demo_rows", "write_inputs"]

# the Makefile's order
PRESETS = ("demo", "capsules_demo_dr", "capsules_demo_ca", "parts_demo")
_TINY = {"data.num_points": 64, "data.batch_size": 4, "data.eval_batch_size": 8, "optim.max_steps": 2,
         "data.workers": 0}  # the CPU dry run: every command, a few seconds each
_TINY_SYNTH = ["--train-per-class", "3", "--test-per-class", "1", "--num-points", "1024"]  # eval reads 1024


class _Tee(io.TextIOBase):
    """stderr as it was, remembering what was written (for the command's ``error:`` line)."""

    def __init__(self, stream):
        self.stream, self.text = stream, []

    def write(self, text: str) -> int:
        self.text.append(text)
        return self.stream.write(text)

    def flush(self) -> None:
        self.stream.flush()


def _cli(argv: list[str]) -> tuple[float, str]:
    """Run ``pointabstract <argv>``; (seconds, "" or the failure in one line)."""
    from .. import cli
    from .gpu_run import last_line

    start = time.perf_counter()
    tee = _Tee(sys.stderr)
    try:
        with contextlib.redirect_stderr(tee):
            code = cli.main([str(a) for a in argv])
        said = "".join(tee.text)
        errors = [line for line in said.splitlines() if line.startswith("error:")]
        error = "" if code == 0 else f"exit code {code}: {last_line(errors[-1] if errors else said)}"
    except Exception as err:  # a bug in one command: the next ones still run
        error = f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
    return time.perf_counter() - start, error


def _importable(module: str) -> bool:
    """Whether ``module`` imports here (missing, or a broken binary such as open3d without libGL)."""
    import importlib

    try:
        importlib.import_module(module)
    except Exception:
        return False
    return True


def _run_dir(preset: str, work: Path) -> Path:
    """The preset's ``log.out_dir`` (runs/demo/...) moved under ``work``."""
    from ..engine import load_config

    out = Path(load_config(preset).log.out_dir)
    return work / (out.relative_to("runs") if out.parts[:1] == ("runs",) else out.name)


def _train_overrides(preset: str, data: Path, work: Path, device: str, epochs: int | None,
                     tiny: bool) -> list[str]:
    extra = {"data.root": data, "log.out_dir": _run_dir(preset, work), "device": device}
    if epochs is not None:
        extra["optim.epochs"] = epochs
    if tiny:
        extra.update(_TINY)
    return [f"{k}={v}" for k, v in extra.items()]


def _result(what: str, run: Path) -> str:
    """What a finished ``train`` (median samples/s over its epochs) or ``eval`` (the task's summary
    line of ``eval_last/metrics.json``) of ``run`` reached; "" when it wrote nothing."""
    import json
    import statistics

    from ..engine import task_class

    if what == "eval" and (run / "eval_last" / "metrics.json").is_file():
        m = json.loads((run / "eval_last" / "metrics.json").read_text())
        return task_class(m["task"]).summary(m)
    log = run / "metrics.jsonl"
    if what == "train" and log.is_file():
        rows = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
        rates = [r["samples_per_s"] for r in rows if "samples_per_s" in r]
        if rates:
            return f"{statistics.median(rates):.0f} training samples/s (median over {len(rates)} epochs)"
    return ""


def write_inputs(data: Path, out: Path, count: int) -> dict[str, list[Path]]:
    """``count`` test shapes of each synthetic layout as ``.npy`` clouds, the files ``predict``
    reads: ``{"modelnet": [...], "part": [...]}``; the part files share the first shape's
    category, ``out/part_category.txt`` names it."""
    import h5py
    import numpy as np

    from ..data.categories import SHAPENET_PART
    from ..data.synthetic.generator import MODELNET_DIR, SHAPENET_PART_DIR

    files: dict[str, list[Path]] = {"modelnet": [], "part": []}
    out.mkdir(parents=True, exist_ok=True)
    with h5py.File(data / MODELNET_DIR / "ply_data_test0.h5", "r") as f:
        for i, cloud in enumerate(f["data"][:count]):
            files["modelnet"].append(out / f"modelnet_{i}.npy")
            np.save(files["modelnet"][-1], cloud.astype(np.float32))
    with h5py.File(data / SHAPENET_PART_DIR / "ply_data_test0.h5", "r") as f:
        labels = f["label"][:].reshape(-1)
        same = np.flatnonzero(labels == labels[0])[:count]
        for i in same:
            files["part"].append(out / f"part_{i}.npy")
            np.save(files["part"][-1], f["data"][i].astype(np.float32))
    (out / "part_category.txt").write_text(SHAPENET_PART[int(labels[0])].name)
    return files


def _stages(work: Path, data: Path, device: str, epochs: int | None, tiny: bool) -> list[tuple[str, list]]:
    """(label, argv) of every command after ``data synth``, in the Makefile's order."""
    run = {p: _run_dir(p, work) for p in PRESETS}
    dev = ["--device", device]

    def train(preset: str) -> tuple[str, list]:
        return f"train {preset}", ["train", preset, "--overwrite",
                                   *_train_overrides(preset, data, work, device, epochs, tiny)]

    def evaluate(preset: str, *extra: str) -> tuple[str, list]:
        return " ".join(["eval", preset, *extra]), ["eval", run[preset] / "last.pt", *extra, *dev]

    return [train("demo"), evaluate("demo", "--neighbourhoods"),
            train("capsules_demo_dr"), train("capsules_demo_ca"),
            evaluate("capsules_demo_dr"), evaluate("capsules_demo_ca"),
            ("view capsules --compare --figure",
             ["view", run["capsules_demo_dr"] / "last.pt", "--compare", run["capsules_demo_ca"] / "last.pt",
              "--figure", work / "capsules.png", *dev]),
            train("parts_demo"), evaluate("parts_demo")]


def demo_rows(work: Path, *, device: str, epochs: int | None = None, tiny: bool = False,
              data: Path | None = None, predict_files: int = 8, deadline: float | None = None,
              progress=print, record=None) -> list[dict]:
    """Run the demo on ``device`` in ``work``: one row per command ``{"what", "s", "error",
    "result"}``. ``data``: an existing synthetic set (default: generated into ``work/synthetic``,
    timed; skipped with a row when trimesh, which generating needs, is missing). Commands left
    when ``deadline`` (time.monotonic) has passed get ``"not run: section budget spent"``.
    ``record(rows)`` is called after every command with the rows so far."""
    rows: list[dict] = []

    def add(row: dict) -> None:
        what, preset = (row["what"].split() + [""])[:2]
        if what in ("train", "eval") and preset in PRESETS and not row.get("error") and "skipped" not in row:
            row["result"] = _result(what, _run_dir(preset, work))
        rows.append(row)
        progress(_row_text(row))
        if record is not None:
            record(rows)

    if data is None:
        data = work / "synthetic"
        if not _importable("trimesh"):
            return [{"what": "data synth", "skipped": "trimesh not importable (data synth needs it; "
                                                      "give --data DIR, a generated set)"}]
        add(_row("data synth", *_cli(["data", "synth", "--out", data, *(_TINY_SYNTH if tiny else [])])))
        if rows[-1]["error"]:
            return rows
    for label, argv in _stages(work, data, device, epochs, tiny):
        if argv[0] == "view" and not _importable("open3d"):
            add({"what": label, "skipped": "open3d not importable (view needs the viz extra)"})
        else:
            add(_timed_row(label, argv, deadline))
    for row in _predict_rows(work, data, device, predict_files, deadline):
        add(row)
    return rows


def _predict_rows(work, data, device, count, deadline):
    """``predict`` with each trained run on ``count`` test shapes written as .npy (rows, lazily)."""
    files = write_inputs(data, work / "inputs", count)
    category = (work / "inputs" / "part_category.txt").read_text()
    jobs = [("predict demo (classify)", "demo", files["modelnet"], []),
            ("predict capsules_demo_ca (reconstruct)", "capsules_demo_ca", files["part"][:2], []),
            ("predict parts_demo (segment)", "parts_demo", files["part"], ["--category", category])]
    for label, preset, inputs, extra in jobs:
        argv = ["predict", _run_dir(preset, work) / "last.pt", *inputs, "--device", device,
                "--out", work / "predictions" / preset, *extra]
        yield {**_timed_row(label, argv, deadline), "files": len(inputs)}


def _timed_row(label: str, argv: list, deadline: float | None) -> dict:
    if deadline is not None and time.monotonic() > deadline:
        return {"what": label, "skipped": "not run: section budget spent"}
    return _row(label, *_cli(argv))


def _row(label: str, seconds: float, error: str) -> dict:
    return {"what": label, "s": seconds, "error": error}


def _row_text(row: dict) -> str:
    if "skipped" in row:
        return f"{row['what']}: skipped ({row['skipped']})"
    return f"{row['what']}: {row['s']:.1f} s" + (f"  FAILED: {row['error']}" if row["error"] else "")
