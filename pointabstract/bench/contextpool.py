"""``pointabstract bench contextpool``: the ContextPool paper's ablations (Tables 1-2) on our data.

For one classifier (the demo-sized centroid transformer, ``configs/demo.yaml``) and one
segmenter (``softmax_seg_demo``), on the hard synthetic level (``--data``, both layouts of
``pointabstract data synth --level hard``), trains every variant with the engine (the loop
every user trains with; one run folder per host, variant and seed under ``--runs``) for a fixed
number of AdamW steps, the learning rate on a cosine over them, over ``--seeds`` seeds, and
reports test accuracy / instance mIoU on the whole test split as mean ± std:

- ``none``: the host without ContextPool (the reference);
- ``cp``: ContextPool after every attention block (learned weights, softmax, learned Gaussian);
- ``uniform``, ``nl``, ``unnormalised``: the paper's middle cell (other weightings);
- ``no_locality``, ``fixed_window``: its bottom cell (other locality priors);
- ``paper_sizes``: ``cp`` with the paper's literal size normalisation (a softmax over the cloud,
  ``model.context_pool_sizes=softmax``) instead of our per-point sigmoid;
- ``mlp_mapping``: ``cp`` with the paper's "MLP-based CP" mapping (its Table 3: weights and sizes
  from each point's own features, ``model.context_pool_mapping=point``);
- ``fewer_cp``: half the attention blocks, with ContextPool, against ``none`` (all blocks
  without): the paper's "fewer layers" claim.

Beside the metric: parameters, the time of one training step (forward + backward + AdamW;
the fastest of ``--repeats`` steps, as other processes only ever slow a step down) and its
peak memory (resident high-water mark above the level before the step), each measured once
per variant in a fresh process, with the overhead in % over ``none``. The default budget is
``--steps 60 --seeds 3``; ``--long`` trains 400 steps per run. Everything runs on the CPU; times
depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

__all__ = ["HOSTS", "VARIANTS", "add_arguments", "format_costs", "format_table", "main", "measure_cost",
           "train_eval"]

_CP = {"context_pool": True}
VARIANTS = {
    "none": {},
    "cp": _CP,
    "uniform": {**_CP, "context_pool_weights": "uniform"},
    "nl": {**_CP, "context_pool_weights": "nonlocal"},
    "unnormalised": {**_CP, "context_pool_normalize": False},
    "no_locality": {**_CP, "context_pool_locality": "none"},
    "fixed_window": {**_CP, "context_pool_locality": "fixed"},
    "paper_sizes": {**_CP, "context_pool_sizes": "softmax"},
    "mlp_mapping": {**_CP, "context_pool_mapping": "point"},
    "fewer_cp": _CP,  # plus the host's "fewer" overrides
}
# host -> (config: preset or flat keys, its half-depth overrides, the metric, its label)
HOSTS = {
    "classifier": ({"preset": "demo", "data.dataset": "modelnet40", "data.batch_size": 16,
                    "data.num_points": 256},
                   {"model.widths": [32, 64], "model.ratios": [0.5]}, "overall_accuracy", "accuracy"),
    "segmenter": ({"model": "softmax_seg_demo", "data.dataset": "shapenet_part", "data.batch_size": 16,
                   "data.num_points": 256, "optim.lr": 0.002},
                  {"model.layers": 1}, "instance_miou", "instance mIoU"),
}
# the paper's numbers (Table 1: EN-DE BLEU, memory GB; Table 2: ImageNet top-1)
PAPER = {"none": ("28.16", "77.9"), "cp": ("28.91", "79.9"), "unnormalised": ("28.79", "79.7"),
         "uniform": ("28.52", "78.9"), "nl": ("28.66", "79.4"), "no_locality": ("28.31", "78.3"),
         "fixed_window": ("28.55", "78.9"), "mlp_mapping": ("28.33", "78.7"),  # Table 3: MLP-based CP
         "fewer_cp": ("-", "76.8 (10 vs 12 layers)")}


_FOREVER = 10**6  # epochs and evaluation interval of a step-budget run (never reached)
# the half-depth overrides of ``fewer_cp`` at the registry's test size (``--tiny``)
_TINY_FEWER = {"classifier": {"model.widths": [8, 16], "model.ratios": [0.5]},
               "segmenter": {"model.layers": 1}}


def _config(host: str, variant: str, data: str, seed: int, *, steps: int = 1,
            out: str | Path = "runs/bench_contextpool/scratch", tiny: bool = False):
    """The engine run of ``variant`` of ``host``: ``steps`` AdamW steps, the learning rate on a
    cosine over those steps (``optim.schedule_every=step``), evaluated once at the end, into
    ``out``; ``tiny``: the registry's test size (a smoke test of this benchmark), keeping the
    variant's keys."""
    from ..engine import load_config
    from ..engine.config import preset_path, read_preset
    from ..models import MODELS

    if host not in HOSTS:
        raise ValueError(f"host must be one of {list(HOSTS)}, got {host!r}")
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {list(VARIANTS)}, got {variant!r}")
    base, fewer, _, _ = HOSTS[host]
    flat = read_preset(preset_path(base["preset"])) if "preset" in base else {}
    flat.update({k: v for k, v in base.items() if k != "preset"})
    if tiny:
        flat = {k: v for k, v in flat.items() if not k.startswith("model.")}
        flat.update({f"model.{k}": list(v) if isinstance(v, tuple) else v
                     for k, v in MODELS[flat["model"]].tiny.items()})
    flat.update({"data.root": data, "data.workers": 0, "seed": seed, "device": "cpu", "log.progress": False,
                 "log.tensorboard": False, "log.out_dir": str(out), "log.eval_every": _FOREVER,
                 "optim.optimizer": "adamw", "optim.schedule": "cosine", "optim.schedule_every": "step",
                 "optim.epochs": _FOREVER, "optim.max_steps": steps})
    flat.update({f"model.{k}": v for k, v in VARIANTS[variant].items()})
    if variant == "fewer_cp":
        flat.update(_TINY_FEWER[host] if tiny else fewer)
    return load_config(None, flat)


def train_eval(host: str, variant: str, seed: int, *, data: str, steps: int, out: str | Path,
               tiny: bool = False) -> dict:
    """Train ``variant`` of ``host`` from ``seed`` with the engine (:func:`_config`, into the run
    folder ``out``, replacing the benchmark's earlier run there); its test metric on the whole
    test split (the task's evaluation) and the steps trained."""
    from ..engine import load_checkpoint, train

    metrics = train(_config(host, variant, data, seed, steps=steps, out=out, tiny=tiny), overwrite=True)
    return {"metric": float(metrics[HOSTS[host][2]]), "steps": load_checkpoint(Path(out) / "last.pt")["step"]}


def measure_cost(host: str, variant: str, *, data: str, repeats: int, tiny: bool = False) -> dict:
    """Parameters, time and peak memory of one training step on one batch (fresh process)."""
    import torch

    from ..data import collate
    from .measure import measure_step
    from .train_speed import _step, step_parts

    task, model, opt, batch, train = step_parts(_config(host, variant, data, 0, tiny=tiny))
    cpu = torch.device("cpu")

    def step(b):
        _step(task, model, opt, b, cpu)

    step(collate([train[i] for i in range(2)]))  # compiled kernels, lazy initialisation
    params = sum(p.numel() for p in model.parameters())
    cost = measure_step(step, batch, repeats=1)  # the peak memory (and one timed step)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        step(batch)
        times.append(time.perf_counter() - start)
    # the fastest step: other processes on a shared machine only ever slow a step down
    return {"params": params, "peak_mb": cost["peak_mb"], "ms": 1e3 * min(times),
            "ms_median": 1e3 * statistics.median(times)}


def format_costs(costs: dict) -> str:
    """Markdown of the cost columns alone (``--cost-only``): per variant parameters, the fastest
    step and peak memory, each with its overhead over ``none``."""
    ref = costs.get("none", {})
    lines = ["| variant | params | ms / step (fastest) | ms / step (median) | peak MiB |",
             "|---|---:|---:|---:|---:|"]
    for variant, c in costs.items():
        if "ms" not in c:
            lines.append(f"| {variant} | {c.get('error', '-')} | - | - | - |")
            continue
        lines.append(f"| {variant} | {c['params']:,} ({_pct(c['params'], ref.get('params', 0))}) | "
                     f"{c['ms']:.0f} ({_pct(c['ms'], ref.get('ms', 0))}) | {c['ms_median']:.0f} | "
                     f"{c['peak_mb']:.0f} ({_pct(c['peak_mb'], ref.get('peak_mb', 0))}) |")
    return "\n".join(lines)


def _pct(value: float, ref: float) -> str:
    return f"{100 * (value / ref - 1):+.0f} %" if ref else "-"


def format_table(host: str, summary: list[dict], costs: dict) -> str:
    """Markdown for one host: metric mean ± std and whether it differs from ``none`` and ``cp``
    beyond the seed spread, the cost columns, the paper's Table 1 / 2 numbers."""
    from .seeds import beyond_spread

    label = HOSTS[host][3]
    by = {s["variant"]: s for s in summary}
    ref_cost = costs.get("none", {})
    head = (f"| variant | seeds | {label} | vs none | vs cp | params | ms / step | peak MiB | "
            "paper BLEU (T1) | paper top-1 (T2) |")
    lines = [head, "|---|---:|---:|---|---|---:|---:|---:|---:|---:|"]
    for s in summary:
        m, c = s["metric"], costs.get(s["variant"], {})

        def versus(other, s=s, m=m):
            o = by.get(other)
            if o is None or o is s:
                return "-"
            return "beyond spread" if beyond_spread(m, o["metric"]) else "within spread"

        cells = [s["variant"], str(s["n"]), f"{m['mean']:.4f} ± {m['std']:.4f}", versus("none"), versus("cp")]
        if "ms" in c:
            cells += [f"{c['params']:,} ({_pct(c['params'], ref_cost.get('params', 0))})",
                      f"{c['ms']:.0f} ({_pct(c['ms'], ref_cost.get('ms', 0))})",
                      f"{c['peak_mb']:.0f} ({_pct(c['peak_mb'], ref_cost.get('peak_mb', 0))})"]
        else:
            cells += [c.get("error", "-")] * 3
        cells += list(PAPER.get(s["variant"], ("-", "-")))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The benchmark's options (``pointabstract bench contextpool``)."""
    parser.add_argument("--data", default="datasets/synthetic-hard",
                        help="root of `pointabstract data synth --level hard` (both layouts)")
    parser.add_argument("--hosts", nargs="+", choices=list(HOSTS), default=list(HOSTS))
    parser.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=list(VARIANTS))
    parser.add_argument("--seeds", type=int, default=3, help="training runs per variant (mean ± std)")
    parser.add_argument("--steps", type=int, default=60, help="AdamW steps per run (cosine over them)")
    parser.add_argument("--repeats", type=int, default=8, help="timed steps of the cost columns (fastest)")
    parser.add_argument("--long", action="store_true", help="400 steps per run")
    parser.add_argument("--cost-only", action="store_true",
                        help="only the cost columns (params, time per step, peak memory): no training")
    parser.add_argument("--out-dir", default="runs/bench", help="where the markdown and JSON go")
    parser.add_argument("--runs", default="runs/bench_contextpool",
                        help="the training runs' folders (<host>/<variant>/seed<s>, replaced on each run)")
    parser.add_argument("--tiny", action="store_true", help="registry test sizes (a smoke test of the bench)")


def main(args: argparse.Namespace) -> int:
    """Run the benchmark with parsed ``args``, print one table per host, write the results."""
    import sys

    import torch

    from ..engine.run_dir import check_writable_file
    from .measure import run_isolated
    from .records import check_at_least
    from .seeds import run_seeds, summarise, write_results

    steps = 400 if args.long else args.steps
    if not args.hosts:
        raise ValueError(f"--hosts selects no host; choose from {list(HOSTS)}")
    if "none" not in args.variants:
        raise ValueError(f"variants must include 'none' (the reference), got {args.variants}")
    check_at_least("--repeats", args.repeats, 1)
    if not args.cost_only:
        check_at_least("--seeds", args.seeds, 1, "training runs per variant")
        check_at_least("--steps", steps, 1)
        record = Path(args.out_dir) / f"contextpool_{steps}steps_{args.seeds}seeds.md"
        check_writable_file(record, what="--out-dir")
    started = time.perf_counter()
    print(f"# bench contextpool: {steps} steps per run, {args.seeds} seeds, data {args.data}, "
          f"torch {torch.__version__}, {torch.get_num_threads()} threads", flush=True)
    tables, rows = [], []
    for host in args.hosts:
        costs = {}
        for variant in args.variants:
            costs[variant] = run_isolated("pointabstract.bench.contextpool:measure_cost",
                                          {"host": host, "variant": variant, "data": args.data,
                                           "repeats": args.repeats, "tiny": args.tiny},
                                          memory_limit_gb=None, timeout_s=900)
            print(f"{host} {variant}: cost {costs[variant]}", flush=True)
        if args.cost_only:
            tables.append(f"## {host}: cost of one training step\n\n" + format_costs(costs))
            continue
        mine = run_seeds(args.variants, lambda v, s, h=host: train_eval(
            h, v, s, data=args.data, steps=steps, out=Path(args.runs) / h / v / f"seed{s}", tiny=args.tiny),
            seeds=args.seeds, progress=lambda line, h=host: print(f"{h} {line}", flush=True))
        for r in mine:
            r.update(host=host, **{k: v for k, v in costs[r["variant"]].items() if k != "error"})
        rows += mine
        tables.append(f"## {host} ({HOSTS[host][3]}, {steps} steps)\n\n"
                      + format_table(host, summarise(mine, ["metric"]), costs))
    table = "\n\n".join(tables)
    print("\n" + table, flush=True)
    if args.cost_only:
        return 0
    command = "pointabstract bench contextpool " + " ".join(sys.argv[3:] if len(sys.argv) > 3 else [])
    md, js = write_results(f"contextpool_{steps}steps_{args.seeds}seeds", rows, table, out_dir=args.out_dir,
                           command=command.strip(),
                           notes=f"total {time.perf_counter() - started:.0f} s on this machine")
    print(f"wrote {md} and {js}")
    return 0
