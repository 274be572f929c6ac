"""The ragged-batch gap: a cloud's outputs padded in a batch vs alone, per registered model.

``pointabstract bench ragged`` (docs/models.md#ragged-batches).

For every registered model at its tiny size in eval mode (seeded weights): a ``small``-point
cloud batched with a ``large``-point one, padded to the larger size with ``pad`` (0: as
:func:`~pointabstract.data.collate` pads), then the largest absolute difference of the small
cloud's outputs (logits, its own per-point logits, or decoded points) from those of the cloud
alone. With ``lengths=False`` the model is not told which rows are padding (what every model
saw before ragged batches carried ``lengths``).
"""

from __future__ import annotations

import argparse

__all__ = ["add_arguments", "gap", "main"]


def gap(name: str, *, small: int = 40, large: int = 64, pad: float = 0.0, lengths: bool = True,
        seed: int = 0) -> float:
    """Max |difference| of the small cloud's outputs, batched (padded) vs alone, for model ``name``."""
    import torch

    from ..models import MODELS, build_model

    spec = MODELS[name]
    gen = torch.Generator().manual_seed(seed)
    a, b = (torch.rand(n, 3, generator=gen) * 2 - 1 for n in (small, large))
    pos = torch.full((2, large, 3), float(pad))
    pos[0, :small], pos[1] = a, b
    torch.manual_seed(seed)
    args = {"num_classes": 5} if spec.task == "classification" else {}
    model = build_model(name, tiny=True, **args).eval()
    given = {"lengths": torch.tensor([small, large])} if lengths else {}
    with torch.no_grad():
        if spec.task == "part_segmentation":
            category = torch.tensor([1, 2])
            batched = model(pos, category, **given)["logits"][:1, :small]
            alone = model(a[None], category[:1])["logits"]
        else:
            key = "logits" if spec.task == "classification" else "points"
            batched, alone = model(pos, **given)[key][:1], model(a[None])[key]
    return float((batched - alone).abs().max())


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--no-lengths", action="store_true", help="do not pass lengths (the old behaviour)")
    parser.add_argument("--pad", type=float, default=0.0, help="value of the padded rows (default 0)")
    parser.add_argument("--small", type=int, default=40)
    parser.add_argument("--large", type=int, default=64)


def main(args: argparse.Namespace) -> int:
    from ..models import MODELS, build_model

    for name in sorted(MODELS):
        kind = type(build_model(name, tiny=True)).__name__
        value = gap(name, small=args.small, large=args.large, pad=args.pad, lengths=not args.no_lengths)
        print(f"{name:28s} {kind:20s} {value:.3g}")
    return 0
