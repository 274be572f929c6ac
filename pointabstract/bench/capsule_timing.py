"""The cost half of ``pointabstract bench capsules``: parameters, step time, peak memory and the
largest batch under a memory cap, per (capsules, routing), each measured in a fresh process.

Split from :mod:`.capsules` (which holds the command and its training half) so that each file
holds one concept; :mod:`.capsules` re-exports the public names.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys

from .capsule_models import build

__all__ = ["PAPER_TABLE4", "fits", "format_table", "max_batch", "measure_step", "ratios", "timing_rows"]

# Centroid Transformers, Table 4 (GPU; CD x 1e-3 on ShapeNetPart / ShapeNetCore13)
PAPER_TABLE4 = {(12, "dynamic"): {"cd": 2.7, "params_m": 18.4, "max_batch": 22},
                (12, "centroid"): {"cd": 1.6, "params_m": 0.6, "max_batch": 58},
                (64, "dynamic"): {"cd": 1.5, "params_m": 19.8, "max_batch": 12},
                (64, "centroid"): {"cd": 1.4, "params_m": 5.3, "max_batch": 36}}


def _step_fn(model):
    import torch

    from ..ops import chamfer_distance

    def step(pos):
        model.zero_grad(set_to_none=True)
        chamfer_distance(model(pos)["points"], pos).backward()

    torch.manual_seed(0)
    step(torch.rand(2, 64, 3) * 2 - 1)  # warm-up: loads the compiled kernels
    return step


def measure_step(caps: int, routing: str, *, batch: int, points: int, repeats: int,
                 tiny: bool = False) -> dict:
    """Time and peak memory of one training step; call in a fresh process (see module doc)."""
    import torch

    from .measure import measure_step

    model = build(caps, routing, tiny=tiny)
    step = _step_fn(model)
    pos = torch.rand(batch, points, 3) * 2 - 1
    return {"params_m": sum(p.numel() for p in model.parameters()) / 1e6,
            **measure_step(step, pos, repeats=repeats)}


def _try_batch(caps: int, routing: str, batch: int, points: int, cap_mb: float, tiny: bool = False) -> dict:
    """One training step of ``batch`` clouds under an address-space cap (fresh process)."""
    import resource

    import torch

    step = _step_fn(build(caps, routing, tiny=tiny))
    pos = torch.rand(batch, points, 3) * 2 - 1
    with open("/proc/self/status") as f:
        size = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))
    resource.setrlimit(resource.RLIMIT_AS, (size + int(cap_mb * 2**20), resource.RLIM_INFINITY))
    try:
        step(pos)
    except (MemoryError, RuntimeError) as err:
        if isinstance(err, RuntimeError) and "alloc" not in str(err).lower():
            raise
        return {"fits": False}
    return {"fits": True}


def _subprocess(function: str, kwargs: dict, timeout_s: float) -> dict:
    code = ("import json, sys\n"
            f"from pointabstract.bench.capsule_timing import {function}\n"
            f"print(json.dumps({function}(**json.loads(sys.argv[1]))))\n")
    proc = subprocess.run([sys.executable, "-c", code, json.dumps(kwargs)], capture_output=True,
                          text=True, timeout=timeout_s)
    if proc.returncode != 0:
        if "MemoryError" in proc.stderr or "alloc" in proc.stderr.lower() or proc.returncode < 0:
            return {"fits": False, "error": "out of memory"}
        raise RuntimeError(f"{function}{kwargs} failed: {proc.stderr.strip()[-400:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def fits(caps: int, routing: str, batch: int, *, points: int, cap_mb: float, tiny: bool = False,
         timeout_s: float = 1800) -> bool:
    """Whether one training step of ``batch`` clouds fits under ``cap_mb`` MiB (fresh process)."""
    return bool(_subprocess("_try_batch", {"caps": caps, "routing": routing, "batch": batch, "points": points,
                                           "cap_mb": cap_mb, "tiny": tiny}, timeout_s)["fits"])


def max_batch(caps: int, routing: str, *, points: int, cap_mb: float, limit: int = 256, tiny: bool = False,
              progress=None) -> int:
    """The largest batch (<= limit) that fits: doubling from 1, then bisection. 0 if none."""
    def probe(b):
        ok = fits(caps, routing, b, points=points, cap_mb=cap_mb, tiny=tiny)
        if progress:
            progress(f"  batch {b}: {'fits' if ok else 'out of memory'}")
        return ok

    good, bad = 0, None
    b = 1
    while b <= limit:
        if not probe(b):
            bad = b
            break
        good, b = b, b * 2
    if bad is None:
        return good
    while bad - good > 1:
        mid = (good + bad) // 2
        good, bad = (mid, bad) if probe(mid) else (good, mid)
    return good


def _mean_std(values: list[float]) -> str:
    if not values:
        return "-"
    std = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.fmean(values):.3g} ± {std:.2g}"


def format_table(rows: list[dict], *, batch: int, points: int, cap_mb: float, cap_points: int) -> str:
    """Markdown: measured columns beside the paper's Table 4 (GPU) numbers."""
    head = (f"| caps | routing | params (M) | fwd+bwd ms (B={batch}, N={points}) | peak MiB | "
            f"max batch (N={cap_points}, {cap_mb:g} MiB) | test CD x 1e-3 | paper params (M) | "
            "paper max batch | paper CD x 1e-3 |")
    lines = [head, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        paper = PAPER_TABLE4.get((r["caps"], r["routing"]), {})
        cells = [r["caps"], r["routing"], f"{r['params_m']:.2f}", f"{r['ms']:.0f}", f"{r['peak_mb']:.0f}",
                 r.get("max_batch", "-"), _mean_std(r.get("cd_e3", [])),
                 *(paper.get(k, "-") for k in ("params_m", "max_batch", "cd"))]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(lines)


def timing_rows(args) -> list[dict]:
    rows = []
    for caps in args.caps:
        for routing in args.routings:
            row = {"caps": caps, "routing": routing, **_subprocess(
                "measure_step", {"caps": caps, "routing": routing, "batch": args.batch,
                                 "points": args.points, "repeats": args.repeats, "tiny": args.tiny}, 3600)}
            print(f"{caps} capsules, {routing}: {row['params_m']:.2f} M parameters, {row['ms']:.0f} ms, "
                  f"peak {row['peak_mb']:.0f} MiB", flush=True)
            if args.max_batch_limit:
                row["max_batch"] = max_batch(caps, routing, points=args.cap_points, cap_mb=args.cap_mb,
                                             limit=args.max_batch_limit, tiny=args.tiny, progress=print)
                print(f"  largest batch under {args.cap_mb:g} MiB: {row['max_batch']}", flush=True)
            rows.append(row)
    return rows


def ratios(rows: list[dict]) -> list[str]:
    """The issue's targets: centroid vs dynamic routing at each capsule count."""
    out = []
    for caps in sorted({r["caps"] for r in rows}):
        dr = next((r for r in rows if r["caps"] == caps and r["routing"] == "dynamic"), None)
        ca = next((r for r in rows if r["caps"] == caps and r["routing"] == "centroid"), None)
        if dr is None or ca is None:
            continue
        text = (f"- {caps} capsules, centroid vs dynamic routing: parameters "
                f"x{ca['params_m'] / dr['params_m']:.2f} "
                f"(target <= 0.1 at 12), step time x{ca['ms'] / dr['ms']:.2f} (target <= 0.33)")
        if dr.get("max_batch") and ca.get("max_batch") is not None:
            text += f", max batch x{ca['max_batch'] / dr['max_batch']:.2f} (target >= 2)"
        out.append(text)
    return out
