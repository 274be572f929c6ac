"""Full self-attention's training step with torch's fused SDPA (today) and with weights formed.

Until f025723 the dense attention of ``self_attention_transformer`` (``k=None``) ran as two
einsums that formed and kept the (B, H, N, N) weights; since then it runs as torch's fused
``scaled_dot_product_attention``. This times one forward + backward of the full
self-attention model and its peak memory both ways, each in a fresh process (the same
measurement as ``pointabstract bench models``), and the centroid transformer beside them, so
the scaling table's change can be told apart from a change in the centroid transformer.

    python tools/full_attention_kernel.py --points 2048 --batch 4
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys

import pointabstract  # noqa: F401  (first: its OpenMP settings reach torch)


def _inner(kernel: str, model: str, points: int, batch: int) -> dict:
    import torch
    import torch.nn.functional as F

    from pointabstract.bench.models import measure_one

    if kernel == "einsum":
        def formed(q, k, v, *args, **kwargs):  # (B, H, M, D): softmax weights formed and kept
            weights = (torch.einsum("bhmd,bhnd->bhmn", q, k) / math.sqrt(q.shape[-1])).softmax(-1)
            return torch.einsum("bhmn,bhnd->bhmd", weights, v)
        F.scaled_dot_product_attention = formed
    overrides = {"k": None} if model == "self_attention_transformer" else {}
    return measure_one(model, points, batch=batch, repeats=3, overrides=overrides)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=2048)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--inner", nargs=2, metavar=("KERNEL", "MODEL"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inner:
        print(json.dumps(_inner(*args.inner, args.points, args.batch)))
        return 0
    cases = [("fused SDPA", "sdpa", "self_attention_transformer"),
             ("einsum, weights formed", "einsum", "self_attention_transformer"),
             ("centroid transformer", "-", "centroid_transformer")]
    print(f"forward + backward, B = {args.batch}, N = {args.points}, each in a fresh process")
    for label, kernel, model in cases:
        out = subprocess.run([sys.executable, __file__, "--points", str(args.points), "--batch",
                              str(args.batch), "--inner", kernel, model],
                             capture_output=True, text=True, check=True).stdout
        row = json.loads(out.strip().splitlines()[-1])
        print(f"{model:28s} {label:24s} {row['ms']:9.1f} ms {row['peak_mb']:8.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
