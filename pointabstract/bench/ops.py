"""Ops benchmark: pointabstract.ops against every importable peer, in one process.

Every timing is the median of ``repeats`` calls after one warm-up call (which also compiles
the numba kernels). Inputs are uniform random points in [-1, 1]^3 (seeded); one extra row
uses the real ScanNet scene when ``../shared/realdata`` is present. A peer whose single
call takes longer than ``slow_s`` seconds is timed once and marked "(1 run)".

Run: ``pointabstract bench ops`` or ``python tools/benchmark_ops.py`` (``--quick`` for a
short run with fewer repeats and without the 100k-point workloads). ``--device cuda`` runs the
same workloads on the GPU against the peers that take CUDA tensors (timings synchronise the
device before and after each call).
"""

from __future__ import annotations

import platform
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from .. import ops
from . import peers

# the real-data subsets shipped beside the project (../shared/realdata), for the scene rows
DEFAULT_REALDATA = Path(__file__).resolve().parents[3] / "shared" / "realdata"


@dataclass
class Workload:
    op: str  # "fps", "knn", "knn features", "chamfer fwd+bwd"
    label: str  # e.g. "B=16 N=1024 -> 512"
    ours: object  # () -> None
    peers: dict  # name -> () -> None
    big: bool = False  # skipped by --quick


@dataclass
class Row:
    op: str
    workload: str
    ours_ms: float
    peer: str
    peer_ms: float | None
    note: str = ""

    @property
    def ratio(self) -> float | None:
        return None if self.peer_ms is None else self.peer_ms / self.ours_ms


def _points(batch: int, n: int, c: int = 3, seed: int = 0, device: str = "cpu") -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(batch, n, c, generator=g) * 2 - 1).to(device)


def _bind(fn, *args):
    return lambda: fn(*args)


# the workloads' sizes: FPS (B, N, M, big), KNN (B, N, K, big), feature KNN (B, N, C, K),
# Chamfer (B, N); "big" rows are skipped by --quick. TINY: the same rows at toy sizes, for
# dry runs of the code path (bench gpu --device cpu)
SIZES = {"fps": [(16, 1024, 512, False), (16, 2048, 1024, False), (1, 100_000, 4096, True)],
         "knn": [(1, 64, 8, False), (16, 1024, 20, False), (16, 2048, 40, False), (1, 100_000, 16, True)],
         "features": (16, 512, 128, 40), "chamfer": (32, 2048)}
TINY = {"fps": [(2, 128, 32, False)], "knn": [(1, 64, 8, False), (2, 128, 8, False)],
        "features": (2, 64, 16, 8), "chamfer": (2, 128)}


def workloads(realdata: Path | None = None, device: str = "cpu", *, tiny: bool = False) -> list[Workload]:
    """The issue's workloads (plus small sizes, and the real scene when available) on ``device``
    (``tiny``: :data:`TINY` sizes, no real scene)."""
    sizes = TINY if tiny else SIZES
    out = []
    fps_peers = peers.available(peers.FPS, device)
    knn_peers = peers.available(peers.KNN, device)
    feature_peers = peers.available(peers.KNN_FEATURES, device)
    chamfer_peers = peers.available(peers.CHAMFER, device)
    for batch, n, m, big in sizes["fps"]:
        pos = _points(batch, n, seed=n, device=device)
        label = f"B={batch} N={n} -> {m}"
        out.append(Workload("fps", label, _bind(ops.farthest_point_sample, pos, m),
                            {k: _bind(f, pos, m) for k, f in fps_peers.items()}, big))
    for batch, n, k, big in sizes["knn"]:
        pos = _points(batch, n, seed=n + 1, device=device)
        out.append(Workload("knn", f"B={batch} N={n} K={k}", _bind(ops.knn, pos, pos, k),
                            {p: _bind(f, pos, pos, k) for p, f in knn_peers.items()}, big))
    batch, n, c, k = sizes["features"]
    feats = _points(batch, n, c, seed=3, device=device)
    out.append(Workload("knn features", f"B={batch} N={n} C={c} K={k}", _bind(ops.knn, feats, feats, k),
                        {p: _bind(f, feats, feats, k) for p, f in feature_peers.items()}))
    batch, n = sizes["chamfer"]
    x, y = _points(batch, n, seed=4, device=device), _points(batch, n, seed=5, device=device)
    out.append(Workload("chamfer fwd+bwd", f"B={batch} N=M={n}", _bind(_our_chamfer, x, y),
                        {p: _bind(f, x, y) for p, f in chamfer_peers.items()}))
    scene = None if tiny else _scannet(realdata)
    if scene is not None:
        scene = scene.to(device)
        n = scene.shape[1]
        out.append(Workload("fps", f"ScanNet scene N={n} -> 4096",
                            _bind(ops.farthest_point_sample, scene, 4096),
                            {k: _bind(f, scene, 4096) for k, f in fps_peers.items()}, True))
        out.append(Workload("knn", f"ScanNet scene N={n} K=16", _bind(ops.knn, scene, scene, 16),
                            {p: _bind(f, scene, scene, 16) for p, f in knn_peers.items()}, True))
    return out


def missing_peers(device: str = "cpu") -> list[str]:
    """The peers that could run on ``device`` but whose library does not import here, sorted."""
    tables = (peers.FPS, peers.KNN, peers.KNN_FEATURES, peers.CHAMFER)
    return sorted({name for table in tables for name in peers.unavailable(table, device)})


def _our_chamfer(x, y):
    x = x.clone().requires_grad_()
    y = y.clone().requires_grad_()
    ops.chamfer_distance(x, y).backward()


def _scannet(realdata: Path | None) -> torch.Tensor | None:
    if realdata is None:
        return None
    files = sorted((realdata / "scenes").glob("*_xyzrgb.npy"))
    if not files:
        return None
    return torch.from_numpy(np.load(files[0])[:, :3].astype(np.float32))[None]


def time_call(fn, repeats: int, slow_s: float, device: str = "cpu") -> tuple[float, str]:
    """Median milliseconds of ``repeats`` calls after one warm-up call.

    On CUDA the device is synchronised before the clock starts and before it stops, so a
    call's time includes the kernels it queued.
    """
    sync = torch.cuda.synchronize if torch.device(device).type == "cuda" else (lambda: None)

    def once() -> float:
        sync()
        start = time.perf_counter()
        fn()
        sync()
        return time.perf_counter() - start

    first = once()
    if first > slow_s:  # too slow to repeat: report the single (already warm) run
        return once() * 1e3, "(1 run)"
    return statistics.median(once() for _ in range(repeats)) * 1e3, ""


def run(*, quick: bool = False, repeats: int = 5, slow_s: float = 20.0,
        realdata: Path | None = None, device: str = "cpu", tiny: bool = False, progress=print) -> list[Row]:
    """Time every workload (ours and peers) on ``device``; one row per (workload, peer)."""
    rows = []
    for w in workloads(realdata, device, tiny=tiny):
        if quick and w.big:
            continue
        ours, _ = time_call(w.ours, repeats, slow_s, device)
        progress(f"{w.op:16s} {w.label:30s} ours {_ms(ours):>9s} ms")
        for name, fn in w.peers.items():
            if quick and name in ("open3d KDTreeFlann",):
                continue  # a Python loop per query: minutes on the big rows, seconds otherwise
            ms, note = time_call(fn, repeats, slow_s, device)
            rows.append(Row(w.op, w.label, ours, name, ms, note))
            progress(f"{'':16s} {'':30s} {name:26s} {_ms(ms):>9s} ms  ratio {ms / ours:6.2f}")
        if not w.peers:
            rows.append(Row(w.op, w.label, ours, "(no peer importable)", None))
    return rows


def environment(device: str = "cpu") -> str:
    import numba

    where = (torch.cuda.get_device_name(torch.device(device)) if torch.device(device).type == "cuda"
             else f"{platform.processor() or platform.machine()}, {torch.get_num_threads()} torch threads")
    return (f"{where}, python {platform.python_version()}, torch {torch.__version__}, "
            f"numba {numba.__version__}")


def _ms(value: float) -> str:
    return f"{value:.1f}" if value >= 10 else f"{value:.2f}" if value >= 1 else f"{value:.3f}"


def format_table(rows: list[Row]) -> str:
    """Markdown table: op | workload | ours | peer | peer time | peer / ours."""
    lines = ["| op | workload | ours (ms) | peer | peer (ms) | peer / ours |",
             "|---|---|---:|---|---:|---:|"]
    for r in rows:
        peer_ms = "n/a" if r.peer_ms is None else f"{_ms(r.peer_ms)} {r.note}".strip()
        ratio = "" if r.ratio is None else f"{r.ratio:.2f}"
        lines.append(f"| {r.op} | {r.workload} | {_ms(r.ours_ms)} | {r.peer} | {peer_ms} | {ratio} |")
    return "\n".join(lines)


def slowest_peer_ratio(rows: list[Row]) -> float | None:
    """The smallest peer / ours ratio (>= 1.0 means no peer beat us)."""
    ratios = [r.ratio for r in rows if r.ratio is not None]
    return min(ratios) if ratios else None


def add_arguments(parser) -> None:
    """``pointabstract bench ops`` arguments."""
    parser.add_argument("--quick", action="store_true",
                        help="fewer workloads (no 100k-point clouds) for a short run")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per entry (median)")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (default: torch's)")
    parser.add_argument("--realdata", type=Path, default=DEFAULT_REALDATA,
                        help="folder with scenes/*_xyzrgb.npy for the real-scene rows")
    parser.add_argument("--device", default="cpu",
                        help="cpu, or cuda: the same workloads on the GPU against peers that take "
                             "CUDA tensors")
    parser.add_argument("--out", type=Path, help="also write the table to this markdown file")


def main(args) -> int:
    """FPS / KNN / Chamfer against every importable peer."""
    from ..engine.distributed import check_device
    from ..engine.run_dir import check_writable_file
    from .records import check_at_least, write_records

    check_at_least("--repeats", args.repeats, 1)
    check_at_least("--threads", args.threads, 0, "0: torch's default")
    check_device(args.device, what="--device")
    if args.out:
        check_writable_file(args.out)
    if args.threads:
        torch.set_num_threads(args.threads)
    realdata = args.realdata if args.realdata.is_dir() else None
    env = environment(args.device)
    print(f"# ops benchmark ({env})", flush=True)
    for name in missing_peers(args.device):
        print(f"skipped: {name} not importable", flush=True)
    rows = run(quick=args.quick, repeats=args.repeats, realdata=realdata, device=args.device,
               progress=lambda s: print(s, flush=True))
    table = format_table(rows)
    worst = slowest_peer_ratio(rows)
    summary = ("no peer was faster on any workload" if worst is not None and worst >= 1.0
               else f"a peer was faster somewhere (lowest peer / ours ratio {worst:.2f})"
               if worst is not None else "no peer importable")
    print("\n" + table + "\n\n" + summary)
    if args.out:
        command = ("pointabstract bench ops" + (" --quick" if args.quick else "")
                   + (f" --device {args.device}" if args.device != "cpu" else ""))
        write_records({args.out: f"# Ops benchmark\n\n`{command}` on {env}; medians of "
                                 f"{args.repeats} runs after a warm-up, in milliseconds.\n\n"
                                 f"{table}\n\n{summary}\n"}, measured=len(rows), what="bench ops")
        print(f"wrote {args.out}")
    return 0
