"""Tiny trained runs of the three tasks on the tiny synthetic set (16 test shapes of 64 points,
part-labelled), and their browser pages, shared by the browser viewer's tests (built once per session)."""

from __future__ import annotations

from pathlib import Path

from tests.viz._capsule_runs import tiny_ae_run

_RUNS: dict[str, tuple[Path, Path]] = {}
_PAGES: dict[str, Path] = {}


def tiny_runs(tmp_path_factory) -> dict[str, tuple[Path, Path]]:
    """{task: (last.pt, data root)} of 1-epoch tiny runs of the three tasks."""
    from pointabstract.engine import load_config, train
    from tests.fixtures import tiny_model, write_tiny_synthetic

    if not _RUNS:
        root = tmp_path_factory.mktemp("html_runs")
        data = write_tiny_synthetic(root / "data")
        common = [f"data.root={data}", "data.num_points=64", "data.batch_size=16", "data.workers=0",
                  "optim.epochs=1", "log.progress=false", "log.tensorboard=false"]
        train(load_config(None, [*common, "data.dataset=modelnet40", f"log.out_dir={root / 'cls'}", *tiny_model("centroid_transformer")]))
        train(load_config(None, [*common, "model=sequoia_seg", f"log.out_dir={root / 'seg'}",
                                 "data.dataset=shapenet_part", *tiny_model("sequoia_seg")]))
        _RUNS["classification"] = (root / "cls" / "last.pt", data)
        _RUNS["part_segmentation"] = (root / "seg" / "last.pt", data)
        _RUNS["reconstruction"] = tiny_ae_run(tmp_path_factory)
    return _RUNS


def tiny_pages(tmp_path_factory) -> dict[str, Path]:
    """{task: viewer.html} of :func:`tiny_runs`, 16 shapes each, written by ``view --html``."""
    from pointabstract.cli import main

    if not _PAGES:
        out = tmp_path_factory.mktemp("html_pages")
        for task, (ckpt, _) in tiny_runs(tmp_path_factory).items():
            page = out / f"{task}.html"
            assert main(["view", str(ckpt), "--html", str(page)]) == 0
            _PAGES[task] = page
    return _PAGES
