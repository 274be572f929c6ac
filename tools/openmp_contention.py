"""Training-step time by OpenMP setting, under contention or idle (pointabstract/__init__.py, _openmp.py).

Starts a busy process (2-thread torch matmuls, as another user's job; none with --idle), then
times each config's training step (best and median of --steps, after 2 warm-up steps) in fresh
processes that:

- import pointabstract first (OMP_WAIT_POLICY=PASSIVE and the short GOMP_SPINCOUNT reach torch's
  OpenMP: the default);
- the same with GOMP_SPINCOUNT=0 (fully passive threads, the default before 2026-11-26);
- import torch first with no policy (pointabstract then starts its idle second OpenMP team);
- import torch first with no policy and POINTABSTRACT_OPENMP_TEAM=0 (nothing done: the collapse).

    python tools/openmp_contention.py --configs demo parts_demo capsules_demo_ca [--idle]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

STEP = """
import sys, time
{first}
from pointabstract.bench.train_speed import CONFIGS, _setup, _step
cfg, task, model, opt, batch, dev = _setup(*CONFIGS[{config!r}])
for _ in range(2):
    _step(task, model, opt, batch, dev)
times = []
for _ in range({steps}):
    t = time.perf_counter(); _step(task, model, opt, batch, dev); times.append(time.perf_counter() - t)
print(sorted(times))
"""
BUSY = ("import torch\ntorch.set_num_threads(2)\na = torch.rand(1024, 1024)\n"
        "while True:\n    a = (a @ a).clamp_(-1, 1)\n")
CASES = {"pointabstract first (the default: passive, short spin)": ("import pointabstract\nimport torch", {}),
         "pointabstract first, GOMP_SPINCOUNT=0 (fully passive)": ("import pointabstract\nimport torch",
                                                                   {"GOMP_SPINCOUNT": "0"}),
         "torch first, second OpenMP team": ("import torch\nimport pointabstract", {}),
         "torch first, nothing done": ("import torch\nimport pointabstract",
                                       {"POINTABSTRACT_OPENMP_TEAM": "0"})}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", nargs="+", default=["capsules_demo_ca"], help="bench train configs")
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=2, help="each case runs this many times, interleaved")
    parser.add_argument("--idle", action="store_true", help="no busy process: the idle-machine times")
    parser.add_argument("--cases", nargs="+", type=int, help="only these cases (0-based, in the order above)")
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    cases = {c: CASES[c] for i, c in enumerate(CASES) if args.cases is None or i in args.cases}
    busy = None if args.idle else subprocess.Popen([sys.executable, "-c", BUSY],
                                                   env={**env, "OMP_WAIT_POLICY": "PASSIVE"})
    time.sleep(0 if args.idle else 2)
    results: dict[tuple[str, str], list[float]] = {(c, case): [] for c in args.configs for case in cases}
    try:
        for _ in range(args.rounds):
            for config in args.configs:
                for case, (first, extra) in cases.items():
                    code = STEP.format(first=first, config=config, steps=args.steps)
                    out = subprocess.run([sys.executable, "-W", "ignore", "-c", code], env={**env, **extra},
                                         capture_output=True, text=True, check=True).stdout
                    results[config, case] += json.loads(out.strip().splitlines()[-1])
    finally:
        if busy is not None:
            busy.kill()
    load = "nothing else running" if args.idle else "another 2-thread process busy"
    print(f"training step, {load}, {args.rounds} x {args.steps} steps per case\n")
    print("| config | OpenMP setting | best s | median s |\n|---|---|---:|---:|")
    for (config, case), times in results.items():
        times.sort()
        print(f"| {config} | {case} | {times[0]:.3f} | {times[len(times) // 2]:.3f} |")
    return 0

if __name__ == "__main__":
    sys.exit(main())
