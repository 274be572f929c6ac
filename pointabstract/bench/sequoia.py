"""Scaling of one Sequoia tree-attention layer against dense and KNN attention (``bench sequoia``).

One layer (attention + MLP, same dim and heads for all), forward + backward on one batch of
random clouds, for N in ``--ns``: median time and peak memory, each (layer, N) in a fresh
subprocess under an address-space limit (CPU: peak resident memory above the level before
the step; CUDA: ``torch.cuda.max_memory_allocated``). The Sequoia rows include building the
tree and its tables, as a model pays them once per forward. Then the growth exponent of time
and of memory fitted on log-log axes (least squares) over N >= ``--fit-from``; N log N gives
about 1.1 from 4k to 64k, N^2 gives 2.
"""

from __future__ import annotations

import argparse
import math

from .. import _validate as V
from .measure import run_isolated

__all__ = ["LAYERS", "add_arguments", "fit_exponent", "format_table", "main", "measure_layer", "run"]

LAYERS = ("sequoia", "sequoia_parallel", "dense", "knn")
_DOC = {"sequoia": "Sequoia, sequential (paper)", "sequoia_parallel": "Sequoia, parallel (official)",
        "dense": "dense softmax (SDPA)", "knn": "KNN attention (k=16)"}


def _build(layer: str, dim: int, heads: int):
    from torch import nn

    from ..nn.attention import MultiHeadSelfAttention
    from ..nn.blocks import SABlock
    from ..nn.sequoia_attention import SequoiaAttention

    if layer in ("sequoia", "sequoia_parallel"):
        mode = "sequential" if layer == "sequoia" else "parallel"
        return SequoiaAttention(dim, heads=heads, mode=mode)
    if layer == "dense":
        block = SABlock(dim, dim, heads=heads, k=None, knn_space="xyz", act="gelu")  # softmax models
        return lambda x, pos: block(x, pos)[0]
    if layer == "knn":
        norm, attn = nn.LayerNorm(dim), MultiHeadSelfAttention(dim, heads=heads, k=16, knn_space="xyz")
        mlp = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

        def knn_block(x, pos):
            x = x + attn(norm(x), pos)
            return x + mlp(x)
        return knn_block
    raise AssertionError(f"layer {layer!r} of LAYERS has no builder")  # measure_layer checked the name


def measure_layer(layer: str, n: int, *, dim: int = 128, heads: int = 4, batch: int = 1, repeats: int = 3,
                  device: str = "cpu") -> dict:
    """Time fwd+bwd of one ``layer`` on (batch, n, 3) clouds with (batch, n, dim) features.

    Returns ``{"ms": median ms, "peak_mb": peak memory of one step in MiB, "cpu_ms": CPU
    time of one step summed over threads (mean of the measured steps)}``; run it in a fresh
    process (``run`` does) so the memory counter sees this step only. On a shared machine the
    CPU time is the steadier number: other processes lengthen the wall time, not the work.
    """
    import resource

    import torch

    from .measure import measure_step

    V.check_choice("layer", layer, LAYERS)
    torch.manual_seed(0)
    fn = _build(layer, dim, heads)
    if isinstance(fn, torch.nn.Module):
        fn = fn.to(device)
    else:  # closures: move the modules they hold
        for cell in fn.__closure__ or ():
            if isinstance(cell.cell_contents, torch.nn.Module):
                cell.cell_contents.to(device)

    def step(n_points):
        pos = torch.rand(batch, n_points, 3, device=device)
        x = torch.randn(batch, n_points, dim, device=device, requires_grad=True)
        fn(x, pos).square().mean().backward()

    def cpu_s():
        use = resource.getrusage(resource.RUSAGE_SELF)
        return use.ru_utime + use.ru_stime

    step(256)  # compiled kernels and lazy initialisation: not part of the measurement
    start = cpu_s()
    out = measure_step(step, n, repeats=repeats, cuda=device.startswith("cuda"))
    return {**out, "cpu_ms": (cpu_s() - start) / (repeats + 1) * 1e3}  # measure_step runs repeats + 1


def run(ns=(1024, 2048, 4096, 8192, 16384, 32768, 65536), *, layers=LAYERS, dim: int = 128, heads: int = 4,
        batch: int = 1, repeats: int = 3, device: str = "cpu", memory_limit_gb: float = 16.0,
        timeout_s: float = 600, progress=print) -> list[dict]:
    """One row per (layer, N): ms, peak MB, or the reason it failed (out of memory, timeout).

    Once a layer fails at some N (out of memory, timeout) its larger N are not run (their rows
    say so), as they could only fail later.
    """
    for layer in layers:
        V.check_choice("layers", layer, LAYERS)
    rows = []
    for layer in layers:
        failed = None
        for n in sorted(ns):
            if failed is not None:
                row = {"layer": layer, "n": n, "error": f"not run ({failed['error']} at N={failed['n']})"}
                rows.append(row)
                progress(_row_text(row))
                continue
            args = {"layer": layer, "n": n, "dim": dim, "heads": heads, "batch": batch, "repeats": repeats,
                    "device": device}
            limit = None if device.startswith("cuda") else memory_limit_gb
            row = {"layer": layer, "n": n, **run_isolated("pointabstract.bench.sequoia:measure_layer", args,
                                                          memory_limit_gb=limit, timeout_s=timeout_s)}
            rows.append(row)
            progress(_row_text(row))
            failed = row if "error" in row else None
    return rows


def _row_text(row: dict) -> str:
    head = f"{_DOC[row['layer']]:30s} N={row['n']:6d}"
    if "error" in row:
        return f"{head}  {row['error']}"
    cpu = f"  cpu {row['cpu_ms']:10.1f} ms" if "cpu_ms" in row else ""
    return f"{head}  {row['ms']:10.1f} ms{cpu}  {row['peak_mb']:9.1f} MB"


def fit_exponent(ns, values) -> float | None:
    """Least-squares slope of log(value) against log(N); None with fewer than two points."""
    pts = [(math.log(n), math.log(v)) for n, v in zip(ns, values) if v > 0]
    if len(pts) < 2:
        return None
    mx = sum(p[0] for p in pts) / len(pts)
    my = sum(p[1] for p in pts) / len(pts)
    den = sum((p[0] - mx) ** 2 for p in pts)
    return sum((p[0] - mx) * (p[1] - my) for p in pts) / den if den else None


def format_table(rows: list[dict], *, fit_from: int = 4096) -> str:
    """Markdown: wall ms, CPU ms (when measured) and MB per layer and N, the fitted exponents
    over N >= ``fit_from``, and how many times faster than dense each layer is."""
    layers = [lay for lay in LAYERS if any(r["layer"] == lay for r in rows)]
    by = {(r["layer"], r["n"]): r for r in rows}
    cpu = any("cpu_ms" in r for r in rows)
    unit = "ms / cpu ms / MB" if cpu else "ms / MB"
    lines = ["| N | " + " | ".join(f"{_DOC[lay]} {unit}" for lay in layers) + " |",
             "|---:|" + "---:|" * len(layers)]
    for n in sorted({r["n"] for r in rows}):
        cells = []
        for lay in layers:
            r = by.get((lay, n), {})
            if "ms" not in r:
                cells.append(r.get("error", "n/a"))
                continue
            cells.append(" / ".join(f"{v:.0f}" for v in (r["ms"], *((r.get("cpu_ms", 0),) if cpu else ()),
                                                           r["peak_mb"])))
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    keys = ["ms", "cpu_ms", "peak_mb"] if cpu else ["ms", "peak_mb"]
    names = {"ms": "time", "cpu_ms": "CPU time", "peak_mb": "memory"}
    lines += ["", f"fitted growth exponent over N >= {fit_from} ({', '.join(names[k] for k in keys)}):", ""]
    for lay in layers:
        ok = sorted((r["n"], r) for r in rows if r["layer"] == lay and "ms" in r and r["n"] >= fit_from)
        fits = [f"{names[k]} {_fmt(fit_exponent([n for n, _ in ok], [r.get(k, 0) for _, r in ok]))}"
                for k in keys]
        span = f"N = {ok[0][0]}..{ok[-1][0]}" if ok else "no rows"
        lines.append(f"- {_DOC[lay]}: {', '.join(fits)} ({span})")
    speed = _speedups(by, layers, keys[:-1])
    if speed:
        lines += ["", "dense softmax's time / the layer's time, at the largest N dense ran:", ""] + speed
    return "\n".join(lines)


def _speedups(by: dict, layers: list[str], keys: list[str]) -> list[str]:
    dense = sorted(n for (lay, n), r in by.items() if lay == "dense" and "ms" in r)
    if not dense:
        return []
    n, names = dense[-1], {"ms": "wall", "cpu_ms": "CPU"}
    out = []
    for lay in layers:
        r = by.get((lay, n), {})
        if lay != "dense" and "ms" in r:
            ratios = [f"{by[('dense', n)][k] / r[k]:.1f}x ({names[k]})" for k in keys if r.get(k)]
            out.append(f"- {_DOC[lay]}: {', '.join(ratios)} at N = {n}")
    return out


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The benchmark's options (``pointabstract bench sequoia``)."""
    parser.add_argument("--ns", type=int, nargs="+", default=[1024, 2048, 4096, 8192, 16384, 32768, 65536],
                        help="cloud sizes N")
    parser.add_argument("--layers", nargs="+", choices=LAYERS, default=list(LAYERS), help="layers to compare")
    parser.add_argument("--dim", type=int, default=128, help="channels C")
    parser.add_argument("--heads", type=int, default=4, help="attention heads H")
    parser.add_argument("--batch", type=int, default=1, help="clouds per step B")
    parser.add_argument("--repeats", type=int, default=3, help="timed steps (median)")
    parser.add_argument("--device", default="cpu", help="cpu or cuda[:i]")
    parser.add_argument("--memory-limit-gb", type=float, default=16.0, help="CPU address-space limit per run")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per (layer, N) run")
    parser.add_argument("--fit-from", type=int, default=4096, help="smallest N of the exponent fit")
    parser.add_argument("--out", help="also write the table to this markdown file")


def main(args: argparse.Namespace) -> int:
    """Run the benchmark with parsed ``args`` and print the table."""
    import torch

    from ..engine.run_dir import check_writable_file
    from .records import check_at_least, write_records

    if not args.ns:
        raise ValueError("--ns selects no size N; give at least one")
    for n in args.ns:
        check_at_least("--ns", n, 1)
    if not args.layers:
        raise ValueError(f"--layers selects no layer; choose from {list(LAYERS)}")
    for option in ("dim", "heads", "batch", "repeats"):
        check_at_least(f"--{option}", getattr(args, option), 1)
    if args.out:
        check_writable_file(args.out)
    print(f"# bench sequoia: one layer fwd+bwd, dim {args.dim}, {args.heads} heads, batch {args.batch}, "
          f"{args.device}, torch {torch.__version__}, {torch.get_num_threads()} threads", flush=True)
    rows = run(args.ns, layers=args.layers, dim=args.dim, heads=args.heads, batch=args.batch,
               repeats=args.repeats, device=args.device, memory_limit_gb=args.memory_limit_gb,
               timeout_s=args.timeout, progress=lambda s: print(s, flush=True))
    table = format_table(rows, fit_from=args.fit_from)
    print("\n" + table)
    if args.out:
        # a table whose every run failed (out of memory, timeout) says nothing of the layers
        measured = [r for r in rows if "error" not in r]
        failed = next((r for r in rows if "error" in r), None)
        reason = (f"every run failed; the first: {failed['layer']} at N = {failed['n']}: {failed['error']}"
                  if failed is not None else "")
        write_records({args.out: f"# Sequoia scaling\n\n{table}\n"}, measured=len(measured),
                      what="bench sequoia", reason=reason)
    return 0
