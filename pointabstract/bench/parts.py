"""Sequoia vs softmax attention, part segmentation and classification (``bench parts``).

The issue's comparison on the same data, over seeds with the shared helper
(:mod:`pointabstract.bench.seeds`: mean ± std, which differences exceed the seed spread):

- part segmentation (ShapeNetPart layout): ``sequoia_seg*`` against ``softmax_seg*``, the
  same widths and depth with dense softmax attention; instance and class mIoU;
- classification (ModelNet40 layout): ``sequoia_cls*`` against ``softmax_cls*``, the same
  embedding, widths, depth and head with dense softmax attention (the paper's 92.0 vs 89.5);
  beside them, as a second and differently built baseline, ``self_attention_transformer`` (the
  centroid transformer's classifier without downsampling: another network, not the paper's
  comparison);

each pair with the same budget (epochs, points, batch, optimiser, schedule), beside the
Sequoia paper's numbers (ShapeNetPart, ModelNet40). ``--size demo`` (default) uses the
demo-sized models and a short budget; ``--size paper`` the official widths (hours on a CPU).
With ``--real-data``, the seed-0 Sequoia segmenter is also evaluated on a real ShapeNetPart
root (e.g. the Cap subset): a synthetic-to-real domain shift, reported as measured.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

__all__ = ["CLS_EXTRA", "CLS_PAIRS", "MODEL_ARGS", "PAPER", "SEG_PAIRS", "add_arguments", "budget",
           "constant_baseline", "main", "real_data", "run_cls", "run_seg"]

# (Sequoia, baseline) per size
SEG_PAIRS = {"demo": ("sequoia_seg_demo", "softmax_seg_demo"), "paper": ("sequoia_seg", "softmax_seg")}
CLS_PAIRS = {"demo": ("sequoia_cls_demo", "softmax_cls_demo"), "paper": ("sequoia_cls", "softmax_cls")}
# a second classification baseline, a different network (labelled so in the notes), per size
CLS_EXTRA = {"demo": ("self_attention_transformer",), "paper": ("self_attention_transformer",)}
# model.* keys per size and model: the self-attention classifier at the demo preset's widths
# (``configs/demo.yaml``) with full attention (k = None) for the demo size
MODEL_ARGS = {"demo": {"self_attention_transformer": {
    "model.widths": [32, 64, 64, 128], "model.heads": 4, "model.fuse_dim": 128, "model.head_dims": [128, 64],
    "model.dropout": 0.3, "model.k": None}}, "paper": {}}
# Sequoia paper: ShapeNetPart instance / class mIoU (%), ModelNet40 overall accuracy (%)
PAPER = {"seg": {"sequoia": (82.7, 79.5), "softmax": (78.8, 74.9)},
         "cls": {"sequoia": 92.0, "softmax": 89.5}}


def budget(*, epochs: int, points: int, batch: int, lr: float) -> dict:
    """The training settings every variant of one table shares."""
    return {"data.num_points": points, "data.batch_size": batch, "data.eval_batch_size": 64,
            "optim.epochs": epochs, "optim.optimizer": "adamw", "optim.lr": lr, "optim.weight_decay": 0.01,
            "optim.schedule": "cosine", "log.progress": False, "log.tensorboard": False}


def _train(model: str, seed: int, overrides: dict, out: str) -> tuple[dict, float, int]:
    """Train with the engine; (last evaluation, median train samples/s, parameter count)."""
    from ..engine import load_checkpoint, load_config, train

    cfg = load_config(None, {**overrides, "model": model, "seed": seed, "log.out_dir": out})
    metrics = train(cfg, overwrite=True)  # the benchmark's own scratch run
    log = [json.loads(line) for line in open(Path(out) / "metrics.jsonl")]
    params = sum(t.numel() for t in load_checkpoint(Path(out) / "last.pt")["model"].values())
    return metrics, statistics.median(r["samples_per_s"] for r in log), params


def run_seg(model: str, seed: int, *, root: str, train_budget: dict, out_root: str, workers: int = 0,
            model_args: dict | None = None) -> dict:
    """Train one segmenter on the ShapeNetPart layout under ``root``; its test mIoUs (%)."""
    over = {**train_budget, "task": "part_segmentation", "data.dataset": "shapenet_part", "data.root": root,
            "data.workers": workers, **(model_args or {})}
    metrics, speed, params = _train(model, seed, over, f"{out_root}/{model}/seed{seed}")
    return {"instance_miou": 100 * metrics["instance_miou"], "class_miou": 100 * metrics["class_miou"],
            "samples_per_s": speed, "params_m": params / 1e6}


def run_cls(model: str, seed: int, *, root: str, train_budget: dict, out_root: str, workers: int = 0,
            model_args: dict | None = None) -> dict:
    """Train one classifier on the ModelNet40 layout under ``root``; its test accuracy (%)."""
    over = {**train_budget, "task": "classification", "data.dataset": "modelnet40", "data.root": root,
            "data.workers": workers, "task.augment": "scale_translate", **(model_args or {})}
    metrics, speed, params = _train(model, seed, over, f"{out_root}/{model}/seed{seed}")
    return {"overall_accuracy": 100 * metrics["overall_accuracy"],
            "mean_class_accuracy": 100 * metrics["mean_class_accuracy"], "samples_per_s": speed,
            "params_m": params / 1e6}


def _table(rows: list[dict], cols: list[str], reference: str, key: str, labels: dict) -> str:
    """mean ± std per model; the last column: beyond the seed spread of ``reference`` or not."""
    from .seeds import format_table, summarise

    return format_table(summarise(rows, cols), cols, reference=reference, key=key, labels=labels)


def real_data(out_root: str, pair: tuple[str, str], seeds, root: str) -> tuple[list[dict], str]:
    """Evaluate every trained segmenter of ``pair`` (all ``seeds``) on the ShapeNetPart root
    ``root``; one row per (model, seed) with its mIoUs (%), and a line naming the shapes and
    the best constant prediction (every point labelled with one part of its category)."""
    from ..engine.evaluate import evaluate_checkpoint
    from .seeds import seed_list

    rows = []
    for seed in seed_list(seeds):
        for model in pair:
            ckpt = Path(out_root) / model / f"seed{seed}" / "last.pt"
            out = Path(out_root) / "real_data" / model / f"seed{seed}"
            m = evaluate_checkpoint(ckpt, data_root=root, out_dir=out)
            rows.append({"variant": model, "seed": seed, "instance_miou": 100 * m["instance_miou"],
                         "class_miou": 100 * m["class_miou"]})
    shapes = ", ".join(f"{k} {m['shapes_per_category'][k]}" for k, v in m["per_category"].items()
                       if v is not None)
    parts, score = constant_baseline(root)
    return rows, (f"Real data `{root}` (test split, shapes per category: {shapes}), models trained on the "
                  f"synthetic data above. Floor: the best constant part per category ({parts}) scores "
                  f"instance mIoU {score:.1f}.")


def constant_baseline(root: str) -> tuple[dict[str, int], float]:
    """The best constant labelling of the test split of ``root``: per category the one part
    that, given to every point of every shape of it, scores best (chosen on these very shapes:
    an optimistic floor). Returns ({category: part id}, instance mIoU %)."""
    import torch

    from ..data import SHAPENET_PART, ShapeNetPart
    from ..engine.tasks.part_segmentation import shape_ious

    ds = ShapeNetPart(root, "test", num_points=None)
    by_cat: dict[int, list] = {}
    for i in range(len(ds)):
        s = ds[i]
        by_cat.setdefault(int(s["category"]), []).append(torch.as_tensor(s["part"]).view(1, -1))
    chosen, ious = {}, []
    for cat, truths in sorted(by_cat.items()):
        ids = torch.tensor([cat])
        scores = {part: [float(shape_ious(torch.full_like(t, part), t, ids)[0]) for t in truths]
                  for part in SHAPENET_PART[cat].parts}
        part = max(scores, key=lambda p: sum(scores[p]))
        chosen[SHAPENET_PART[cat].name] = part
        ious += scores[part]
    return chosen, 100 * sum(ious) / len(ious)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The benchmark's options (``pointabstract bench parts``)."""
    parser.add_argument("--data", default="datasets/synthetic-hard",
                        help="root holding shapenet_part_seg_hdf5_data/ and modelnet40_ply_hdf5_2048/")
    parser.add_argument("--size", choices=sorted(SEG_PAIRS), default="demo", help="model sizes")
    parser.add_argument("--seeds", type=int, default=3, help="runs per model (mean ± std)")
    parser.add_argument("--epochs", type=int, default=2, help="training epochs of every run")
    parser.add_argument("--points", type=int, default=256, help="points per shape")
    parser.add_argument("--batch", type=int, default=32, help="training batch")
    parser.add_argument("--lr", type=float, default=0.003, help="AdamW learning rate (cosine schedule)")
    parser.add_argument("--tasks", nargs="+", choices=("seg", "cls"), default=["seg", "cls"])
    parser.add_argument("--real-data", help="also evaluate the seed-0 Sequoia segmenter on this "
                                            "ShapeNetPart root (e.g. the real Cap subset)")
    parser.add_argument("--real-data-only", action="store_true",
                        help="train nothing: evaluate the segmenters already under --out-root on --real-data")
    parser.add_argument("--out-root", default="runs/bench_parts", help="run directories")
    parser.add_argument("--workers", type=int, default=0, help="DataLoader workers per run")


_LABELS = {"instance_miou": "instance mIoU %", "class_miou": "class mIoU %",
           "overall_accuracy": "overall accuracy %", "mean_class_accuracy": "mean class accuracy %",
           "samples_per_s": "train samples/s",
           "params_m": "params (M)"}


def _paper_line(kind: str) -> str:
    if kind == "seg":
        p = PAPER["seg"]
        return (f"Paper (ShapeNetPart, official sizes): Sequoia {p['sequoia'][0]} / {p['sequoia'][1]}, "
                f"softmax attention {p['softmax'][0]} / {p['softmax'][1]} (instance / class mIoU %).")
    return (f"Paper (ModelNet40): Sequoia {PAPER['cls']['sequoia']}, softmax attention "
            f"{PAPER['cls']['softmax']} (overall accuracy %). The paper's comparison is "
            f"{' vs '.join(CLS_PAIRS['demo'])} (paper size: {' vs '.join(CLS_PAIRS['paper'])}): the same "
            "network with tree or dense softmax attention; self_attention_transformer is a second, "
            "different network (16-NN edge embedding, BatchNorm, 4 blocks, multi-scale fusion).")


def main(args: argparse.Namespace) -> int:
    """Train every pair at every seed, print and write the tables (runs/bench/parts_*)."""
    from .records import check_at_least
    from .seeds import run_seeds, write_results

    for name in ("seeds", "epochs", "points", "batch"):
        check_at_least(f"--{name}", getattr(args, name), 1)
    command = "pointabstract " + " ".join(sys.argv[1:])
    spend = budget(epochs=args.epochs, points=args.points, batch=args.batch, lr=args.lr)
    shared = (f"Same budget for every run: {args.epochs} epochs, {args.points} points, batch {args.batch}, "
              f"AdamW lr {args.lr:g} cosine, data {args.data}; the machine was shared.")
    out_root = f"{args.out_root}/{args.size}"
    if args.real_data_only:
        if not args.real_data:
            raise ValueError("--real-data-only needs --real-data ROOT")
        pair = SEG_PAIRS[args.size]
        real, line = real_data(out_root, pair, args.seeds, args.real_data)
        table = _table(real, ["instance_miou", "class_miou"], pair[1], "instance_miou", _LABELS)
        md, _ = write_results(f"parts_real_{args.size}_{args.seeds}seeds", real, table, command=command,
                              notes=line)
        print(f"{table}\n\n{line}\n\n(also {md})")
        return 0
    jobs = {"seg": (run_seg, SEG_PAIRS, {}, ["instance_miou", "class_miou"]),
            "cls": (run_cls, CLS_PAIRS, CLS_EXTRA, ["overall_accuracy", "mean_class_accuracy"])}
    for kind in args.tasks:
        run_one, pairs, extra, metrics = jobs[kind]
        pair = pairs[args.size]

        def one(model, seed, run_one=run_one):
            return run_one(model, seed, root=args.data, train_budget=spend, out_root=out_root,
                           workers=args.workers, model_args=MODEL_ARGS[args.size].get(model))

        rows = run_seeds([*pair, *extra.get(args.size, ())], one, seeds=args.seeds)
        cols = [*metrics, "samples_per_s", "params_m"]
        table = _table(rows, cols, pair[1], metrics[0], _LABELS)
        notes = f"{shared} {_paper_line(kind)}"
        if kind == "seg" and args.real_data:
            real, line = real_data(out_root, pair, args.seeds, args.real_data)
            notes += ("\n\n" + line + "\n\n"
                      + _table(real, ["instance_miou", "class_miou"], pair[1], "instance_miou", _LABELS))
        md, _ = write_results(f"parts_{kind}_{args.size}_{args.seeds}seeds", rows, table, command=command,
                              notes=notes)
        print(f"## {kind}\n\n{table}\n\n{notes}\n\n(also {md})", flush=True)
    return 0
