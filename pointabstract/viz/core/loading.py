"""What every task's viewer session shares: a restored run's test sample as model inputs, and the
checkpoint restored for the tasks a caller can show.

The model is rebuilt by :func:`pointabstract.engine.restore` (as ``eval`` does): the flat config
saved in the checkpoint, the task's dataset (test split, no augmentation, the first
``num_points`` points), the task's model arguments, then the saved weights. Each task's session
(:mod:`..classification.session`, :mod:`..capsules.session`, :mod:`..segmentation.session`)
wraps the restored run; :mod:`..tasks` picks the session of a checkpoint's task.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from ... import _validate as V
from ...engine.config import RunConfig

__all__ = ["checked_item", "cloud_inputs", "not_shown", "restore_run"]


def checked_item(session, index: int, *, noun: str = "samples") -> dict:
    """Sample ``index`` of ``session.dataset`` (a dict of numpy arrays), for any task's session
    (``dataset``, ``split``, ``config``); an index outside the split is a ValueError naming the
    split, its root and its size in ``noun``."""
    n = len(session.dataset)
    V.check_int_in("index", index, 0, n - 1,
                   note=f" (the {session.split} split of {session.config.data.root} has {n} {noun})")
    return session.dataset[int(index)]


def cloud_inputs(item: dict, config: RunConfig) -> tuple[torch.Tensor, torch.Tensor | None]:
    """A dataset sample as model inputs: pos (N, 3) float32, and the normals as features
    (1, N, 3) when the run trained with them (``data.use_normals``), else None."""
    pos = torch.as_tensor(np.asarray(item["pos"]), dtype=torch.float32)
    normal = item.get("normal") if config.data.use_normals else None
    return pos, None if normal is None else torch.as_tensor(np.asarray(normal), dtype=torch.float32)[None]


def not_shown(checkpoint, shown: Sequence[str], task: str) -> ValueError:
    """The error of a ``task`` run given to a caller that shows the ``shown`` tasks."""
    return ValueError(f"{checkpoint}: this shows {' and '.join(shown)} runs; this is a '{task}' run")


def restore_run(checkpoint: str | Path, *, shown: Sequence[str], data_root: str | Path | None = None,
                split: str = "test", device: str = "cpu"):
    """The run saved in ``checkpoint`` restored by :func:`pointabstract.engine.restore` (no data
    workers), refused (:func:`not_shown`) unless its task is one of ``shown``.

    Raises:
        FileNotFoundError: no such checkpoint, or no dataset at the root.
        ValueError: not a checkpoint, classes or weights that do not fit, unknown split, a task
            not in ``shown``.
    """
    from ...engine.restored import restore

    run = restore(checkpoint, data_root=data_root, split=split, device=device,
                  overrides={"data.workers": 0})
    if run.config.task not in shown:
        raise not_shown(checkpoint, shown, run.config.task)
    return run
