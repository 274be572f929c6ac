"""The autoencoders ``pointabstract bench capsules`` compares (:mod:`.capsules` times them,
:mod:`.capsule_training` trains them): the registered ``capsule_ae_{small,base}_{dr,em,ca}`` by
latent capsules and routing. Imports no torch until a model is built (``bench --help`` stays fast).
"""

from __future__ import annotations

__all__ = ["ROUTINGS", "SIZES", "build", "model_name", "model_overrides"]

ROUTINGS = ("dynamic", "em", "centroid")
SIZES = {12: "capsule_ae_small", 64: "capsule_ae_base"}
_SHORT = {"dynamic": "dr", "em": "em", "centroid": "ca"}


def build(caps: int, routing: str, *, tiny: bool = False):
    """The registered autoencoder with ``caps`` latent capsules and ``routing`` (``tiny``: the
    registry's test size, for smoke tests of this benchmark)."""
    from ..models.capsule_autoencoder import SPECS, CapsuleAutoencoder

    spec = SPECS[model_name(caps, routing)]
    return CapsuleAutoencoder(spec.config(**{**spec.defaults, **(spec.tiny if tiny else {})}))


def model_name(caps: int, routing: str) -> str:
    """The registry name of the autoencoder with ``caps`` latent capsules and ``routing``."""
    if caps not in SIZES:
        raise ValueError(f"caps must be one of {sorted(SIZES)}, got {caps}")
    if routing not in ROUTINGS:
        raise ValueError(f"routing must be one of {list(ROUTINGS)}, got {routing!r}")
    return f"{SIZES[caps]}_{_SHORT[routing]}"


def model_overrides(caps: int, routing: str, *, tiny: bool = False) -> dict:
    """The ``model.*`` config keys that give :func:`build`'s model in a training run: none, or
    with ``tiny`` the registry's test size."""
    from ..models import MODELS

    sizes = MODELS[model_name(caps, routing)].tiny if tiny else {}
    return {f"model.{k}": list(v) if isinstance(v, tuple) else v for k, v in sizes.items()}
