"""The one registry of architectures: ``MODELS = {name: ModelSpec}`` and ``build_model``.

Each model module exports its own ``SPECS``; they are merged here explicitly (no decorators,
no import side effects), so go-to-definition on a name leads to its module.
"""

from __future__ import annotations

import dataclasses

from torch import nn

from . import capsule_autoencoder, centroid_transformer, point_autoencoder, sequoia
from .capsule_autoencoder import CapsuleAutoencoder, CapsuleAutoencoderConfig
from .centroid_transformer import CentroidTransformer, CentroidTransformerConfig
from .legacy_keys import upgrade_state_dict
from .point_autoencoder import PointAutoencoder, PointAutoencoderConfig
from .sequoia import SequoiaClassifier, SequoiaClsConfig, SequoiaSegConfig, SequoiaSegmenter
from .spec import ModelSpec

__all__ = ["MODELS", "CapsuleAutoencoder", "CapsuleAutoencoderConfig", "CentroidTransformer",
           "CentroidTransformerConfig", "ModelSpec", "PointAutoencoder", "PointAutoencoderConfig",
           "SequoiaClassifier", "SequoiaClsConfig",
           "SequoiaSegConfig", "SequoiaSegmenter", "build_model", "model_config", "model_task",
           "upgrade_state_dict"]

MODELS: dict[str, ModelSpec] = {
    **centroid_transformer.SPECS,
    **capsule_autoencoder.SPECS,
    **point_autoencoder.SPECS,
    **sequoia.SPECS,
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


def model_task(name: str) -> str:
    """The task model ``name`` serves (``"classification"``, ``"reconstruction"``, ...)."""
    return _spec(name).task


def build_model(name: str, *, tiny: bool = False, **cfg) -> nn.Module:
    """Build a registered model, e.g. ``build_model("centroid_transformer", num_classes=16)``.

    Args:
        name: a key of ``MODELS``.
        tiny: start from the spec's tiny test size (``cfg`` still overrides it).
        **cfg: fields of the model's config dataclass.

    Raises:
        ValueError: unknown model name (listing the choices) or unknown config key.
    """
    spec = _spec(name)
    return spec.factory(model_config(name, **{**(spec.tiny if tiny else {}), **cfg}))


def _spec(name: str) -> ModelSpec:
    if name not in MODELS:
        raise ValueError(f"unknown model '{name}'; choose from {sorted(MODELS)}")
    return MODELS[name]
