"""The autoencoders ``pointabstract bench capsules`` compares (:mod:`.capsules` times them,
:mod:`.capsule_training` trains them): the registered ``capsule_ae_{small,base}_{dr,em,ca}`` by
latent capsules and routing. Imports no torch until a model is built (``bench --help`` stays fast).
"""

from __future__ import annotations

__all__ = ["ROUTINGS", "SIZES", "build"]

ROUTINGS = ("dynamic", "em", "centroid")
SIZES = {12: "capsule_ae_small", 64: "capsule_ae_base"}
_SHORT = {"dynamic": "dr", "em": "em", "centroid": "ca"}


def build(caps: int, routing: str, *, tiny: bool = False):
    """The registered autoencoder with ``caps`` latent capsules and ``routing`` (``tiny``: the
    registry's test size, for smoke tests of this benchmark)."""
    from ..models.capsule_autoencoder import SPECS, CapsuleAutoencoder

    if caps not in SIZES:
        raise ValueError(f"caps must be one of {sorted(SIZES)}, got {caps}")
    if routing not in ROUTINGS:
        raise ValueError(f"routing must be one of {list(ROUTINGS)}, got {routing!r}")
    spec = SPECS[f"{SIZES[caps]}_{_SHORT[routing]}"]
    return CapsuleAutoencoder(spec.config(**{**spec.defaults, **(spec.tiny if tiny else {})}))
