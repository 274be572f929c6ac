"""ContextPool's share of a centroid-transformer training step, as a ratio measured in one process.

Builds the paper-sized classifier (``centroid_transformer_modelnet40``) with and without
``model.context_pool=true`` on the built-in data and times their training steps alternately
(the same batch, each model's own optimiser), so other load on the machine slows both alike.
Prints the best and median step of each and the overhead of ContextPool.

    python tools/contextpool_overhead.py --batch 8 --points 1024
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import pointabstract  # noqa: F401  (first: its OpenMP settings reach torch)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--points", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=8, help="timed steps per model")
    parser.add_argument("--data", default="datasets/synthetic")
    args = parser.parse_args()
    import torch

    from pointabstract.bench.train_speed import _setup, _step

    base = {"data.root": args.data, "data.batch_size": args.batch, "data.num_points": args.points}
    runs = {}
    for name, extra in (("without", {}), ("with ContextPool", {"model.context_pool": True})):
        torch.manual_seed(0)
        _, task, model, opt, batch, device = _setup("centroid_transformer_modelnet40", {**base, **extra})
        runs[name] = (task, model, opt, batch, device)
        for _ in range(2):  # warm-up
            _step(*runs[name])
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(args.steps):
        for name, run in runs.items():
            start = time.perf_counter()
            _step(*run)
            times[name].append(time.perf_counter() - start)
    print(f"centroid_transformer training step, batch {args.batch} x {args.points} points, "
          f"{args.steps} steps each\n")
    print("| model | best s | median s |\n|---|---:|---:|")
    for name, t in times.items():
        print(f"| {name} | {min(t):.3f} | {statistics.median(t):.3f} |")
    (off, on) = times.values()
    print(f"\nContextPool overhead: {100 * (min(on) / min(off) - 1):+.1f} % (best), "
          f"{100 * (statistics.median(on) / statistics.median(off) - 1):+.1f} % (median)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
