"""Full self-attention's training step with torch's fused SDPA (today) and with weights formed.

Until f025723 the dense attention of ``self_attention_transformer`` (``k=None``) ran as two
einsums that formed and kept the (B, H, N, N) weights; since then it runs as torch's fused
``scaled_dot_product_attention``. This times one forward + backward of the full
self-attention model and its peak memory both ways, each in a fresh process (the measurement
of ``pointabstract bench models``: ``measure_one`` through ``run_isolated``), and the centroid
transformer beside them, so the scaling table's change can be told apart from a change in the
centroid transformer.

    python tools/full_attention_kernel.py --points 2048 --batch 4
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

import pointabstract  # noqa: F401  (first: its OpenMP settings reach torch)


def measure(kernel: str, model: str, n: int, batch: int) -> dict:
    """``measure_one`` of ``model`` with dense attention by ``kernel`` ("sdpa" or "einsum");
    run in a fresh process by ``run_isolated``."""
    import torch
    import torch.nn.functional as F

    from pointabstract.bench.models import measure_one

    if kernel == "einsum":
        def formed(q, k, v, *args, **kwargs):  # (B, H, M, D): softmax weights formed and kept
            weights = (torch.einsum("bhmd,bhnd->bhmn", q, k) / math.sqrt(q.shape[-1])).softmax(-1)
            return torch.einsum("bhmn,bhnd->bhmd", weights, v)
        F.scaled_dot_product_attention = formed
    overrides = {"k": None} if model == "self_attention_transformer" else {}
    return measure_one(model, n, batch=batch, repeats=3, overrides=overrides)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=2048)
    parser.add_argument("--batch", type=int, default=4)
    args = parser.parse_args()
    from pointabstract.bench.measure import run_isolated

    here = str(Path(__file__).resolve().parent)  # the fresh processes import measure from here
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")]))
    cases = [("fused SDPA", "sdpa", "self_attention_transformer"),
             ("einsum, weights formed", "einsum", "self_attention_transformer"),
             ("centroid transformer", "-", "centroid_transformer")]
    print(f"forward + backward, B = {args.batch}, N = {args.points}, each in a fresh process")
    for label, kernel, model in cases:
        row = run_isolated("full_attention_kernel:measure",
                           {"kernel": kernel, "model": model, "n": args.points, "batch": args.batch},
                           memory_limit_gb=None, timeout_s=1800)
        shown = row["error"] if "error" in row else f"{row['ms']:9.1f} ms {row['peak_mb']:8.0f} MB"
        print(f"{model:28s} {label:24s} {shown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
