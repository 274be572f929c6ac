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

__all__ = ["PAPER_TABLE4", "PARTS", "fits", "format_table", "max_batch", "measure_step", "ratios",
           "timing_rows"]

# Centroid Transformers, Table 4 (GPU; CD x 1e-3 on ShapeNetPart / ShapeNetCore13)
PAPER_TABLE4 = {(12, "dynamic"): {"cd": 2.7, "params_m": 18.4, "max_batch": 22},
                (12, "centroid"): {"cd": 1.6, "params_m": 0.6, "max_batch": 58},
                (64, "dynamic"): {"cd": 1.5, "params_m": 19.8, "max_batch": 12},
                (64, "centroid"): {"cd": 1.4, "params_m": 5.3, "max_batch": 36}}


PARTS = ("model", "routing")  # what one timed step trains: the whole autoencoder or its routing alone


def _step_fn(model, part: str = "model"):
    """One training step of ``part``: the whole model on (B, N, 3) clouds with the Chamfer loss,
    or the routing module alone on (B, P, D) primary capsules with a sum-of-squares loss on the
    latent capsules (its cost without the encoder and the decoder, as Table 4's argument needs)."""
    import torch

    from ..ops import chamfer_distance

    if part == "routing":
        routing = model.routing

        def step(u):
            routing.zero_grad(set_to_none=True)
            routing(u)[0].square().sum().backward()
    else:
        def step(pos):
            model.zero_grad(set_to_none=True)
            chamfer_distance(model(pos)["points"], pos).backward()

    torch.manual_seed(0)
    step(_input(model, part, 2, 64))  # warm-up: loads the compiled kernels
    return step


def _input(model, part: str, batch: int, points: int):
    """The timed step's input: clouds in [-1, 1]^3, or squashed primary capsules (norms in (0, 1),
    as the primary layer emits them) for the routing alone."""
    import torch

    if part == "routing":
        cfg = model.cfg
        u = torch.randn(batch, cfg.primary_caps, cfg.primary_dim)
        norm = u.norm(dim=-1, keepdim=True)
        return u * (norm / (1 + norm**2))  # squash: |u| -> |u|^2 / (1 + |u|^2)
    return torch.rand(batch, points, 3) * 2 - 1


def _params(model, part: str) -> float:
    module = model.routing if part == "routing" else model
    return sum(p.numel() for p in module.parameters()) / 1e6


def measure_step(caps: int, routing: str, *, batch: int, points: int, repeats: int,
                 tiny: bool = False, part: str = "model") -> dict:
    """Time and peak memory of one training step of ``part``; call in a fresh process (see module doc)."""
    from .measure import measure_step

    model = build(caps, routing, tiny=tiny)
    step = _step_fn(model, part)
    return {"params_m": _params(model, part),
            **measure_step(step, _input(model, part, batch, points), repeats=repeats)}


def _try_batch(caps: int, routing: str, batch: int, points: int, cap_mb: float, tiny: bool = False,
               part: str = "model") -> dict:
    """One training step of ``batch`` clouds under an address-space cap (fresh process)."""
    import resource

    model = build(caps, routing, tiny=tiny)
    step = _step_fn(model, part)
    pos = _input(model, part, batch, points)
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
         timeout_s: float = 1800, part: str = "model") -> bool:
    """Whether one training step of ``batch`` clouds fits under ``cap_mb`` MiB (fresh process)."""
    return bool(_subprocess("_try_batch", {"caps": caps, "routing": routing, "batch": batch, "points": points,
                                           "cap_mb": cap_mb, "tiny": tiny, "part": part}, timeout_s)["fits"])


def max_batch(caps: int, routing: str, *, points: int, cap_mb: float, limit: int = 256, tiny: bool = False,
              progress=None, part: str = "model") -> int:
    """The largest batch (<= limit) that fits: doubling from 1, then bisection. 0 if none."""
    def probe(b):
        ok = fits(caps, routing, b, points=points, cap_mb=cap_mb, tiny=tiny, part=part)
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
    head = (f"| caps | routing | what | params (M) | fwd+bwd ms (B={batch}, N={points}) | peak MiB | "
            f"max batch (N={cap_points}, {cap_mb:g} MiB) | test CD x 1e-3 | paper params (M) | "
            "paper max batch | paper CD x 1e-3 |")
    lines = [head, "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        whole = r.get("part", "model") == "model"
        paper = PAPER_TABLE4.get((r["caps"], r["routing"]), {}) if whole else {}
        cells = [r["caps"], r["routing"], "whole model" if whole else "routing only", f"{r['params_m']:.2f}",
                 f"{r['ms']:.0f}", f"{r['peak_mb']:.0f}", _batch_cell(r), _mean_std(r.get("cd_e3", [])),
                 *(paper.get(k, "-") for k in ("params_m", "max_batch", "cd"))]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(lines)


def _batch_cell(row: dict) -> str:
    if "max_batch" not in row:
        return "-"
    return f">= {row['max_batch']}" if row["max_batch"] >= row.get("batch_limit", float("inf")) else \
        str(row["max_batch"])


def timing_rows(args) -> list[dict]:
    """One row per (capsules, routing, part in ``args.parts``), each measured in fresh processes."""
    rows = []
    for caps in args.caps:
        for routing in args.routings:
            for part in args.parts:
                rows.append(_timing_row(args, caps, routing, part))
    return rows


def _timing_row(args, caps: int, routing: str, part: str) -> dict:
    row = {"caps": caps, "routing": routing, "part": part, **_subprocess(
        "measure_step", {"caps": caps, "routing": routing, "batch": args.batch, "points": args.points,
                         "repeats": args.repeats, "tiny": args.tiny, "part": part}, 3600)}
    print(f"{caps} capsules, {routing}, {part}: {row['params_m']:.2f} M parameters, {row['ms']:.0f} ms, "
          f"peak {row['peak_mb']:.0f} MiB", flush=True)
    if args.max_batch_limit:
        row["batch_limit"] = args.max_batch_limit
        row["max_batch"] = max_batch(caps, routing, points=args.cap_points, cap_mb=args.cap_mb,
                                     limit=args.max_batch_limit, tiny=args.tiny, progress=print, part=part)
        print(f"  largest batch under {args.cap_mb:g} MiB: {_batch_cell(row)}", flush=True)
    return row


def _times(ratio: float) -> str:
    return f"x{ratio:.2f}" if ratio >= 0.1 else f"x{ratio:.2g}"  # two significant digits below 0.1


def ratios(rows: list[dict]) -> list[str]:
    """Centroid attention over dynamic routing at each capsule count and part, as ratios (the
    paper's Table 4, whole models on a GPU: parameters x0.03 at 12 capsules, x0.27 at 64; max
    batch x2.6 and x3.0)."""
    out = []
    for caps, part in sorted({(r["caps"], r.get("part", "model")) for r in rows}):
        mine = [r for r in rows if r["caps"] == caps and r.get("part", "model") == part]
        dr = next((r for r in mine if r["routing"] == "dynamic"), None)
        ca = next((r for r in mine if r["routing"] == "centroid"), None)
        if dr is None or ca is None:
            continue
        what = "whole models" if part == "model" else "routing only"
        text = (f"- {caps} capsules, {what}, centroid vs dynamic routing: parameters "
                f"{_times(ca['params_m'] / dr['params_m'])}, step time {_times(ca['ms'] / dr['ms'])}")
        if dr.get("max_batch") and ca.get("max_batch") is not None:
            bound = ">= " if ca["max_batch"] >= ca.get("batch_limit", float("inf")) else ""
            text += f", max batch {bound}{_times(ca['max_batch'] / dr['max_batch'])}"
        out.append(text)
    return out
