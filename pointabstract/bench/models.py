"""Model benchmarks: scaling of centroid vs full self-attention, and the paper's Table 3.

Scaling: forward + backward time per batch and peak memory at N = 512 ... 4096, each
(model, N) measured in a fresh subprocess: the peak resident memory of one training step above
the resident memory before it (the kernel's VmHWM counter, reset after a small warm-up step),
with an address-space limit so that an out-of-memory run is reported instead of taking the
machine down.

Table 3: the downsampling variants trained with the same budget on the same data (the
synthetic set by default), reporting test accuracy and training samples per second.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

from .measure import run_isolated

__all__ = ["ABLATION_ARGS", "ablation_config", "ablation_table", "format_scaling", "measure_one",
           "model_cost", "scaling"]

PAPER_COST = {"params_m": 4.1, "gmacs": 5.4}  # Centroid Transformers, Table 2 (ModelNet40, N = 1024)


def model_cost(name: str = "centroid_transformer", *, n: int = 1024, num_classes: int = 40,
               **overrides) -> dict:
    """Parameters and multiply-accumulates of one forward pass on one cloud of ``n`` points.

    MACs are half the FLOPs that ``torch.utils.flop_counter`` attributes to matrix products
    and convolutions; the compiled KNN / FPS kernels and the fused neighbour products run
    outside torch and are not counted (O(M K C) per attention block and O(M N C) per
    feature-space KNN: about 0.06 GMACs for the paper's model at N = 1024, against 1.74 counted).
    """
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from ..models import build_model

    torch.manual_seed(0)
    net = build_model(name, num_classes=num_classes, **overrides).eval()
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        net(torch.rand(1, n, 3))
    return {"model": name, "n": n, "params_m": sum(p.numel() for p in net.parameters()) / 1e6,
            "gmacs": counter.get_total_flops() / 2e9}

_SCALING_MODELS = {
    "centroid_transformer": {},
    "self_attention_transformer (full)": {"k": None},
}


def measure_one(model: str, n: int, *, batch: int, repeats: int, overrides: dict) -> dict:
    """Build ``model``, time fwd+bwd on a (batch, n, 3) cloud; run inside a fresh process."""
    import torch

    from ..models import build_model
    from .measure import measure_step

    name = model.split(" ")[0]
    torch.manual_seed(0)
    net = build_model(name, num_classes=40, **overrides)
    labels = torch.randint(0, 40, (batch,))

    def step(pos):
        net.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(net(pos)["logits"], labels).backward()

    step(torch.rand(batch, 64, 3))  # loads the compiled kernels: not part of the peak below
    return measure_step(step, torch.rand(batch, n, 3), repeats=repeats)


def scaling(ns=(512, 1024, 2048, 4096), *, batch: int = 8, repeats: int = 3,
            memory_limit_gb: float = 16.0, timeout_s: float = 900, overrides: dict | None = None,
            progress=print) -> list[dict]:
    """One row per (model, N): ms per fwd+bwd batch, peak MB, or the reason it failed."""
    rows = []
    for model, extra in _SCALING_MODELS.items():
        for n in ns:
            args = {"model": model, "n": n, "batch": batch, "repeats": repeats,
                    "overrides": {**(overrides or {}), **extra}}
            row = {"model": model, "n": n, **run_isolated("pointabstract.bench.models:measure_one", args,
                                                          memory_limit_gb=memory_limit_gb,
                                                          timeout_s=timeout_s)}
            rows.append(row)
            progress(_row_text(row))
    return rows


def _row_text(row: dict) -> str:
    if "error" in row:
        return f"{row['model']:36s} N={row['n']:5d}  {row['error']}"
    return f"{row['model']:36s} N={row['n']:5d}  {row['ms']:9.1f} ms  {row['peak_mb']:8.0f} MB"


def format_scaling(rows: list[dict], *, batch: int) -> str:
    """Markdown: one line per N, both models side by side, with the ratios."""
    by = {(r["model"], r["n"]): r for r in rows}
    models = list(_SCALING_MODELS)
    lines = [f"| N | {models[0]} ms | {models[1]} ms | speed-up | {models[0]} MB | {models[1]} MB | "
             "memory ratio |", "|---:|---:|---:|---:|---:|---:|---:|"]
    for n in sorted({r["n"] for r in rows}):
        a, b = by.get((models[0], n), {}), by.get((models[1], n), {})

        def cell(r, key):
            return r.get("error", "n/a") if key not in r else f"{r[key]:.0f}"

        speed = f"{b['ms'] / a['ms']:.1f}x" if "ms" in a and "ms" in b else ""
        mem = f"{b['peak_mb'] / a['peak_mb']:.1f}x" if "peak_mb" in a and "peak_mb" in b else ""
        lines.append(f"| {n} | {cell(a, 'ms')} | {cell(b, 'ms')} | {speed} | {cell(a, 'peak_mb')} | "
                     f"{cell(b, 'peak_mb')} | {mem} |")
    return "\n".join(lines) + f"\n\nforward + backward of one batch of {batch} clouds, CPU."


ABLATIONS = ("ct_fps_only", "ct_random", "ct_kmeans", "centroid_transformer", "ct_t2", "ct_t3",
             "self_attention_transformer")
LEVEL_ROOTS = {"easy": "datasets/synthetic", "hard": "datasets/synthetic-hard"}
# settings that define a variant and that no preset may override: the "full self-attention, no
# downsampling" row is full attention (k = None), whatever the preset's model.k (demo.yaml: 16)
ABLATION_ARGS = {"self_attention_transformer": ["model.k=null"]}


def ablation_config(preset: str, name: str, seed: int, *, overrides: list[str] | None = None,
                    out: str = "runs/bench_table3/run"):
    """The RunConfig of one Table 3 run: ``preset``, then ``overrides``, then the model, seed,
    output folder and the variant's own settings (:data:`ABLATION_ARGS`), which win."""
    from ..engine import load_config

    return load_config(preset, [*(overrides or []), f"model={name}", f"seed={seed}", f"log.out_dir={out}",
                                "log.progress=false", "log.tensorboard=false", *ABLATION_ARGS.get(name, [])])


def ablation_table(preset: str = "demo", *, models=ABLATIONS, overrides: list[str] | None = None,
                   seeds: int | list[int] = 1, out_root: str = "runs/bench_table3",
                   progress=print) -> list[dict]:
    """Train every variant with the same preset and budget at every seed; one row per run with
    accuracy and median training samples/s (see :func:`pointabstract.bench.seeds.run_seeds`)."""
    from ..engine import train
    from .seeds import run_seeds

    def run_one(name: str, seed: int) -> dict:
        out = f"{out_root}/{name}/seed{seed}"
        metrics = train(ablation_config(preset, name, seed, overrides=overrides, out=out),
                        overwrite=True)  # the benchmark's own scratch run
        log = [json.loads(line) for line in open(f"{out}/metrics.jsonl")]
        return {"overall_accuracy": metrics["overall_accuracy"],
                "mean_class_accuracy": metrics["mean_class_accuracy"],
                "samples_per_s": statistics.median(r["samples_per_s"] for r in log)}

    return run_seeds(list(models), run_one, seeds=seeds, progress=progress)


def add_arguments(parser) -> None:
    """``pointabstract bench models`` arguments."""
    parser.add_argument("--points", type=int, nargs="+", default=[512, 1024, 2048, 4096])
    parser.add_argument("--batch", type=int, default=8, help="clouds per batch in the scaling runs")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--table3", action="store_true",
                        help="also train the downsampling variants (minutes each)")
    parser.add_argument("--table3-only", action="store_true", help="skip the size and scaling runs")
    parser.add_argument("--preset", default="demo", help="training preset of the Table 3 runs")
    parser.add_argument("--seeds", type=int, default=1, help="Table 3: seeds per variant (mean ± std)")
    parser.add_argument("--level", choices=sorted(LEVEL_ROOTS),
                        help="Table 3 on the built-in synthetic data of this level (sets data.root)")
    parser.add_argument("overrides", nargs="*", metavar="key=value", help="Table 3 config overrides")
    parser.add_argument("--out", type=Path, help="also write the tables to this markdown file")


def main(args) -> int:
    """Model size, centroid vs full attention scaling, and Table 3 over seeds."""

    from ..engine.run_dir import check_writable_file
    from .records import check_at_least
    from .seeds import format_table, summarise, write_results

    for name in ("repeats", "batch", "seeds"):
        check_at_least(f"--{name}", getattr(args, name), 1)
    for n in args.points:
        check_at_least("--points", n, 1)
    if args.out:
        check_writable_file(args.out)
    command = "pointabstract " + " ".join(sys.argv[1:])
    text = []
    if not args.table3_only:
        cost = model_cost("centroid_transformer", n=1024)
        text.append(f"## Size\n\ncentroid_transformer at the paper's widths, N = 1024, 40 classes: "
                    f"{cost['params_m']:.2f} M parameters, {cost['gmacs']:.2f} GMACs per cloud "
                    f"(paper: {PAPER_COST['params_m']} M, {PAPER_COST['gmacs']} GMACs)")
        print(text[-1], flush=True)
        rows = scaling(tuple(args.points), batch=args.batch, repeats=args.repeats)
        text.append("## Scaling: centroid transformer vs full self-attention\n\n"
                    + format_scaling(rows, batch=args.batch))
    if args.table3 or args.table3_only:
        overrides = list(args.overrides)
        if args.level:
            overrides.insert(0, f"data.root={LEVEL_ROOTS[args.level]}")
        rows = ablation_table(args.preset, overrides=overrides, seeds=args.seeds)
        cols = ["overall_accuracy", "mean_class_accuracy", "samples_per_s"]
        table = format_table(summarise(rows, cols), cols, reference="centroid_transformer",
                             key="overall_accuracy",
                             labels={"overall_accuracy": "test overall accuracy",
                                     "mean_class_accuracy": "mean class accuracy",
                                     "samples_per_s": "train samples/s"})
        name = f"table3_{args.level or 'preset'}_{args.seeds}seeds"
        md, _ = write_results(name, rows, table, command=command)
        text.append(f"## Table 3 on preset '{args.preset}' {' '.join(overrides)}\n\n{table}\n\n(also {md})")
    report = "\n\n".join(text)
    print("\n" + report)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(f"# Model benchmarks\n\n`{command}`\n\n{report}\n")
    return 0
