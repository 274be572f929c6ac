"""The training columns of ``pointabstract bench capsules``: one seeded training run of a
point-capsule autoencoder for a fixed number of steps, then what it learned.

Per run (:func:`train_run`): test Chamfer distance and F-score on a fixed subset of the
ShapeNetPart-layout test split (the reconstruction task's metrics, BatchNorm statistics
recomputed at the final weights as in training), the mean capsule part purity and the
capsule-by-part table (which part of the test airplanes each capsule's decoded points fall
in, Fig. 5 of the Centroid Transformers paper), and a linear probe:
:func:`~.linear_probe.fit_linear_svc` on the frozen, flattened latent capsules of a fixed
subset of the classification split (the
ModelNet40 layout of the same root), accuracy on a subset of its test split.
"""

from __future__ import annotations

import contextlib
import time
from types import SimpleNamespace

import torch

from .capsule_models import build

__all__ = ["capsule_part_table", "category_part_counts", "encode_capsules", "train_run"]


def _subset(ds, count: int, seed: int = 0):
    """A fixed random subset of ``count`` samples (all when ``count`` <= 0 or larger)."""
    if count <= 0 or count >= len(ds):
        return ds
    order = torch.randperm(len(ds), generator=torch.Generator().manual_seed(seed))[:count]
    return torch.utils.data.Subset(ds, sorted(order.tolist()))


def _task(dataset: str, root: str, points: int, batch: int, seed: int, bn_batches: int):
    from ..engine.config import DataConfig
    from ..engine.tasks.reconstruction import ReconstructionSettings, ReconstructionTask

    data = DataConfig(dataset=dataset, root=root, num_points=points, batch_size=batch, workers=0)
    cfg = SimpleNamespace(data=data, seed=seed,
                          task_config=lambda: ReconstructionSettings(bn_batches=bn_batches, examples=0))
    return ReconstructionTask(cfg)


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
    from ..engine.tasks.reconstruction import capsule_purity

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


def train_run(caps: int, routing: str, seed: int, *, steps: int, data: str, points: int, batch: int = 8,
              lr: float = 1e-3, test_shapes: int = 100, probe_train: int = 200, probe_test: int = 100,
              bn_batches: int = 20, table_category: str = "Airplane", tiny: bool = False) -> dict:
    """Train ``steps`` Adam steps of ``batch`` clouds (``points`` each) on the ShapeNetPart layout
    under ``data``, then measure (module docstring). ``probe_train`` 0 skips the probe;
    ``table_category``: the category of the capsule-by-part table.

    Returns:
        ``{"cd_e3", "fscore", "purity", "probe_acc"?, "train_s", "steps", "capsule_parts"`` (all
        test shapes, the reconstruction task's), ``"category_parts"`` (one category)``}``.
    """
    from ..data import collate

    task = _task("shapenet_part", data, points, batch, seed, bn_batches)
    train, test = task.dataset("train", train=True), task.dataset("test", train=False)
    torch.manual_seed(seed)
    model = build(caps, routing, tiny=tiny)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(seed)
    done, epoch, started = 0, 0, time.perf_counter()
    while done < steps:
        train.set_epoch(epoch)
        for b in torch.utils.data.DataLoader(train, batch_size=batch, shuffle=True, generator=gen,
                                             collate_fn=collate, drop_last=True):
            opt.zero_grad()
            task.step(model, b, torch.device("cpu"))[0].backward()
            opt.step()
            done += 1
            if done >= steps:
                break
        epoch += 1
    train_s = time.perf_counter() - started
    loader = torch.utils.data.DataLoader(_subset(test, test_shapes), batch_size=16, collate_fn=collate)
    metrics = task.evaluate(model, loader, torch.device("cpu"), autocast=contextlib.nullcontext)
    out = {"cd_e3": metrics["chamfer"] * 1e3, "fscore": metrics["fscore"], "purity": metrics["purity"],
           "train_s": train_s, "steps": done, "capsule_parts": metrics["capsule_parts"],
           "category_parts": category_part_counts(model, _subset(test, test_shapes), table_category)}
    if probe_train > 0:
        from .linear_probe import probe_accuracy

        cls = _task("modelnet40", data, points, batch, seed, 0)
        fx, fy = encode_capsules(model, _subset(cls.dataset("train", train=False), probe_train))
        tx, ty = encode_capsules(model, _subset(cls.dataset("test", train=False), probe_test))
        out["probe_acc"] = probe_accuracy(fx, fy, tx, ty)
    return out
