"""Ops benchmark: pointabstract.ops against every importable peer, in one process.

Every timing is the median of ``repeats`` calls after one warm-up call (which also compiles
the numba kernels). Inputs are uniform random points in [-1, 1]^3 (seeded); one extra row
uses the real ScanNet scene when ``../shared/realdata`` is present. A peer whose single
call takes longer than ``slow_s`` seconds is timed once and marked "(1 run)".

Run: ``pointabstract bench ops`` or ``python tools/benchmark_ops.py`` (``--quick`` for a
short run with fewer repeats and without the 100k-point workloads).
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


def _points(batch: int, n: int, c: int = 3, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.rand(batch, n, c, generator=g) * 2 - 1


def _bind(fn, *args):
    return lambda: fn(*args)


def workloads(realdata: Path | None = None) -> list[Workload]:
    """The issue's CPU workloads (plus small sizes, and the real scene when available)."""
    out = []
    for batch, n, m, big in [(16, 1024, 512, False), (16, 2048, 1024, False), (1, 100_000, 4096, True)]:
        pos = _points(batch, n, seed=n)
        label = f"B={batch} N={n} -> {m}"
        out.append(Workload("fps", label, _bind(ops.farthest_point_sample, pos, m),
                            {k: _bind(f, pos, m) for k, f in peers.available(peers.FPS).items()}, big))
    for batch, n, k, big in [(1, 64, 8, False), (16, 1024, 20, False), (16, 2048, 40, False),
                             (1, 100_000, 16, True)]:
        pos = _points(batch, n, seed=n + 1)
        out.append(Workload("knn", f"B={batch} N={n} K={k}", _bind(ops.knn, pos, pos, k),
                            {p: _bind(f, pos, pos, k) for p, f in peers.available(peers.KNN).items()},
                            big))
    feats = _points(16, 512, 128, seed=3)
    out.append(Workload("knn features", "B=16 N=512 C=128 K=40", _bind(ops.knn, feats, feats, 40),
                        {p: _bind(f, feats, feats, 40)
                         for p, f in peers.available(peers.KNN_FEATURES).items()}))
    x, y = _points(32, 2048, seed=4), _points(32, 2048, seed=5)
    out.append(Workload("chamfer fwd+bwd", "B=32 N=M=2048", _bind(_our_chamfer, x, y),
                        {p: _bind(f, x, y) for p, f in peers.available(peers.CHAMFER).items()}))
    scene = _scannet(realdata)
    if scene is not None:
        n = scene.shape[1]
        out.append(Workload("fps", f"ScanNet scene N={n} -> 4096",
                            _bind(ops.farthest_point_sample, scene, 4096),
                            {k: _bind(f, scene, 4096) for k, f in peers.available(peers.FPS).items()}, True))
        out.append(Workload("knn", f"ScanNet scene N={n} K=16", _bind(ops.knn, scene, scene, 16),
                            {p: _bind(f, scene, scene, 16) for p, f in peers.available(peers.KNN).items()},
                            True))
    return out


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


def time_call(fn, repeats: int, slow_s: float) -> tuple[float, str]:
    """Median milliseconds of ``repeats`` calls after one warm-up call."""
    start = time.perf_counter()
    fn()
    first = time.perf_counter() - start
    if first > slow_s:  # too slow to repeat: report the single (already warm) run
        start = time.perf_counter()
        fn()
        return (time.perf_counter() - start) * 1e3, "(1 run)"
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3, ""


def run(*, quick: bool = False, repeats: int = 5, slow_s: float = 20.0,
        realdata: Path | None = None, progress=print) -> list[Row]:
    """Time every workload (ours and peers); returns one row per (workload, peer)."""
    rows = []
    for w in workloads(realdata):
        if quick and w.big:
            continue
        ours, _ = time_call(w.ours, repeats, slow_s)
        progress(f"{w.op:16s} {w.label:30s} ours {_ms(ours):>9s} ms")
        for name, fn in w.peers.items():
            if quick and name in ("open3d KDTreeFlann",):
                continue  # a Python loop per query: minutes on the big rows, seconds otherwise
            ms, note = time_call(fn, repeats, slow_s)
            rows.append(Row(w.op, w.label, ours, name, ms, note))
            progress(f"{'':16s} {'':30s} {name:26s} {_ms(ms):>9s} ms  ratio {ms / ours:6.2f}")
        if not w.peers:
            rows.append(Row(w.op, w.label, ours, "(no peer importable)", None))
    return rows


def environment() -> str:
    import numba

    return (f"{platform.processor() or platform.machine()}, {torch.get_num_threads()} torch threads, "
            f"python {platform.python_version()}, torch {torch.__version__}, numba {numba.__version__}")


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
