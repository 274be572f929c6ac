"""Typed run configuration, filled from flat YAML presets plus ``key=value`` overrides.

A preset is one flat mapping (no nesting, no inheritance): top-level keys of
:class:`RunConfig` (``model``, ``task``, ``seed``, ...), ``data.*``, ``optim.*``, ``log.*``,
and ``model.*`` for the fields of the chosen model's config dataclass. Command-line overrides
use the same keys (``optim.lr=3e-4 model.k=16``); values are parsed as YAML scalars / lists.
Unknown keys are an error naming them.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from ..models import MODELS, model_config

__all__ = ["DataConfig", "LogConfig", "OptimConfig", "RunConfig", "load_config", "preset_path",
           "to_flat"]

PRESETS = Path(__file__).resolve().parents[1] / "configs"


@dataclass
class DataConfig:
    dataset: str = "modelnet40"  # modelnet40 | modelnet10
    root: str = "datasets/synthetic"  # folder holding one of the dataset's layouts
    num_points: int = 1024  # points per shape fed to the model
    sampling: str = "random"  # training subset of the stored points: first | random | fps
    use_normals: bool = False  # feed normals as extra per-point features
    augment: str = "scale_translate"  # none | scale_translate | rotate_up (+ scale/translate)
    batch_size: int = 32  # per process
    eval_batch_size: int = 64  # per process
    workers: int = 2  # DataLoader worker processes


@dataclass
class OptimConfig:
    epochs: int = 250  # training epochs
    optimizer: str = "adam"  # adam | adamw
    lr: float = 1e-3  # initial learning rate
    weight_decay: float = 0.0  # decoupled for adamw, L2 for adam
    schedule: str = "step"  # step (x gamma every step_size epochs) | cosine (to 0 at the end)
    step_size: int = 20  # epochs between decays of the step schedule
    gamma: float = 0.7  # decay factor of the step schedule
    label_smoothing: float = 0.0  # cross-entropy label smoothing
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
    task: str = "classification"  # what to train
    seed: int = 0  # model init, data order and augmentation
    device: str = "auto"  # auto | cpu | cuda | cuda:N
    amp: bool = True  # mixed precision (bfloat16 autocast) on CUDA; ignored on CPU
    votes: int = 1  # evaluation: average logits over this many augmented copies
    data: DataConfig = field(default_factory=DataConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    log: LogConfig = field(default_factory=LogConfig)
    model_args: dict = field(default_factory=dict)  # the "model.*" keys

    def model_config(self, **fixed):
        """The model's config dataclass: registry defaults, then ``model.*`` keys, then ``fixed``."""
        return model_config(self.model, **{**self.model_args, **fixed})


_SECTIONS = {"data": DataConfig, "optim": OptimConfig, "log": LogConfig}


def preset_path(name_or_path: str) -> Path:
    """A preset by file path, or by name in pointabstract/configs (``demo`` -> demo.yaml)."""
    path = Path(name_or_path)
    if path.is_file():
        return path
    candidate = PRESETS / f"{name_or_path}.yaml"
    if candidate.is_file():
        return candidate
    names = sorted(p.stem for p in PRESETS.glob("*.yaml"))
    raise FileNotFoundError(f"no config file {name_or_path!r} and no preset of that name; presets: {names}")


def load_config(preset: str | Path | None = None, overrides: list[str] | dict | None = None) -> RunConfig:
    """Build a RunConfig from a preset (file or name) and overrides (``["k=v", ...]`` or a dict)."""
    flat = {}
    if preset is not None:
        text = preset_path(str(preset)).read_text()
        flat = yaml.safe_load(text) or {}
        if not isinstance(flat, dict) or any(isinstance(v, dict) for v in flat.values()):
            raise ValueError(f"{preset}: a preset must be one flat mapping of 'key: value' lines")
    if isinstance(overrides, dict):
        flat.update(overrides)
    else:
        for item in overrides or []:
            if "=" not in item:
                raise ValueError(f"override {item!r} must look like key=value")
            key, value = item.split("=", 1)
            flat[key.strip()] = yaml.safe_load(value)
    return _from_flat(flat)


def _from_flat(flat: dict) -> RunConfig:
    top = {f.name: f for f in dataclasses.fields(RunConfig) if f.name not in (*_SECTIONS, "model_args")}
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
        elif section == "model" and name:
            cfg.model_args[name] = value
        else:
            unknown.append(key)
    if unknown:
        valid = sorted([*top, *(f"{s}.{f.name}" for s, c in _SECTIONS.items() for f in dataclasses.fields(c)),
                        "model.<field of the model's config>"])
        raise ValueError(f"unknown config key(s) {sorted(unknown)}; valid keys: {valid}")
    if cfg.model not in MODELS:
        raise ValueError(f"unknown model '{cfg.model}'; choose from {sorted(MODELS)}")
    model_cfg = cfg.model_config()  # validates the model.* keys (naming unknown ones)
    types = {f.name: f for f in dataclasses.fields(model_cfg)}
    cfg.model_args = {k: _coerce(f"model.{k}", types[k], v) for k, v in cfg.model_args.items()}
    return cfg


def _coerce(key: str, fld: dataclasses.Field, value):
    """Check / convert a YAML value for a dataclass field (lists become tuples, ints floats)."""
    default = fld.default if fld.default is not dataclasses.MISSING else None
    hint = fld.type if isinstance(fld.type, str) else getattr(fld.type, "__name__", "")
    if isinstance(default, bool) or hint == "bool":
        if not isinstance(value, bool):
            raise ValueError(f"{key} must be true or false, got {value!r}")
        return value
    if isinstance(default, tuple) and isinstance(value, list):
        return tuple(value)
    if isinstance(default, float) and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(default, float) and isinstance(value, str):  # YAML 1.1 reads 3e-4 as a string
        try:
            return float(value)
        except ValueError:
            pass
    if default is not None and not isinstance(default, tuple) and not isinstance(value, type(default)) \
            and not (value is None and "None" in str(fld.type)):
        raise ValueError(f"{key} must be a {type(default).__name__}, got {value!r}")
    return value


def to_flat(cfg: RunConfig) -> dict:
    """The resolved config as one flat mapping (what ``config.yaml`` beside a checkpoint holds)."""
    flat = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)
            if f.name not in (*_SECTIONS, "model_args")}
    for section in _SECTIONS:
        for key, value in dataclasses.asdict(getattr(cfg, section)).items():
            flat[f"{section}.{key}"] = value
    for key, value in dataclasses.asdict(cfg.model_config()).items():
        flat[f"model.{key}"] = list(value) if isinstance(value, tuple) else value
    return flat


_ = typing  # typing is referenced by dataclass string annotations only
