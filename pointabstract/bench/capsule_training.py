"""The training columns of ``pointabstract bench capsules``: one seeded training run of a
point-capsule autoencoder through the engine (:func:`~pointabstract.engine.train` with a step
budget, the loop every user trains with), then what it learned.

Per run (:func:`train_run`), in its own run folder: test Chamfer distance, F-score and mean
capsule part purity on the ShapeNetPart-layout test split (the reconstruction task's final
evaluation, BatchNorm statistics recomputed at the final weights, as ``metrics.json`` records
it); then, from the ``last.pt`` it wrote (:func:`~pointabstract.engine.restore`), the
capsule-by-part table (which part of the test airplanes each capsule's decoded points fall in,
Fig. 5 of the Centroid Transformers paper) and a linear probe:
:func:`~.linear_probe.fit_linear_svc` on the frozen, flattened latent capsules of a fixed
subset of the classification split (the ModelNet40 layout of the same root), accuracy on a
subset of its test split.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from .capsule_models import model_name, model_overrides

__all__ = ["capsule_part_table", "category_part_counts", "encode_capsules", "run_config", "train_run"]

_FOREVER = 10**6  # epochs, decay interval and evaluation interval of a step-budget run (never reached)


def _subset(ds, count: int, seed: int = 0):
    """A fixed random subset of ``count`` samples (all when ``count`` <= 0 or larger)."""
    if count <= 0 or count >= len(ds):
        return ds
    order = torch.randperm(len(ds), generator=torch.Generator().manual_seed(seed))[:count]
    return torch.utils.data.Subset(ds, sorted(order.tolist()))


def run_config(caps: int, routing: str, seed: int, *, steps: int, data: str, points: int, out: str | Path,
               batch: int = 8, lr: float = 1e-3, bn_batches: int = 20, tiny: bool = False):
    """The engine run of one training column: ``steps`` Adam steps at a constant ``lr`` of
    ``batch`` clouds (``points`` each) of the ShapeNetPart layout under ``data``, evaluated
    once at the end, into ``out``."""
    from ..engine import load_config

    return load_config(None, {
        "model": model_name(caps, routing), "task": "reconstruction", "seed": seed, "device": "cpu",
        "data.dataset": "shapenet_part", "data.root": str(data), "data.num_points": points,
        "data.batch_size": batch, "data.eval_batch_size": 16, "data.workers": 0,
        "optim.optimizer": "adam", "optim.lr": lr, "optim.schedule": "step", "optim.step_size": _FOREVER,
        "optim.epochs": _FOREVER, "optim.max_steps": steps, "log.eval_every": _FOREVER,
        "log.out_dir": str(out), "log.progress": False, "log.tensorboard": False,
        "task.bn_batches": bn_batches, "task.examples": 0, **model_overrides(caps, routing, tiny=tiny)})


@torch.no_grad()
def encode_capsules(model, ds, *, batch: int = 32) -> tuple[torch.Tensor, torch.Tensor]:
    """Frozen latent capsules of every sample of ``ds``: features (S, L * D'), labels (S,)."""
    from ..data import collate

    model.eval()
    feats, labels = [], []
    for b in torch.utils.data.DataLoader(ds, batch_size=batch, collate_fn=collate):
        feats.append(model(b["pos"])["capsules"].flatten(1))
        labels.append(b["label"])
    return torch.cat(feats), torch.cat(labels)


@torch.no_grad()
def category_part_counts(model, ds, category: str) -> dict:
    """Decoded points of each capsule in each part of ``category`` over its shapes in ``ds``.

    Returns:
        ``{"category", "shapes", "parts": part names, "counts": (L, parts) nested list}``.
    """
    from ..data import SHAPENET_PART, collate
    from ..engine.metrics import capsule_purity

    cat = next(i for i, c in enumerate(SHAPENET_PART) if c.name == category)
    mine = [ds[i] for i in range(len(ds)) if int(ds[i]["category"]) == cat]
    info = SHAPENET_PART[cat]
    if not mine:
        return {"category": category, "shapes": 0, "parts": list(info.part_names), "counts": []}
    b = collate(mine)
    model.eval()
    out = model(b["pos"])
    _, counts = capsule_purity(out["points"], b["pos"], b["part"], out["capsule_index"],
                               num_parts=max(info.parts) + 1)
    table = counts.sum(0)[:, list(info.parts)]  # (L, parts of the category)
    return {"category": category, "shapes": len(mine), "parts": list(info.part_names),
            "counts": table.tolist()}


def capsule_part_table(parts: dict) -> list[str]:
    """Markdown: one row per capsule, the share of its decoded points in each part (``parts``
    from :func:`category_part_counts`) and its majority share."""
    counts = torch.tensor(parts["counts"], dtype=torch.float64)
    lines = ["| capsule | " + " | ".join(parts["parts"]) + " | majority share |",
             "|---:|" + "---:|" * (len(parts["parts"]) + 1)]
    for cap, row in enumerate(counts):
        total = float(row.sum())
        if total > 0:
            cells = [f"{v / total:.0%}" for v in row.tolist()]
            lines.append(f"| {cap} | " + " | ".join(cells) + f" | {row.max() / total:.0%} |")
    return lines


def train_run(caps: int, routing: str, seed: int, *, steps: int, data: str, points: int, out: str | Path,
              batch: int = 8, lr: float = 1e-3, probe_train: int = 200, probe_test: int = 100,
              bn_batches: int = 20, table_category: str = "Airplane", tiny: bool = False) -> dict:
    """Train (:func:`run_config`, into the run folder ``out``, replacing the benchmark's earlier
    run there), then measure (module docstring). ``probe_train`` 0 skips the probe;
    ``table_category``: the category of the capsule-by-part table.

    Returns:
        ``{"cd_e3", "fscore", "purity", "probe_acc"?, "train_s"`` (the epochs' training time,
        evaluation left out), ``"steps", "capsule_parts"`` (all test shapes, the reconstruction
        task's), ``"category_parts"`` (one category)``}``.
    """
    from ..engine import restore, train

    cfg = run_config(caps, routing, seed, steps=steps, data=data, points=points, out=out, batch=batch, lr=lr,
                     bn_batches=bn_batches, tiny=tiny)
    metrics = train(cfg, overwrite=True)  # the benchmark's own run folder
    log = [json.loads(line) for line in (Path(out) / "metrics.jsonl").read_text().splitlines()]
    test = restore(Path(out) / "last.pt", data_root=data)
    row = {"cd_e3": metrics["chamfer"] * 1e3, "fscore": metrics["fscore"], "purity": metrics["purity"],
           "train_s": sum(r["epoch_s"] for r in log), "steps": log[-1]["step"],
           "capsule_parts": metrics["capsule_parts"],
           "category_parts": category_part_counts(test.model, test.dataset, table_category)}
    if probe_train > 0:
        row["probe_acc"] = _probe(Path(out) / "last.pt", data, probe_train, probe_test)
    return row


def _probe(last: Path, data: str, count_train: int, count_test: int) -> float:
    """Linear-probe accuracy of the latent capsules of the model in ``last`` on the classification
    split (ModelNet40 layout) of ``data``: fitted on ``count_train`` shapes, scored on ``count_test``."""
    from ..engine import restore
    from .linear_probe import probe_accuracy

    features = []
    for split, count in (("train", count_train), ("test", count_test)):
        run = restore(last, data_root=data, split=split, overrides={"data.dataset": "modelnet40"})
        features += encode_capsules(run.model, _subset(run.dataset, count))
    return probe_accuracy(*features)
