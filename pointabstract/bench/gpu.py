"""GPU check: CUDA tests, ops vs torch one-liners, training steps and the demo on one device.

``pointabstract bench gpu --out DIR`` (also ``python tools/gpu_check.py``) runs, each section in
its own process under a time cap (the ``--budget-s`` left, shared by weight among the sections
still to run, so time one section leaves goes to the next):

1. ``kernels``: the numba CPU kernels compiled, one process per group side by side (the CPU
   references of the tests and FPS through the host need them);
2. ``tests``: the ``cuda``-marked tests (every op and registered model against the CPU, bf16
   autocast), ``pytest.log``;
3. ``ops``: ``bench ops`` on the device against the torch one-liners and importable peers;
4. ``train``: one training step's speed, peak memory and host syncs of the paper-sized models,
   fp32 and bf16, and Table 4's largest capsule batch under ``--cap-gib``;
5. ``demo``: ``make demo``'s commands and ``predict`` on the device (``demo.log``).

It writes ``summary.md`` and ``summary.json`` (plus ``pytest.log``, ``bench.log``, ``demo.log``)
under ``--out``, prints the summary table last and exits 1 when a section FAILED (all sections
run first). A section that cannot run here (trimesh missing for ``data synth``, no tests/
folder) is skipped with a line. Without CUDA (``--device cuda``, the default) it says so in one
line and exits 0 once the CUDA tests are collected. ``--device cpu`` is the dry run: every
section's code at toy sizes on the CPU (the CUDA tests run on the CPU), to debug the check
before GPU time is spent.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from . import gpu_report as report
from .gpu_run import run_command, run_kernels

__all__ = ["LOGS", "SECTIONS", "WEIGHTS", "add_arguments", "main"]

SECTIONS = ("kernels", "tests", "ops", "train", "demo")
# shares of the budget (on an H100 the tests need about 70 s of a 345 s budget)
WEIGHTS = {"kernels": 1.0, "tests": 2.5, "ops": 1.0, "train": 2.5, "demo": 2.5}
LOGS = {"kernels": "bench.log", "tests": "pytest.log", "ops": "bench.log", "train": "bench.log",
        "demo": "demo.log"}
_OURS = {"summary.md", "summary.json", *LOGS.values()}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``pointabstract bench gpu`` arguments."""
    parser.add_argument("--out", type=Path, default=Path("runs/gpu_check"),
                        help="folder of summary.md / .json and the logs (default runs/gpu_check)")
    parser.add_argument("--device", default="cuda",
                        help="cuda[:i] (default), or cpu: the dry run at toy sizes")
    parser.add_argument("--budget-s", type=float, default=360.0,
                        help="wall-clock seconds for all sections together (default 360)")
    parser.add_argument("--quick", action="store_true",
                        help="fewer training configs and ops repeats, for a second try in less time")
    parser.add_argument("--sections", nargs="+", choices=SECTIONS, default=list(SECTIONS),
                        help="the sections to run (default: all, in this order)")
    parser.add_argument("--demo-epochs", type=int,
                        help="epochs of every demo training run (default: each preset's)")
    parser.add_argument("--data", type=Path,
                        help="an existing synthetic set for the demo (default: generated and timed)")
    parser.add_argument("--cap-gib", type=float, default=12.0,
                        help="GPU memory cap of the Table 4 max-batch search (default 12, a Titan Xp)")
    parser.add_argument("--work", type=Path,
                        help="scratch folder for data and runs (default: a new temporary folder, removed)")


def _check(args) -> None:
    import re

    from .records import check_at_least

    if re.fullmatch(r"cpu|cuda(:\d+)?", args.device) is None:
        raise ValueError(f"--device must be cpu, cuda or cuda:N, got {args.device!r}")
    if not args.budget_s > 0:
        raise ValueError(f"--budget-s must be a positive number of seconds, got {args.budget_s}")
    if args.demo_epochs is not None:
        check_at_least("--demo-epochs", args.demo_epochs, 1)
    if not args.cap_gib > 0:
        raise ValueError(f"--cap-gib must be a positive number of GiB, got {args.cap_gib}")
    if not args.sections:
        raise ValueError(f"--sections selects nothing to run; choose from {list(SECTIONS)}")
    if args.data is not None and not args.data.is_dir():
        raise FileNotFoundError(f"--data {args.data} is not a folder (a synthetic set from `pointabstract "
                                "data synth`)")
    if args.out.exists() and (not args.out.is_dir() or {p.name for p in args.out.iterdir()} - _OURS):
        raise ValueError(f"--out {args.out} holds files this check did not write; give a new or empty folder")


def _repo() -> Path:
    return Path(__file__).resolve().parents[2]


def _no_cuda(device: str) -> int:
    """The one line of a machine without CUDA, after collecting the CUDA tests; 1 if none are."""
    import torch

    from .gpu_tests import count_collected, cuda_test_files

    files = cuda_test_files(_repo() / "tests") if (_repo() / "tests").is_dir() else []
    count, last = count_collected(files, cwd=_repo()) if files else (0, "no tests/ folder beside the package")
    print(f"no CUDA device here (torch {torch.__version__} sees none): nothing measured; {count} CUDA-marked "
          f"tests collected from {len(files)} files ({last})")
    return 0 if count > 0 else 1


def main(args: argparse.Namespace) -> int:
    """Run the selected sections and print the summary; 1 when a section FAILED."""
    import torch

    _check(args)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        return _no_cuda(args.device)
    args.out.mkdir(parents=True, exist_ok=True)
    for name in set(LOGS.values()):
        (args.out / name).write_text("")
    work = args.work or Path(tempfile.mkdtemp(prefix="pointabstract-gpu-check-"))
    work.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    results = {}
    try:
        for i, name in enumerate(args.sections):
            left = args.budget_s - (time.monotonic() - started)
            cap = max(1.0, left * WEIGHTS[name] / sum(WEIGHTS[s] for s in args.sections[i:]))
            print(f"== {name} (cap {cap:.0f} s)", flush=True)
            begun = time.monotonic()
            try:
                result = _section(name, args, work, cap)
            except Exception as err:  # a bug of the check itself: the next sections still run
                result = {"status": "FAILED", "summary": f"{type(err).__name__}: {err}".splitlines()[0]}
            results[name] = {**result, "seconds": time.monotonic() - begun, "cap_s": cap}
            print(f"== {name}: {results[name]['status']} in {results[name]['seconds']:.1f} s: "
                  f"{results[name]['summary']}", flush=True)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    total = time.monotonic() - started
    text = report.markdown(results, device=_device_name(args.device), total_s=total, args=args)
    report.write(args.out, text, results, device=_device_name(args.device), total_s=total)
    print("\n" + report.details(results) + "\n\n" + report.table(results, total_s=total))
    failed = [n for n, r in results.items() if r["status"] == "FAILED"]
    print(f"\n{'FAILED: ' + ', '.join(failed) if failed else 'every section passed'}; "
          f"{args.out / 'summary.md'}")
    return 1 if failed else 0


def _device_name(device: str) -> str:
    import torch

    if device.startswith("cuda"):
        return f"{torch.cuda.get_device_name(torch.device(device))}, torch {torch.__version__}"
    from .ops import environment

    return environment("cpu")


def _section(name: str, args, work: Path, cap: float) -> dict:
    """Run one section under ``cap`` seconds; its result dict (``status``, ``summary``, ...)."""
    log = args.out / LOGS[name]
    path = os.pathsep.join(p for p in (str(_repo()), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": path}  # a relative PYTHONPATH=. too
    if name == "kernels":
        out = run_kernels(log, cap, env)
    elif name == "tests":
        out = _tests(args, work, log, cap, env)
    else:
        opts = {"device": args.device, "quick": args.quick, "tiny": args.device == "cpu",
                "deadline_s": max(1.0, cap * 0.85 - 5), "work": str(work), "demo_epochs": args.demo_epochs,
                "data": str(args.data) if args.data else None, "cap_gib": args.cap_gib}
        result = work / f"{name}.json"
        cmd = [sys.executable, "-m", "pointabstract.bench.gpu_child", name, json.dumps(opts), str(result)]
        error = run_command(cmd, log, cap, env, cwd=_repo())
        out = json.loads(result.read_text()) if result.is_file() else {"rows": [], "table": ""}
        if error:
            out = {**out, "status": "FAILED", "summary": f"{error}; {out.get('summary', 'no result')}"}
    return out


def _tests(args, work: Path, log: Path, cap: float, env: dict) -> dict:
    import importlib.util

    from .gpu_tests import DEVICE_ENV, cuda_test_files, pytest_command, read_junit

    tests = _repo() / "tests"
    if not tests.is_dir():
        return {"status": "skipped", "summary": f"skipped: no tests/ folder at {tests} (run from a checkout)"}
    for module in ("pytest", "hypothesis"):  # the dev extra; tests/conftest.py imports hypothesis
        if importlib.util.find_spec(module) is None:
            return {"status": "skipped", "summary": f"skipped: {module} not importable (the dev extra)"}
    junit = work / "junit.xml"
    cmd = pytest_command(cuda_test_files(tests), junit=junit, timeout_s=min(120.0, cap))
    error = run_command(cmd, log, cap, {**env, DEVICE_ENV: args.device}, cwd=_repo(), ok_codes=(0, 1))
    if not junit.is_file():
        return {"status": "FAILED", "summary": error or "pytest wrote no report (see pytest.log)"}
    counts = read_junit(junit)
    ran = counts["passed"] + counts["failed"] + counts["errors"]
    status = "FAILED" if error or counts["failed"] or counts["errors"] or not ran else "ok"
    summary = (f"{counts['passed']} passed, {counts['failed']} failed, {counts['errors']} errors, "
               f"{counts['skipped']} skipped on {args.device}" + (f"; {error}" if error else ""))
    return {"status": status, "summary": summary, "rows": counts["failures"], "counts": counts}
