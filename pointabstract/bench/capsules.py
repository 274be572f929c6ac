"""``pointabstract bench capsules``: the Centroid Transformers paper's Table 4 on a CPU.

Dynamic routing vs EM routing vs centroid attention in the point-capsule autoencoder at 12
latent capsules (``capsule_ae_small_*``: 512 x 16 -> 12 x 128) and 64 (``capsule_ae_base_*``:
1024 x 16 -> 64 x 64). Per (routing, capsules):

- parameters (millions);
- forward + backward time of one training step (Chamfer loss) on a batch of ``--batch`` clouds
  of ``--points`` points, median of ``--repeats``, in a fresh process;
- peak memory of that step: the kernel's resident high-water mark (VmHWM, reset after a
  warm-up step) above the resident memory before it;
- the largest batch whose training step fits under ``--cap-mb`` MiB of address space above
  the warmed-up process (``RLIMIT_AS``; the paper's "maximum batch size per GPU"), found by
  doubling then bisection, each try in a fresh process;
- with ``--train-seconds`` > 0: test Chamfer distance after that much training on the
  synthetic data (``--data``, ShapeNetPart layout of ``pointabstract data synth``), mean ± std
  over ``--seeds``. ``--full`` gives a longer budget.

Everything runs on the CPU; times depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

__all__ = ["PAPER_TABLE4", "add_arguments", "build", "fits", "format_table", "main", "max_batch",
           "measure_step", "train_chamfer"]

ROUTINGS = ("dynamic", "em", "centroid")
SIZES = {12: "capsule_ae_small", 64: "capsule_ae_base"}
_SHORT = {"dynamic": "dr", "em": "em", "centroid": "ca"}
# Centroid Transformers, Table 4 (GPU; CD x 1e-3 on ShapeNetPart / ShapeNetCore13)
PAPER_TABLE4 = {(12, "dynamic"): {"cd": 2.7, "params_m": 18.4, "max_batch": 22},
                (12, "centroid"): {"cd": 1.6, "params_m": 0.6, "max_batch": 58},
                (64, "dynamic"): {"cd": 1.5, "params_m": 19.8, "max_batch": 12},
                (64, "centroid"): {"cd": 1.4, "params_m": 5.3, "max_batch": 36}}


def build(caps: int, routing: str, *, tiny: bool = False):
    """The registered autoencoder with ``caps`` latent capsules and ``routing`` (``tiny``: the
    registry's test size, for smoke tests of this benchmark)."""
    from ..models.capsule_autoencoder import SPECS, CapsuleAutoencoder

    if caps not in SIZES:
        raise ValueError(f"caps must be one of {sorted(SIZES)}, got {caps}")
    if routing not in ROUTINGS:
        raise ValueError(f"routing must be one of {list(ROUTINGS)}, got {routing!r}")
    spec = SPECS[f"{SIZES[caps]}_{_SHORT[routing]}"]
    return CapsuleAutoencoder(spec.config(**{**spec.defaults, **(spec.tiny if tiny else {})}))


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
            f"from pointabstract.bench.capsules import {function}\n"
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


def train_chamfer(caps: int, routing: str, seed: int, *, seconds: float, data: str, points: int,
                  batch: int = 8, lr: float = 1e-3, tiny: bool = False) -> dict:
    """Train for ``seconds`` on the ShapeNetPart layout under ``data``; test Chamfer (x 1e-3)."""
    import contextlib
    from types import SimpleNamespace

    import torch

    from ..data import collate
    from ..engine.config import DataConfig
    from ..engine.tasks.reconstruction import ReconstructionSettings, ReconstructionTask

    cfg = SimpleNamespace(data=DataConfig(dataset="shapenet_part", root=data, num_points=points, workers=0),
                          seed=seed, task_config=ReconstructionSettings)
    task = ReconstructionTask(cfg)
    train, test = task.dataset("train", train=True), task.dataset("test", train=False)
    torch.manual_seed(seed)
    model = build(caps, routing, tiny=tiny)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(seed)
    start, steps, epoch = time.perf_counter(), 0, 0
    while time.perf_counter() - start < seconds:
        train.set_epoch(epoch)
        for b in torch.utils.data.DataLoader(train, batch_size=batch, shuffle=True, generator=gen,
                                             collate_fn=collate, drop_last=True):
            opt.zero_grad()
            task.step(model, b, torch.device("cpu"))[0].backward()
            opt.step()
            steps += 1
            if time.perf_counter() - start >= seconds:
                break
        epoch += 1
    loader = torch.utils.data.DataLoader(test, batch_size=16, collate_fn=collate)
    metrics = task.evaluate(model, loader, torch.device("cpu"), autocast=contextlib.nullcontext)
    return {"cd_e3": metrics["chamfer"] * 1e3, "fscore": metrics["fscore"], "purity": metrics["purity"],
            "steps": steps}


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


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--caps", type=int, nargs="+", default=[12, 64], choices=sorted(SIZES))
    parser.add_argument("--routings", nargs="+", default=list(ROUTINGS), choices=ROUTINGS)
    parser.add_argument("--batch", type=int, default=8, help="clouds per timed step")
    parser.add_argument("--points", type=int, default=2048, help="input points per cloud")
    parser.add_argument("--repeats", type=int, default=3, help="timed steps (median)")
    parser.add_argument("--cap-mb", type=float, default=1024, help="memory cap of the max-batch search")
    parser.add_argument("--cap-points", type=int, default=1024, help="input points in the max-batch search")
    parser.add_argument("--max-batch-limit", type=int, default=128, help="largest batch tried (0: skip)")
    parser.add_argument("--train-seconds", type=float, default=0.0,
                        help="training budget per run for the test Chamfer column (0: skip)")
    parser.add_argument("--full", action="store_true", help="a 20-minute training budget per run")
    parser.add_argument("--seeds", type=int, default=3, help="training runs per routing (mean ± std)")
    parser.add_argument("--data", default="datasets/synthetic", help="root of `pointabstract data synth`")
    parser.add_argument("--out", default=None, help="also write the rows as JSON here")
    parser.add_argument("--tiny", action="store_true", help="registry test sizes (a smoke test of the bench)")


def main(args: argparse.Namespace) -> int:
    seconds = 1200.0 if args.full else args.train_seconds
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
            if seconds > 0:
                runs = [train_chamfer(caps, routing, s, seconds=seconds, data=args.data, points=args.points,
                                      tiny=args.tiny) for s in range(args.seeds)]
                row["cd_e3"] = [r["cd_e3"] for r in runs]
                row["runs"] = runs
                print(f"  test CD x 1e-3 {_mean_std(row['cd_e3'])}", flush=True)
            rows.append(row)
    print(format_table(rows, batch=args.batch, points=args.points, cap_mb=args.cap_mb,
                       cap_points=args.cap_points))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)
    return 0
