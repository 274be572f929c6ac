"""A checkpoint rebuilt for prediction, with no dataset on disk: the model, its task and the
names of what it predicts, all read from the checkpoint or from a folder it was exported to
(``config.json`` + ``model.safetensors``, :mod:`pointabstract.engine.pretrained`), which
:meth:`Trained.save_pretrained` writes.

:func:`pointabstract.engine.restore` also opens the training dataset (``eval``, the viewer and
the benchmarks need it); this reads the same checkpoint keys (``config``, ``model``,
``task_state``) and builds the same model, without it. What each task takes from
``task_state``:

- classification: ``class_names`` (written by every classification run; checkpoints written
  before ``task_state`` existed kept them at the top level under the same key). A checkpoint
  with neither gets the names of the dataset registry for ``data.dataset`` (ModelNet40 /
  ModelNet10, :mod:`pointabstract.data.categories`).
- part segmentation: ``categories``, the ShapeNetPart categories trained on (empty: all 16);
  part ids and names come from :data:`~pointabstract.data.SHAPENET_PART`.
- reconstruction: ``category_names`` (only shown, never needed).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from ..data import MODELNET10, MODELNET40, SHAPENET_PART
from ..engine.checkpoint import check_finite_weights
from ..engine.config import RunConfig, load_config, to_flat, upgrade_flat
from ..engine.distributed import check_device
from ..engine.pretrained import CONFIG, WEIGHTS, load_model_source, write_pretrained
from ..engine.restored import load_weights
from ..engine.tasks import build_task
from ..models import build_model

__all__ = ["Trained", "checkpoint_file", "load_trained"]

_REGISTRY_CLASSES = {"modelnet40": MODELNET40, "modelnet10": MODELNET10}


@dataclass
class Trained:
    """A trained model with its task, ready to predict (no dataset opened)."""

    model: nn.Module  # on ``device``, in eval mode, weights loaded
    task: object  # the run's task (engine/tasks), its names set from the checkpoint
    config: RunConfig  # the checkpoint's config
    checkpoint: dict  # the raw checkpoint
    path: Path
    device: torch.device

    @property
    def names(self) -> list[str]:
        """Class names (classification), trained categories (part segmentation) or the training
        data's categories (reconstruction; may be empty)."""
        return list(getattr(self.task, {"classification": "class_names", "part_segmentation": "categories",
                                         "reconstruction": "category_names"}[self.config.task]))

    def save_pretrained(self, out: str | Path, *, overwrite: bool = False) -> Path:
        """Write the model as ``out/config.json`` + ``out/model.safetensors`` (no optimiser, no pickle),
        which :func:`load_trained` / ``pointabstract.load(out)`` read back to the same outputs.

        Raises:
            FileExistsError: ``out`` is a file, holds other files, or holds an export and not ``overwrite``.
        """
        from .. import __version__
        from .prepare import training_frame

        cfg, ckpt = self.config, self.checkpoint
        source = {"checkpoint": self.path.name, "epoch": ckpt.get("epoch"), "step": ckpt.get("step"),
                  "best_metric": ckpt.get("best_metric")}
        meta = {"pointabstract_version": __version__, "model": cfg.model, "task": cfg.task,
                "config": to_flat(cfg), "names": self.names, "task_state": self.task.state(),
                "normalization": {"frame": training_frame(cfg), "num_points": cfg.data.num_points,
                                  "use_normals": cfg.data.use_normals},
                "source": {k: v for k, v in source.items()
                           if isinstance(v, (int, str)) or isinstance(v, float) and math.isfinite(v)}}
        return write_pretrained(out, self.model.state_dict(), meta, overwrite=overwrite)


def checkpoint_file(path: str | Path) -> Path:
    """``path`` itself (a checkpoint, or a folder written by ``pointabstract export``), or for a
    run folder (a ``log.out_dir``) its ``last.pt``.

    Raises:
        FileNotFoundError: a folder that is neither an export nor holds ``last.pt``, naming what it
            holds.
    """
    path = Path(path)
    exported = any((path / name).is_file() for name in (CONFIG, WEIGHTS))
    if not path.is_dir() or exported:
        return path
    if (path / "last.pt").is_file():
        return path / "last.pt"
    held = sorted(p.name for p in path.glob("*.pt"))
    raise FileNotFoundError(f"{path} is a folder without last.pt (a run folder holds the last.pt and best.pt "
                            f"that `pointabstract train` writes) and not an exported model (config.json + "
                            f"model.safetensors); its checkpoints: {held or 'none'}")


def load_trained(path: str | Path, *, device: str | torch.device = "cpu") -> Trained:
    """Rebuild the model saved in ``path`` (a checkpoint, a run folder: its ``last.pt``, or a
    folder written by :meth:`Trained.save_pretrained` / ``pointabstract export``) for prediction.

    Raises:
        FileNotFoundError: no such checkpoint, a folder without ``last.pt`` that is no export.
        ValueError: not a pointabstract checkpoint, NaN weights, a config this version cannot
            read, weights that do not fit the model of its config, no class names.
    """
    path = checkpoint_file(path)
    ckpt = load_model_source(path)
    check_finite_weights(ckpt["model"], str(path))
    dev = check_device(device)
    try:
        cfg = load_config(None, upgrade_flat(dict(ckpt["config"])))
    except ValueError as err:
        raise ValueError(f"{path} was written with a config this version cannot read: {err}") from None
    task = build_task(cfg)
    _adopt_names(task, cfg, _task_state(ckpt), path)
    model = build_model(cfg.model, **{**cfg.model_args, **task.model_args()})
    load_weights(model, ckpt["model"], f"{path} does not fit a '{cfg.model}' model built from its own "
                                       "config (written by another version of the code?)")
    return Trained(model.to(dev).eval(), task, cfg, ckpt, Path(path), dev)


def _task_state(ckpt: dict) -> dict:
    """The checkpoint's ``task_state`` (older checkpoints: a top-level ``class_names``)."""
    if "task_state" in ckpt:
        return dict(ckpt["task_state"])
    return {"class_names": ckpt["class_names"]} if "class_names" in ckpt else {}


def _adopt_names(task, cfg: RunConfig, state: dict, path) -> None:
    """Set on ``task`` the names its dataset would have set (see the module docstring)."""
    if cfg.task == "classification":
        task.class_names = class_names(state, cfg, path)
    elif cfg.task == "part_segmentation":
        chosen = state.get("categories") or list(cfg.task_config().categories)
        task.categories = list(chosen) or [c.name for c in SHAPENET_PART]
    else:
        task.category_names = list(state.get("category_names", []))


def class_names(state: dict, cfg: RunConfig, path) -> list[str]:
    """A classifier's class names: the checkpoint's ``class_names``, else the dataset registry's
    names for ``data.dataset``; ValueError naming ``path`` when neither has them."""
    if state.get("class_names"):
        return [str(n) for n in state["class_names"]]
    if cfg.data.dataset in _REGISTRY_CLASSES:
        return list(_REGISTRY_CLASSES[cfg.data.dataset])
    raise ValueError(f"{path} stores no class names (no task_state['class_names']) and its dataset "
                     f"{cfg.data.dataset!r} has no built-in class list; retrain it with this version")
