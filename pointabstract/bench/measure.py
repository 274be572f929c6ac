"""Time and peak memory of one training step, the measurement every model benchmark shares.

CPU peak memory is the process's peak resident set (VmHWM, reset before the step) above its
resident set just before; on CUDA it is ``torch.cuda.max_memory_allocated``.
"""

from __future__ import annotations

import resource
import statistics
import time
from collections.abc import Callable

import torch

__all__ = ["measure_step", "peak_bytes", "reset_peak", "rss_bytes"]


def rss_bytes() -> int:
    """This process's resident set now."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


def reset_peak() -> None:
    """Reset the kernel's peak-RSS counter (VmHWM) of this process (Linux >= 4.0)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass  # then the peak also covers what happened before; still an upper bound


def peak_bytes() -> int:
    """This process's peak resident set since the last :func:`reset_peak`."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def measure_step(step: Callable[[object], None], arg, *, repeats: int, cuda: bool = False) -> dict:
    """Run ``step(arg)`` once for the peak memory, then ``repeats`` times for the median time.

    Call ``step`` once on a small input before, so compilation and lazy initialisation are
    not measured. Returns ``{"ms": median milliseconds, "peak_mb": peak above the baseline}``.
    """
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    reset_peak()
    base = rss_bytes()
    step(arg)
    peak = torch.cuda.max_memory_allocated() if cuda else peak_bytes() - base
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        step(arg)
        if cuda:
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return {"ms": statistics.median(times) * 1e3, "peak_mb": max(0, peak) / 2**20}


def run_isolated(function: str, kwargs: dict, *, memory_limit_gb: float | None, timeout_s: float) -> dict:
    """Call ``function`` ("module:name", returning a JSON-able dict) with ``kwargs`` in a fresh
    Python process (each measurement starts from a clean heap), under an address-space limit
    when ``memory_limit_gb`` is set. Returns its result, or ``{"error": "out of memory" |
    "timeout after T s" | the last line of stderr}``."""
    import json
    import subprocess
    import sys

    module, name = function.split(":")
    limit = "" if memory_limit_gb is None else \
        f"resource.setrlimit(resource.RLIMIT_AS, ({int(memory_limit_gb * 2**30)},) * 2)\n"
    code = ("import json, resource\n" + limit + f"from {module} import {name}\n"
            f"print(json.dumps({name}(**json.loads({json.dumps(json.dumps(kwargs))}))))\n")
    try:
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {timeout_s:.0f} s"}
    if proc.returncode == 0:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    err = proc.stderr
    oom = "MemoryError" in err or "alloc" in err.lower() or "out of memory" in err.lower()
    return {"error": "out of memory" if oom else (err.strip().splitlines() or ["killed"])[-1][:120]}
