"""Does ``torch.compile`` or bfloat16 pay for a training step on this CPU? (issue: training speed)

Prints, for one ``bench train`` configuration (default: the demo classifier):

- ``whole``: the model wrapped in ``torch.compile`` (compile time = the first two steps, then
  the best eager and compiled step time, interleaved in this one process so that another load
  on the machine slows both alike);
- ``modules``: only the feed-forward / MLP sub-modules compiled (where element-wise work and
  norms could fuse), same measurement;
- ``bf16``: a 2048 x 2048 matmul in float32 and in bfloat16 (GFLOP/s).

Each compiled copy starts from the same weights as its eager twin and takes the same steps.

    OMP_WAIT_POLICY=PASSIVE python tools/compile_trial.py --config demo
"""

from __future__ import annotations

import argparse
import copy
import os
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def _twins(config: str):
    import torch

    from pointabstract.bench.train_speed import CONFIGS, _setup

    cfg, task, model, _, batch, device = _setup(*CONFIGS[config])
    twin = copy.deepcopy(model)
    return task, batch, device, (model, torch.optim.AdamW(model.parameters(), lr=1e-3)), \
        (twin, torch.optim.AdamW(twin.parameters(), lr=1e-3))


def _compare(task, batch, device, eager, compiled, steps: int) -> dict:
    from pointabstract.bench.train_speed import _step, _timed

    start = time.perf_counter()
    for _ in range(2):
        _step(task, *compiled, batch, device)
    compile_s = time.perf_counter() - start
    _step(task, *eager, batch, device)
    e, c = [], []
    for _ in range(steps):
        e.append(_timed(lambda: _step(task, *eager, batch, device)))
        c.append(_timed(lambda: _step(task, *compiled, batch, device)))
    return {"compile_s": compile_s, "eager_s": min(e), "compiled_s": min(c), "speedup": min(e) / min(c)}


def whole(config: str, steps: int) -> dict:
    import torch

    task, batch, device, eager, (twin, opt) = _twins(config)
    return _compare(task, batch, device, eager, (torch.compile(twin, dynamic=False), opt), steps)


def modules(config: str, steps: int, kinds=("FeedForward", "MLP")) -> dict:
    task, batch, device, eager, (twin, opt) = _twins(config)
    count = 0
    for m in twin.modules():
        if type(m).__name__ in kinds:
            m.compile(dynamic=False)
            count += 1
    return {"compiled_modules": count, **_compare(task, batch, device, eager, (twin, opt), steps)}


def bf16(n: int = 2048, repeats: int = 5) -> dict:
    import torch

    out = {}
    for dtype in (torch.float32, torch.bfloat16):
        a, b = torch.randn(n, n, dtype=dtype), torch.randn(n, n, dtype=dtype)
        a @ b
        start = time.perf_counter()
        for _ in range(repeats):
            a @ b
        out[str(dtype).removeprefix("torch.")] = 2 * n**3 / ((time.perf_counter() - start) / repeats) / 1e9
    return {"gflops": out, "bf16_over_fp32": out["bfloat16"] / out["float32"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="demo", help="a bench train configuration (default: demo)")
    parser.add_argument("--steps", type=int, default=6, help="timed steps of each (best is kept)")
    parser.add_argument("--only", nargs="+", choices=("whole", "modules", "bf16"),
                        default=["whole", "modules", "bf16"])
    args = parser.parse_args()
    import pointabstract  # noqa: F401  (its OpenMP settings before torch loads)

    for name in args.only:
        row = bf16() if name == "bf16" else globals()[name](args.config, args.steps)
        shown = {k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()}
        print(f"{name} ({args.config}): {shown}", flush=True)


if __name__ == "__main__":
    main()
