"""Tiny trained checkpoints of the three tasks for the predictor tests (trained once per session)."""

from __future__ import annotations

import contextlib
from pathlib import Path

import torch

from tests.fixtures import tiny_model, write_tiny_synthetic

_RUNS: dict[str, Path] = {}


def tiny_runs(tmp_path_factory) -> dict[str, Path]:
    """``{"classification" | "reconstruction" | "part_segmentation": last.pt, "data": root}``: one
    epoch each on the smallest built-in synthetic set (16 test shapes of 64 points), evaluated in
    batches of 8 (so votes run over two batches)."""
    from pointabstract.engine import load_config, train

    if not _RUNS:
        root = tmp_path_factory.mktemp("predict")
        data = write_tiny_synthetic(root / "data")
        common = [f"data.root={data}", "data.workers=0", "optim.epochs=1", "log.progress=false",
                  "log.tensorboard=false", "data.eval_batch_size=8", "data.batch_size=8"]
        runs = {"classification": ["model=centroid_transformer", "data.num_points=48", *tiny_model("centroid_transformer")],
                "reconstruction": ["model=capsule_ae_demo_ca", "task=reconstruction", "data.dataset=shapenet_part",
                                   "data.num_points=64", "task.bn_batches=2", *tiny_model("capsule_ae_demo_ca")],
                "part_segmentation": ["model=sequoia_seg", "data.dataset=shapenet_part", "data.num_points=48",
                                      *tiny_model("sequoia_seg")]}
        for task, overrides in runs.items():
            train(load_config(None, [*common, *overrides, f"log.out_dir={root / task}"]))
            _RUNS[task] = root / task / "last.pt"
        _RUNS["data"] = data
    return _RUNS


def eval_outputs(checkpoint, key: str, *, votes: int | None = None, raw: bool = False):
    """The restored run, and ``model(...)[key]`` of every forward pass the task's own ``evaluate``
    makes over the test split (a hook on the model), in order."""
    from pointabstract.engine import restore
    from pointabstract.engine.trainer import ShardSampler, make_loader

    run = restore(checkpoint, overrides={"data.workers": 0, **({"task.votes": votes} if votes else {})})
    seen = []
    hook = run.model.register_forward_hook(lambda m, i, out: seen.append(out[key].detach().float()))
    loader = make_loader(run.dataset, ShardSampler(len(run.dataset)), run.config.data.eval_batch_size, 0)
    kwargs = {} if run.config.task == "classification" or votes is None else {"votes": votes}
    metrics = run.task.evaluate(run.model, loader, torch.device("cpu"), autocast=contextlib.nullcontext, **kwargs)
    hook.remove()
    if raw:
        run.dataset.transform = None
    return run, seen, metrics
