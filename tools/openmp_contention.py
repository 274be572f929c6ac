"""Training-step time under contention, by import order (the OpenMP busy-wait of pointabstract/_openmp.py).

Starts a busy process (2-thread torch matmuls, as another user's job), then times one config's
training step (best and median of --steps, after 2 warm-up steps) in fresh processes that:

- import pointabstract first (OMP_WAIT_POLICY=PASSIVE reaches torch's OpenMP: the protected time);
- import torch first with no policy (pointabstract then starts its idle second OpenMP team);
- import torch first with no policy and POINTABSTRACT_OPENMP_TEAM=0 (nothing done: the collapse).

    OMP_WAIT_POLICY=PASSIVE python tools/openmp_contention.py --config capsules_demo_ca
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
CASES = {"pointabstract first (policy set in time)": ("import pointabstract\nimport torch", {}),
         "torch first, second OpenMP team (default)": ("import torch\nimport pointabstract", {}),
         "torch first, nothing done": ("import torch\nimport pointabstract",
                                       {"POINTABSTRACT_OPENMP_TEAM": "0"})}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="capsules_demo_ca", help="a bench train config")
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=2, help="each case runs this many times, interleaved")
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    busy = subprocess.Popen([sys.executable, "-c", BUSY], env={**env, "OMP_WAIT_POLICY": "PASSIVE"})
    time.sleep(2)
    results: dict[str, list[float]] = {case: [] for case in CASES}
    try:
        for _ in range(args.rounds):
            for case, (first, extra) in CASES.items():
                code = STEP.format(first=first, config=args.config, steps=args.steps)
                out = subprocess.run([sys.executable, "-W", "ignore", "-c", code], env={**env, **extra},
                                     capture_output=True, text=True, check=True).stdout
                results[case] += json.loads(out.strip().splitlines()[-1])
    finally:
        busy.kill()
    print(f"{args.config}: training step under contention (another 2-thread process busy), "
          f"{args.rounds} x {args.steps} steps per case\n")
    print("| import order | best s | median s |\n|---|---:|---:|")
    for case, times in results.items():
        times.sort()
        print(f"| {case} | {times[0]:.3f} | {times[len(times) // 2]:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
