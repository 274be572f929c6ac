"""The one registry of architectures: ``MODELS = {name: ModelSpec}`` and ``build_model``."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from torch import nn

from .centroid_transformer import CentroidTransformer, CentroidTransformerConfig

__all__ = ["MODELS", "ModelSpec", "build_model", "model_config"]


@dataclass(frozen=True)
class ModelSpec:
    """How to build one registered model.

    Attributes:
        factory: callable ``(config) -> nn.Module``.
        config: the model's config dataclass.
        defaults: field values that differ from the dataclass defaults for this name.
        task: the task the model serves (``"classification"``, ...).
        doc: one line for listings.
    """

    factory: object
    config: type
    defaults: dict = field(default_factory=dict)
    task: str = "classification"
    doc: str = ""


MODELS: dict[str, ModelSpec] = {
    "centroid_transformer": ModelSpec(
        CentroidTransformer, CentroidTransformerConfig,
        doc="SA-CA-SA-CA classifier, FPS init, T = 1 (the paper's ModelNet40 model)"),
    "self_attention_transformer": ModelSpec(
        CentroidTransformer, CentroidTransformerConfig, {"downsample": False, "k": None},
        doc="same widths, four self-attention blocks, no downsampling (k=None: full attention)"),
    # the paper's Table 3: other ways to go from N to M points in the two downsampling blocks
    "ct_fps_only": ModelSpec(CentroidTransformer, CentroidTransformerConfig,
                             {"init": "fps", "iters": 0}, doc="Table 3: FPS subset, no update"),
    "ct_random": ModelSpec(CentroidTransformer, CentroidTransformerConfig,
                           {"init": "random", "iters": 0}, doc="Table 3: random subset, no update"),
    "ct_kmeans": ModelSpec(CentroidTransformer, CentroidTransformerConfig,
                           {"init": "kmeans", "iters": 0}, doc="Table 3: k-means (3 rounds), no update"),
    "ct_t2": ModelSpec(CentroidTransformer, CentroidTransformerConfig, {"iters": 2},
                       doc="Table 3: centroid attention with T = 2"),
    "ct_t3": ModelSpec(CentroidTransformer, CentroidTransformerConfig, {"iters": 3},
                       doc="Table 3: centroid attention with T = 3"),
}


def model_config(name: str, **overrides):
    """The config dataclass of model ``name`` with its registry defaults and ``overrides``."""
    spec = _spec(name)
    names = {f.name for f in dataclasses.fields(spec.config)}
    unknown = sorted(set(overrides) - names)
    if unknown:
        raise ValueError(f"unknown config key(s) {unknown} for model '{name}'; "
                         f"valid keys: {sorted(names)}")
    return spec.config(**{**spec.defaults, **overrides})


def build_model(name: str, **cfg) -> nn.Module:
    """Build a registered model, e.g. ``build_model("centroid_transformer", num_classes=16)``.

    Raises:
        ValueError: unknown model name (listing the choices) or unknown config key.
    """
    return _spec(name).factory(model_config(name, **cfg))


def _spec(name: str) -> ModelSpec:
    if name not in MODELS:
        raise ValueError(f"unknown model '{name}'; choose from {sorted(MODELS)}")
    return MODELS[name]
