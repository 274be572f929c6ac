"""Typed run configuration, filled from YAML presets plus ``key=value`` overrides.

A preset is one mapping (no inheritance) of dotted keys: top-level keys of
:class:`RunConfig` (``model``, ``task``, ``seed``, ...), ``data.*``, ``optim.*``, ``log.*``,
``model.*`` for the fields of the chosen model's config dataclass and ``task.*`` for the fields
of the task's settings dataclass (e.g. ``task.votes`` for classification). Nested mappings are the
same keys written as a tree (``data: {root: x}`` is ``data.root: x``; under ``model:`` or ``task:``
the key ``name`` is the model or task itself), read by :mod:`pointabstract.engine.presets`.
Command-line overrides use the same keys (``optim.lr=3e-4 model.k=16``); values are parsed as YAML
scalars / lists (numbers, true / false, null, ``[0.8, 1.2]``), and a value YAML reads as text is
taken exactly as typed, so ``log.out_dir=runs/exp #1`` or ``data.root=C:/data`` keep their ``#`` and ``:``
(see :func:`parse_override`). Unknown keys are an error naming them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from .. import _validate as V
from ..models import MODELS, model_config, model_task
from .presets import PRESETS, flatten_preset, model_preset, parse_override, preset_path, read_preset

__all__ = ["PRESETS", "DataConfig", "LogConfig", "OptimConfig", "RunConfig", "check_config", "flatten_preset",
           "load_config", "parse_override", "preset_path", "read_preset", "to_flat", "upgrade_flat"]


@dataclass
class DataConfig:
    dataset: str = "modelnet40"  # which loader reads data.root (the task lists its choices)
    root: str = "datasets/synthetic"  # folder holding one of the dataset's layouts
    num_points: int | str = 1024  # points per shape fed to the model; "all": every stored point, clouds
    #                               of their own sizes padded with lengths (classification, part_segmentation)
    sampling: str = "random"  # training subset of the stored points: first | random | fps
    use_normals: bool = False  # feed normals as extra per-point features
    batch_size: int = 32  # global training batch, split evenly over the DDP processes
    eval_batch_size: int = 64  # per process (does not change the metrics)
    workers: int = 2  # DataLoader worker processes
    test_fraction: float = 0.2  # dataset=folder without train/test folders or lists: share of each
    #                             class held out for test (seeded split, written to split.json)


@dataclass
class OptimConfig:
    epochs: int = 250  # training epochs
    max_steps: int = 0  # also stop after this many optimizer steps, mid-epoch (0: no step budget)
    optimizer: str = "adam"  # adam | adamw
    lr: float = 1e-3  # initial learning rate
    weight_decay: float = 0.0  # decoupled for adamw, L2 for adam
    schedule: str = "step"  # step (x gamma every step_size epochs) | cosine (to 0 at the end)
    schedule_every: str = "epoch"  # when the schedule advances: epoch | step (each optimizer step:
    #                                step_size counts steps, cosine spans the run's steps)
    step_size: int = 20  # epochs (or steps, see schedule_every) between decays of the step schedule
    gamma: float = 0.7  # decay factor of the step schedule
    grad_clip: float = 0.0  # max gradient norm (0: off)


@dataclass
class LogConfig:
    out_dir: str = "runs/train"  # checkpoints, config.yaml, metrics.jsonl, plots
    eval_every: int = 1  # epochs between evaluations (the last epoch is always evaluated)
    tensorboard: bool = True  # also write TensorBoard events under out_dir/tb
    progress: bool = True  # progress bars


@dataclass
class RunConfig:
    model: str = "centroid_transformer"  # registry name (pointabstract.models.MODELS)
    task: str = ""  # what to train; empty: the task the model serves (ModelSpec.task)
    seed: int = 0  # model init, data order and augmentation
    device: str = "auto"  # auto | cpu | cuda | cuda:N
    amp: bool = True  # mixed precision (bfloat16 autocast) on CUDA; ignored on CPU
    sync_bn: bool = True  # DDP: BatchNorm statistics over the global batch (false: per process)
    data: DataConfig = field(default_factory=DataConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    log: LogConfig = field(default_factory=LogConfig)
    model_args: dict = field(default_factory=dict)  # the "model.*" keys
    task_args: dict = field(default_factory=dict)  # the "task.*" keys

    def model_config(self, **fixed):
        """The model's config dataclass: registry defaults, then ``model.*`` keys, then ``fixed``."""
        return model_config(self.model, **{**self.model_args, **fixed})

    def task_config(self):
        """The task's settings dataclass filled from the ``task.*`` keys."""
        from .tasks import task_class

        return task_class(self.task).settings(**self.task_args)


_SECTIONS = {"data": DataConfig, "optim": OptimConfig, "log": LogConfig}
_ARGS = ("model_args", "task_args")


def load_config(preset: str | Path | None = None, overrides: list[str] | dict | None = None) -> RunConfig:
    """Build a RunConfig from a preset (file, preset name or registry model name) and overrides
    (``["k=v", ...]`` or a dict, flat or nested)."""
    flat = {}
    if preset is not None and not Path(str(preset)).is_file() and str(preset) in MODELS \
            and not (PRESETS / f"{preset}.yaml").is_file():
        flat = model_preset(str(preset))
    elif preset is not None:
        flat = read_preset(preset_path(str(preset)))
    if isinstance(overrides, dict):
        flat.update(flatten_preset(overrides, source="overrides"))
    else:
        for item in overrides or []:
            if "=" not in item:
                raise ValueError(f"override {item!r} must look like key=value")
            key, value = item.split("=", 1)
            flat[key.strip()] = parse_override(key.strip(), value)
    return _from_flat(flat)


def _from_flat(flat: dict) -> RunConfig:
    top = {f.name: f for f in dataclasses.fields(RunConfig) if f.name not in (*_SECTIONS, *_ARGS)}
    cfg = RunConfig()
    unknown = []
    for key, value in flat.items():
        section, _, name = key.partition(".")
        if not name and key in top:
            setattr(cfg, key, _coerce(key, top[key], value))
        elif section in _SECTIONS and name:
            fields = {f.name: f for f in dataclasses.fields(_SECTIONS[section])}
            if name in fields:
                setattr(getattr(cfg, section), name, _coerce(key, fields[name], value))
            else:
                unknown.append(key)
        elif section in ("model", "task") and name:
            getattr(cfg, f"{section}_args")[name] = value
        else:
            unknown.append(key)
    if unknown:
        valid = sorted([*top, *(f"{s}.{f.name}" for s, c in _SECTIONS.items() for f in dataclasses.fields(c)),
                        "model.<field of the model's config>", "task.<field of the task's settings>"])
        raise ValueError(f"unknown config key(s) {sorted(unknown)}; valid keys: {valid}")
    if cfg.model not in MODELS:
        raise ValueError(f"unknown model '{cfg.model}'; choose from {sorted(MODELS)}")
    served = model_task(cfg.model)
    if not cfg.task:
        cfg.task = served
    elif cfg.task != served:
        raise ValueError(f"model '{cfg.model}' serves the '{served}' task, the config asks for "
                         f"task '{cfg.task}'")
    model_cfg = cfg.model_config()  # validates the model.* keys (naming unknown ones)
    types = {f.name: f for f in dataclasses.fields(model_cfg)}
    cfg.model_args = {k: _coerce(f"model.{k}", types[k], v) for k, v in cfg.model_args.items()}
    from .tasks import task_class

    settings = task_class(cfg.task).settings
    types = {f.name: f for f in dataclasses.fields(settings)}
    unknown = sorted(set(cfg.task_args) - set(types))
    if unknown:
        raise ValueError(f"unknown config key(s) {[f'task.{k}' for k in unknown]} for the '{cfg.task}' "
                         f"task; valid keys: {sorted(f'task.{k}' for k in types)}")
    cfg.task_args = {k: _coerce(f"task.{k}", types[k], v) for k, v in cfg.task_args.items()}
    check_config(cfg)
    return cfg


def check_config(cfg: RunConfig) -> None:
    """The one place where the values of the typed sections are checked (types are checked as
    they are read): a ValueError naming the key, the rule and what arrived, in the wording of
    :mod:`pointabstract._validate`."""
    import re

    d, o, g = cfg.data, cfg.optim, cfg.log
    if re.fullmatch(r"auto|cpu|cuda(:\d+)?", str(cfg.device)) is None:
        raise ValueError(f"device must be auto, cpu, cuda or cuda:N, got {cfg.device!r}")
    V.check_int("seed", cfg.seed, low=0)
    if d.num_points == "all" and cfg.task == "reconstruction":
        raise ValueError("data.num_points=all is for classification and part_segmentation: reconstruction "
                         "scores clouds of one size; set data.num_points to a number")
    if isinstance(d.num_points, str) and d.num_points != "all":
        raise ValueError(f"data.num_points must be a positive int or 'all' (every stored point), got "
                         f"{d.num_points!r}")
    if d.num_points != "all":
        V.check_int("data.num_points", d.num_points, low=1)
    for key, value in (("data.batch_size", d.batch_size),
                       ("data.eval_batch_size", d.eval_batch_size), ("optim.epochs", o.epochs),
                       ("optim.step_size", o.step_size), ("log.eval_every", g.eval_every)):
        V.check_int(key, value, low=1)
    V.check_int("data.workers", d.workers, low=0)
    V.check_int("optim.max_steps", o.max_steps, low=0, note=" (0: no step budget)")
    V.check_choice("data.sampling", d.sampling, ("first", "random", "fps"))
    V.check_choice("optim.optimizer", o.optimizer, ("adam", "adamw"))
    V.check_choice("optim.schedule", o.schedule, ("step", "cosine"))
    V.check_choice("optim.schedule_every", o.schedule_every, ("epoch", "step"))
    V.check_float("data.test_fraction", d.test_fraction, low=0.0, low_open=True, high=1.0, high_open=True)
    V.check_positive("optim.lr", o.lr)
    V.check_float("optim.weight_decay", o.weight_decay, low=0.0)
    V.check_float("optim.gamma", o.gamma, low=0.0, low_open=True, high=1.0)
    V.check_float("optim.grad_clip", o.grad_clip, low=0.0)  # 0: off
    if not str(g.out_dir).strip():
        raise ValueError(f"log.out_dir must be a folder, got {g.out_dir!r}")


# keys of checkpoints written before task settings had their own section
_LEGACY_KEYS = {"votes": "task.votes", "data.augment": "task.augment",
                "optim.label_smoothing": "task.label_smoothing"}


def upgrade_flat(flat: dict) -> dict:
    """A saved flat config in today's keys (older checkpoints kept task settings elsewhere)."""
    return {_LEGACY_KEYS.get(k, k): v for k, v in flat.items()}


def _coerce(key: str, fld: dataclasses.Field, value):
    """Check / convert a YAML value for a dataclass field (lists become tuples, ints floats)."""
    default = fld.default if fld.default is not dataclasses.MISSING else None
    hint = fld.type if isinstance(fld.type, str) else getattr(fld.type, "__name__", "")
    if isinstance(default, bool) or hint == "bool":
        if not isinstance(value, bool):
            raise ValueError(f"{key} must be true or false, got {value!r}")
        return value
    if isinstance(default, tuple):
        if not isinstance(value, (list, tuple)):
            raise ValueError(f"{key} must be a list like {list(default)}, got {value!r}")
        kinds = {type(v) for v in default}
        fits = all(type(v) in kinds or (float in kinds and type(v) is int) for v in value)
        if len(kinds) == 1 and not fits:
            raise ValueError(f"{key} must be a list of {kinds.pop().__name__}s like {list(default)}, "
                             f"got {value!r}")
        # the models' int lists (widths, encoder_dims, head_dims) are layer sizes: a size < 1
        # builds empty layers (a warning) or fails deep in torch (a traceback)
        if key.startswith("model.") and kinds == {int} and any(v < 1 for v in value):
            raise ValueError(f"{key} must list layer sizes >= 1 like {list(default)}, got {list(value)}")
        return tuple(value)
    if isinstance(default, float) and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(default, float) and isinstance(value, str):  # YAML 1.1 reads 3e-4 as a string
        try:
            return float(value)
        except ValueError:
            pass
    if isinstance(value, str) and "str" in str(fld.type).split(" | "):  # e.g. num_points: int | str
        return value
    if default is not None and not isinstance(default, tuple) and not isinstance(value, type(default)) \
            and not (value is None and "None" in str(fld.type)):
        kind = type(default).__name__
        raise ValueError(f"{key} must be {'an' if kind[0] in 'aeiou' else 'a'} {kind}, got {value!r}")
    return value


def to_flat(cfg: RunConfig) -> dict:
    """The resolved config as one flat mapping (what ``config.yaml`` beside a checkpoint holds)."""
    flat = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)
            if f.name not in (*_SECTIONS, *_ARGS)}
    for section in _SECTIONS:
        for key, value in dataclasses.asdict(getattr(cfg, section)).items():
            flat[f"{section}.{key}"] = value
    for key, value in dataclasses.asdict(cfg.model_config()).items():
        flat[f"model.{key}"] = list(value) if isinstance(value, tuple) else value
    for key, value in dataclasses.asdict(cfg.task_config()).items():
        flat[f"task.{key}"] = list(value) if isinstance(value, tuple) else value
    return flat
