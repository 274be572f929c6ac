"""Tiny trained capsule autoencoders shared by the capsule viewer tests (trained once per session)."""

from __future__ import annotations

from pathlib import Path

_RUNS: dict[tuple[str, str], tuple[Path, Path]] = {}


def tiny_ae_run(tmp_path_factory, routing: str = "ca", dataset: str = "shapenet_part") -> tuple[Path, Path]:
    """(last.pt, data root) of a 1-epoch tiny ``capsule_ae_demo_<routing>`` on the smallest
    built-in synthetic set (16 test shapes of 64 points; ShapeNetPart layout: part-labelled)."""
    from pointabstract.engine import load_config, train
    from tests.fixtures import tiny_model, write_tiny_synthetic

    key = (routing, dataset)
    if key not in _RUNS:
        root = tmp_path_factory.mktemp(f"ae_{routing}_{dataset}")
        data = write_tiny_synthetic(root / "data")
        overrides = [f"model=capsule_ae_demo_{routing}", "task=reconstruction", f"data.dataset={dataset}",
                     f"data.root={data}", "data.num_points=64", "data.batch_size=8", "data.workers=0",
                     "optim.epochs=1", f"log.out_dir={root / 'run'}", "log.progress=false",
                     "log.tensorboard=false", *tiny_model(f"capsule_ae_demo_{routing}")]
        train(load_config(None, overrides))
        _RUNS[key] = (root / "run" / "last.pt", data)
    return _RUNS[key]
