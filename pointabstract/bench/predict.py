"""Prediction speed: files per second of a classifier over OFF meshes, and one large scan.

Two measurements, end to end through :meth:`pointabstract.predict.Predictor.predict` (reading,
sampling or farthest point sampling, the frame, the model), each the best of ``--repeats``:

- ``--meshes`` OFF meshes of the built-in synthetic shapes (``build_shape``, one per category
  in turn, seeded) written to a temporary folder and predicted as one folder: files per second;
- one cloud of ``--points`` points (area samples of a synthetic mesh) saved as ``.npy`` and
  predicted: seconds, split into preparing (read + FPS to N + frame) and the model.

The checkpoint is ``--checkpoint`` (default ``runs/demo/last.pt``, what ``make demo`` trains).
When it does not exist, the demo preset's classifier is built with untrained weights (same
architecture, N and class count, so the same time; the output says so). Results: printed,
and written to ``--results``/predict.md and predict.json.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from .records import check_at_least, write_records

__all__ = ["add_arguments", "main", "measure"]

COMMAND = "pointabstract bench predict"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--checkpoint", type=Path, default=Path("runs/demo/last.pt"),
                        help="classification checkpoint (default runs/demo/last.pt; absent: the demo "
                             "preset's model with untrained weights)")
    parser.add_argument("--meshes", type=int, default=100, help="OFF meshes predicted as one folder")
    parser.add_argument("--points", type=int, default=1_000_000, help="points of the one large cloud")
    parser.add_argument("--repeats", type=int, default=3, help="timed repeats (best kept) after a warm-up")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--results", type=Path, default=Path("runs/bench"),
                        help="folder of predict.md and predict.json")


def main(args: argparse.Namespace) -> int:
    for option in ("meshes", "points", "repeats"):
        check_at_least(f"--{option}", getattr(args, option), 1)
    from .data import environment

    with tempfile.TemporaryDirectory() as tmp:
        checkpoint, untrained = _checkpoint(args.checkpoint, Path(tmp))
        result = measure(checkpoint, meshes=args.meshes, points=args.points, repeats=args.repeats,
                         device=args.device, folder=Path(tmp))
    result.update(checkpoint=str(args.checkpoint), untrained=untrained, environment=environment(),
                  command=COMMAND)
    text = _markdown(result)
    print(text)
    records = {args.results / "predict.md": text, args.results / "predict.json": json.dumps(result, indent=1)}
    write_records(records, measured=1, what="bench predict")
    print(f"wrote {args.results / 'predict.md'} and predict.json")
    return 0


def measure(checkpoint: Path, *, meshes: int, points: int, repeats: int, device: str, folder: Path) -> dict:
    """The two timings (module docstring) as a dict of numbers."""
    from ..predict import load

    predictor = load(checkpoint, device=device)
    mesh_dir, scan = _inputs(folder, meshes, points)
    predictor.predict(mesh_dir)  # warm-up: kernels, caches
    mesh_seconds = min(_timed(lambda: predictor.predict(mesh_dir)) for _ in range(repeats))
    prepare_s, model_s = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        prepared = predictor.prepare([scan])
        middle = time.perf_counter()
        predictor.run(prepared)
        prepare_s.append(middle - start)
        model_s.append(time.perf_counter() - middle)
    best = int(np.argmin(np.add(prepare_s, model_s)))
    return {"model": predictor.trained.config.model, "num_points": predictor.num_points, "meshes": meshes,
            "mesh_seconds": mesh_seconds, "files_per_second": meshes / mesh_seconds, "scan_points": points,
            "scan_seconds": prepare_s[best] + model_s[best], "scan_prepare_seconds": prepare_s[best],
            "scan_model_seconds": model_s[best], "repeats": repeats}


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _inputs(folder: Path, meshes: int, points: int) -> tuple[Path, Path]:
    """``meshes`` OFF files of synthetic shapes under ``folder/meshes``, and one ``.npy`` cloud."""
    from ..data import SHAPENET_PART, build_shape, sample_surface, write_off

    mesh_dir = folder / "meshes"
    mesh_dir.mkdir()
    rng = np.random.default_rng(0)
    for i in range(meshes):
        vertices, faces, _ = build_shape(i % len(SHAPENET_PART), rng)
        write_off(mesh_dir / f"shape_{i:04d}.off", vertices, faces)
    vertices, faces, _ = build_shape("Chair", rng)
    scan = folder / "scan.npy"
    np.save(scan, sample_surface(vertices, faces, points, rng)[0])
    return mesh_dir, scan


def _checkpoint(path: Path, tmp: Path) -> tuple[Path, bool]:
    """``path``, or (when it does not exist) the demo preset's classifier with untrained weights."""
    if path.is_file():
        return path, False
    from ..data import SYNTHETIC_CLASSES
    from ..engine import atomic_save, load_config, to_flat
    from ..models import build_model

    cfg = load_config("demo", {})
    model = build_model(cfg.model, **cfg.model_args, num_classes=len(SYNTHETIC_CLASSES), in_channels=0)
    state = {"class_names": list(SYNTHETIC_CLASSES)}
    return atomic_save({"model": model.state_dict(), "config": to_flat(cfg), "epoch": 0, "task_state": state},
                       tmp / "demo_untrained.pt"), True


def _markdown(r: dict) -> str:
    weights = " (untrained weights: speed only)" if r["untrained"] else ""
    return "\n".join([
        "# Prediction speed", "", f"`{r['command']}` on {r['environment']}; best of {r['repeats']}.", "",
        f"Model {r['model']} (N = {r['num_points']}) from {r['checkpoint']}{weights}.", "",
        "| input | time | rate |", "|---|---:|---:|",
        f"| {r['meshes']} OFF meshes (read, area-sample N points, classify) | {r['mesh_seconds']:.2f} s | "
        f"{r['files_per_second']:.1f} files/s |",
        f"| one {r['scan_points']:,}-point cloud (.npy): read + FPS to N + frame | "
        f"{r['scan_prepare_seconds']:.2f} s | |",
        f"| the same: model | {r['scan_model_seconds']:.3f} s | |",
        f"| the same: total | **{r['scan_seconds']:.2f} s** | |", ""])
