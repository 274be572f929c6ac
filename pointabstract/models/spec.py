"""``ModelSpec``: how one registered model is built, which task it serves, its tiny test size."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["ModelSpec"]


@dataclass(frozen=True)
class ModelSpec:
    """How to build one registered model.

    Every model module exports ``SPECS = {name: ModelSpec(...)}``; ``models/__init__.py``
    merges them explicitly into ``MODELS``.

    Attributes:
        factory: callable ``(config) -> nn.Module``.
        config: the model's config dataclass.
        task: the task the model serves (``"classification"``, ``"reconstruction"``,
            ``"part_segmentation"``); a run whose ``task`` differs is refused.
        defaults: field values that differ from the dataclass defaults for this name.
        tiny: field values (over ``defaults``) for the registry smoke test: a forward +
            backward step in well under a second on a CPU.
        doc: one line for listings.
    """

    factory: object
    config: type
    task: str
    defaults: dict = field(default_factory=dict)
    tiny: dict = field(default_factory=dict)
    doc: str = ""
