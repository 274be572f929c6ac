"""Training-step speed against this machine's matmul peak, with a per-op-category profile (``bench train``).

For each configuration (a preset or a registry model name, with ``key=value`` overrides such
as the batch and points), one real training step as ``pointabstract train`` runs it (the
task's own loss on a batch of its own dataset, backward, the optimiser step) is measured:

- FLOPs of one forward + backward, counted by ``torch.utils.flop_counter.FlopCounterMode``
  (matmuls and convolutions; element-wise work, gathers and the compiled KNN / FPS kernels
  count zero FLOPs but take time, which is why the share of the peak falls short);
- the step time (the best of ``--repeats``: other processes only ever slow a step down) and
  training samples/s;
- achieved GFLOP/s = FLOPs / forward + backward time, and its share of the peak of a
  2048 x 2048 fp32 matmul timed in the same process just before (so the share, unlike the
  time, holds on a machine that other processes share);
- the peak resident memory of the step above the level before it;
- with ``--profile``: the step's CPU time per op category from ``torch.profiler`` (matmul /
  conv, attention softmax, gathers and scatters, KNN / top-k / sorting, norms, element-wise,
  reductions, optimiser, other ops) and the Python / kernel time outside any torch op.

Records: ``runs/bench/train_speed.md`` and ``.json``. Run it with nothing else on the machine
for times; the shares are the figure to compare between machines and commits.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

__all__ = ["CATEGORIES", "CONFIGS", "add_arguments", "categorise", "main", "matmul_peak", "measure_config"]

# name -> (preset or model name, overrides): the three demo models and their paper-sized configs
# (batch and points of the paper-sized ones as the papers train them), all on the built-in data
_BUILT_IN = {"data.root": "datasets/synthetic"}
CONFIGS: dict[str, tuple[str, dict]] = {
    "demo": ("demo", {}),
    "capsules_demo_ca": ("capsules_demo_ca", {}),
    "parts_demo": ("parts_demo", {}),
    "centroid_transformer": ("centroid_transformer_modelnet40",
                             {**_BUILT_IN, "data.batch_size": 16, "data.num_points": 1024}),
    "capsule_ae_small_ca": ("capsule_ae_small_ca",
                            {**_BUILT_IN, "data.batch_size": 8, "data.num_points": 2048}),
    "sequoia_seg": ("sequoia_seg", {**_BUILT_IN, "data.batch_size": 8, "data.num_points": 2048}),
}
DEMO = ("demo", "capsules_demo_ca", "parts_demo")

# profiler op name fragments -> category (first match wins; names are aten::<op>)
CATEGORIES: list[tuple[str, tuple[str, ...]]] = [
    ("neighbour attention (compiled kernels)", ("neighbour",)),  # nn/attention.py's _Neighbour* functions
    ("optimiser", ("_foreach", "adam", "lerp", "addcdiv", "addcmul")),
    ("matmul / conv", ("mm", "matmul", "linear", "conv", "einsum", "baddbmm", "addmm", "bmm", "dot")),
    ("attention softmax", ("softmax", "scaled_dot_product")),
    ("gather / scatter", ("gather", "index", "scatter", "take", "embedding", "masked_select", "nonzero")),
    ("knn / top-k / sort", ("topk", "sort", "cdist", "argmin", "argmax", "kthvalue", "knn")),
    ("norms", ("batch_norm", "layer_norm", "group_norm", "native_norm", "norm")),
    ("reductions", ("sum", "mean", "max", "min", "amax", "amin", "cumsum", "std", "var")),
    ("element-wise", ("add", "sub", "mul", "div", "relu", "gelu", "silu", "exp", "log", "sqrt", "pow",
                      "where", "clamp", "neg", "sigmoid", "tanh", "fill", "zero", "copy", "cat", "stack",
                      "threshold", "rsub", "abs", "eq", "ne", "gt", "lt", "ge", "le", "dropout", "bernoulli",
                      "rand", "empty", "ones", "full", "arange", "to", "contiguous", "clone", "expand",
                      "view", "reshape", "permute", "transpose", "select", "slice", "unsqueeze", "squeeze")),
]


def categorise(name: str) -> str:
    """The category of a profiler op name (``aten::bmm`` -> ``matmul / conv``), else ``other ops``."""
    op = name.split("::")[-1].lower()
    words = set(op.strip("_").split("_"))
    for category, fragments in CATEGORIES:  # short fragments ("ne", "to") must be whole words
        if any(fragment in words if len(fragment) <= 3 else fragment in op for fragment in fragments):
            return category
    return "other ops"


def matmul_peak(n: int = 2048, repeats: int = 5) -> float:
    """GFLOP/s of the best of ``repeats`` fp32 ``n x n`` matmuls in this process (2 n^3 FLOPs each)."""
    import torch

    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b  # warm-up: thread pool and allocator
    best = min(_timed(lambda: a @ b) for _ in range(repeats))
    return 2 * n**3 / best / 1e9


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _setup(preset: str, overrides: dict):
    """(cfg, task, model, optimiser, batch, device) for one training step as the trainer runs it."""
    import torch

    from ..engine import load_config

    cfg = load_config(preset, {**overrides, "data.workers": 0, "log.progress": False})
    task, model, opt, batch, _ = step_parts(cfg)
    return cfg, task, model, opt, batch, torch.device("cpu")


def step_parts(cfg) -> tuple:
    """(task, model, optimiser, batch, training set) of one training step of ``cfg`` as the trainer
    builds them: the task, the model and its optimiser (seeded by ``cfg.seed``), the first batch of
    the training set and the set itself."""
    import torch

    from ..data import collate
    from ..engine import build_task
    from ..engine.trainer import build_optimizer
    from ..models import build_model

    torch.manual_seed(cfg.seed)
    task = build_task(cfg)
    ds = task.dataset("train", train=True)
    ds.set_epoch(0)
    batch = collate([ds[i] for i in range(min(cfg.data.batch_size, len(ds)))])
    model = build_model(cfg.model, **{**cfg.model_args, **task.model_args()}).train()
    opt, _ = build_optimizer(cfg, model)
    return task, model, opt, batch, ds


def _flops(task, model, batch, device) -> float:
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with counter:
        loss, _ = task.step(model, batch, device)
        loss.backward()
    model.zero_grad(set_to_none=True)
    return float(counter.get_total_flops())


def _profile(task, model, opt, batch, device, step_s: float) -> dict[str, float]:
    """Self CPU seconds per category of one step, plus Python / kernels outside torch ops."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        _step(task, model, opt, batch, device)
    per: dict[str, float] = {}
    for event in prof.key_averages():
        per[categorise(event.key)] = per.get(categorise(event.key), 0.0) + event.self_cpu_time_total / 1e6
    per["python / compiled kernels (outside torch ops)"] = max(0.0, step_s - sum(per.values()))
    return dict(sorted(per.items(), key=lambda kv: -kv[1]))


def _step(task, model, opt, batch, device) -> None:
    opt.zero_grad(set_to_none=True)
    loss, _ = task.step(model, batch, device)
    loss.backward()
    opt.step()


def measure_config(name: str, *, repeats: int = 3, profile: bool = False, overrides: dict | None = None,
                   peak_gflops: float | None = None) -> dict:
    """Measure one configuration of :data:`CONFIGS` (or ``overrides`` on top of it); see the
    module docstring for what each number means."""
    from .measure import peak_bytes, reset_peak, rss_bytes

    preset, own = CONFIGS[name]
    cfg, task, model, opt, batch, device = _setup(preset, {**own, **(overrides or {})})
    _step(task, model, opt, batch, device)  # warm-up: kernels compiled, allocator primed
    flops = _flops(task, model, batch, device)
    reset_peak()
    base = rss_bytes()
    _step(task, model, opt, batch, device)
    peak_mb = max(0, peak_bytes() - base) / 2**20

    def fwd_bwd():
        loss, _ = task.step(model, batch, device)
        loss.backward()
        model.zero_grad(set_to_none=True)

    fb_s = min(_timed(fwd_bwd) for _ in range(repeats))
    step_s = min(_timed(lambda: _step(task, model, opt, batch, device)) for _ in range(repeats))
    peak = matmul_peak() if peak_gflops is None else peak_gflops
    n = len(batch["pos"])
    row = {"config": name, "model": cfg.model, "batch": n, "points": int(batch["pos"].shape[1]),
           "params_m": sum(p.numel() for p in model.parameters()) / 1e6, "gflop_fwd_bwd": flops / 1e9,
           "fwd_bwd_s": fb_s, "step_s": step_s, "samples_per_s": n / step_s,
           "achieved_gflops": flops / 1e9 / fb_s, "matmul_peak_gflops": peak,
           "share_of_peak": flops / 1e9 / fb_s / peak, "peak_mb": peak_mb}
    if profile:
        row["profile_s"] = _profile(task, model, opt, batch, device, step_s)
    return row


def format_table(rows: list[dict]) -> str:
    head = ("| config | model | batch x points | params (M) | GFLOP fwd+bwd | fwd+bwd s | step s | samples/s "
            "| achieved GFLOP/s | matmul peak GFLOP/s | share of peak | peak MB above warm-up |")
    lines = [head, "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['config']} | {r['model']} | {r['batch']} x {r['points']} | {r['params_m']:.2f} | "
                     f"{r['gflop_fwd_bwd']:.1f} | {r['fwd_bwd_s']:.3f} | {r['step_s']:.3f} | "
                     f"{r['samples_per_s']:.1f} | {r['achieved_gflops']:.1f} | "
                     f"{r['matmul_peak_gflops']:.0f} | {r['share_of_peak']:.0%} | {r['peak_mb']:.0f} |")
    return "\n".join(lines)


def format_profile(row: dict) -> str:
    total = sum(row["profile_s"].values())
    lines = [f"**{row['config']}** (one step, {total:.3f} s of CPU time):", "",
             "| category | s | share |", "|---|---:|---:|"]
    lines += [f"| {k} | {v:.3f} | {v / total:.0%} |" for k, v in row["profile_s"].items() if v > 0]
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The benchmark's options (``pointabstract bench train``)."""
    parser.add_argument("--configs", nargs="+", choices=sorted(CONFIGS), default=list(CONFIGS),
                        help="what to measure (default: the three demo models and their paper-sized configs)")
    parser.add_argument("--repeats", type=int, default=3, help="timed steps per config (the best is kept)")
    parser.add_argument("--profile", action="store_true", help="add the per-op-category profile of one step")
    parser.add_argument("--data", help="dataset root of every config (default: each config's own)")
    parser.add_argument("--results", default="runs/bench", help="where train_speed.md / .json go")


def main(args: argparse.Namespace) -> int:
    """Measure every config, print and write the records."""
    from .records import check_at_least, write_records

    check_at_least("--repeats", args.repeats, 1)
    if not args.configs:
        raise ValueError("--configs selects nothing to measure")
    results = Path(args.results)
    overrides = {"data.root": args.data} if args.data else {}
    import torch

    peak = matmul_peak()
    rows = []
    for name in args.configs:
        row = measure_config(name, repeats=args.repeats, profile=args.profile, overrides=overrides,
                             peak_gflops=peak)
        rows.append(row)
        print(f"{name}: {row['samples_per_s']:.1f} samples/s, {row['achieved_gflops']:.1f} GFLOP/s "
              f"({row['share_of_peak']:.0%} of the matmul peak)", flush=True)
    where = (f"torch {torch.__version__}, {torch.get_num_threads()} threads, matmul peak {peak:.0f} GFLOP/s "
             f"(2048 x 2048 fp32, best of 5, this process)")
    text = ["# Training-step speed", "", "`pointabstract " + " ".join(sys.argv[1:]) + "`", "", where, "",
            format_table(rows), ""]
    if args.profile:
        text += ["## Where a step's time goes", ""] + [format_profile(r) + "\n" for r in rows]
    text.append("FLOPs: FlopCounterMode over one forward + backward (matmul / conv only); times: best of "
                f"{args.repeats}; share of peak = achieved / matmul peak measured in the same process.")
    write_records({results / "train_speed.md": "\n".join(text) + "\n",
                   results / "train_speed.json": json.dumps({"where": where, "rows": rows}, indent=2)},
                  measured=len(rows), what="bench train")
    print("\n".join(text))
    return 0
