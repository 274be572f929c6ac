"""A plain point-cloud autoencoder with no capsules: the floor a capsule autoencoder must beat.

    pos (B, N, 3) -> PointNet encoder: shared per-point MLP, max-pool -> code (B, Z)
        -> decoder -> points (B, N_out, 3)

Two decoders, both from the literature:

- ``"fc"``: fully connected layers Z -> ... -> N_out x 3 (Achlioptas et al. 2018, *Learning
  Representations and Generative Models for 3D Point Clouds*: the "AE" baseline). The points
  come out in a fixed order; nothing is random.
- ``"folding"``: FoldingNet (Yang et al. 2018): a fixed 2-D grid of N_out points, each
  concatenated with the code and folded into 3-D by two shared MLPs (the second takes the first
  fold's output and the code).

Trained with the same task, loss (Chamfer distance), data and optimiser as the capsule
autoencoders, it tells whether routing through capsules costs or gains reconstruction quality at
the same budget. It returns ``{"points", "code"}``: no ``capsule_index``, so capsule part purity
and the capsule figures do not apply to it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from .. import _validate as V
from ..interop.model_input import model_inputs
from ..nn.mlp import PointBatchNorm, run_masked
from ..nn.ragged import masked_max, model_lengths, point_mask
from .spec import ModelSpec

__all__ = ["SPECS", "PointAutoencoder", "PointAutoencoderConfig"]

DECODERS = ("fc", "folding")


@dataclass
class PointAutoencoderConfig:
    encoder_dims: tuple[int, ...] = (64, 128, 128, 256)  # shared per-point MLP (BatchNorm, ReLU)
    code_dim: int = 256  # Z: the max-pooled code
    decoder: str = "fc"  # fc (Achlioptas et al. 2018) | folding (FoldingNet)
    decoder_dims: tuple[int, ...] = (256, 256)  # hidden widths of the fc decoder / of each fold
    num_points: int = 2048  # N_out decoded points


def _layers(dims, *, last_plain: bool) -> nn.Sequential:
    """Linear layers with BatchNorm + ReLU between them (none after the last when ``last_plain``)."""
    out = []
    for i, (a, b) in enumerate(zip(dims[:-1], dims[1:])):
        out.append(nn.Linear(a, b))
        if not (last_plain and i == len(dims) - 2):
            out += [PointBatchNorm(b), nn.ReLU()]
    return nn.Sequential(*out)


def folding_grid(count: int) -> torch.Tensor:
    """(count, 2) points of a near-square regular grid on [-1, 1]^2, row by row (the first
    ``count`` of a ``ceil(sqrt(count))``-wide grid)."""
    side = math.ceil(math.sqrt(count))
    rows = math.ceil(count / side)
    u = torch.linspace(-1, 1, side)
    v = torch.linspace(-1, 1, rows) if rows > 1 else torch.zeros(1)
    grid = torch.stack(torch.meshgrid(v, u, indexing="ij"), -1).reshape(-1, 2)[:, [1, 0]]
    return grid[:count].contiguous()


class PointAutoencoder(nn.Module):
    """PointNet encoder + fully connected or folding decoder; see the module docstring."""

    has_capsules = False  # eval and the viewer skip their capsule figures

    def __init__(self, cfg: PointAutoencoderConfig):
        super().__init__()
        V.check_choice("decoder", cfg.decoder, DECODERS)
        V.check_int("code_dim", cfg.code_dim, low=1)
        V.check_int("num_points", cfg.num_points, low=1)
        for name in ("encoder_dims", "decoder_dims"):
            for d in getattr(cfg, name):
                V.check_int(name, d, low=1)
        self.cfg = cfg
        self.encoder = _layers((3, *cfg.encoder_dims, cfg.code_dim), last_plain=False)
        n, z = cfg.num_points, cfg.code_dim
        if cfg.decoder == "fc":
            self.decoder = _layers((z, *cfg.decoder_dims, 3 * n), last_plain=True)
        else:
            self.register_buffer("grid", folding_grid(n), persistent=False)
            self.fold1 = _layers((z + 2, *cfg.decoder_dims, 3), last_plain=True)
            self.fold2 = _layers((z + 3, *cfg.decoder_dims, 3), last_plain=True)

    def encode(self, pos: torch.Tensor, lengths: torch.Tensor | None = None) -> torch.Tensor:
        """pos (B, N, 3) -> code (B, Z): the per-point MLP max-pooled over the points
        (``lengths`` (B,): the real points of each cloud; padding enters neither the pooling nor
        BatchNorm statistics)."""
        V.check_cloud("pos", pos, min_points=1, squares=True)  # the same refusal as every model
        mask = point_mask(model_lengths(lengths, pos), pos.shape[1])
        if mask is None:
            return self.encoder(pos).max(1).values
        return masked_max(run_masked(self.encoder, pos, mask), mask)

    def decode(self, code: torch.Tensor) -> torch.Tensor:
        """code (B, Z) -> points (B, N_out, 3)."""
        batch, n = code.shape[0], self.cfg.num_points
        if self.cfg.decoder == "fc":
            return self.decoder(code).view(batch, n, 3)
        c = code.unsqueeze(1).expand(-1, n, -1)  # (B, N_out, Z)
        grid = self.grid.to(code.dtype).expand(batch, -1, -1)  # (B, N_out, 2)
        first = self.fold1(torch.cat([c, grid], -1))  # (B, N_out, 3)
        return self.fold2(torch.cat([c, first], -1))

    def forward(self, pos: torch.Tensor, *, lengths: torch.Tensor | None = None,
                return_features: bool = False, noise_seed: torch.Tensor | None = None) -> dict:
        """pos: (B, N, 3) -> ``{"points": (B, N_out, 3), "code": (B, Z)}``. ``lengths`` (B,)
        int64: real points per cloud of a padded batch (None: all N); ``pos`` may also be a PyG
        ``Data`` / ``Batch`` (docs/pyg.md). ``noise_seed`` is
        accepted for the reconstruction task's protocol and unused (nothing here is random);
        ``return_features`` changes nothing (the code is always returned)."""
        pos, _, lengths, _ = model_inputs(pos, lengths=lengths)
        code = self.encode(pos, lengths)
        return {"points": self.decode(code), "code": code}


_AE = (PointAutoencoder, PointAutoencoderConfig, "reconstruction")
_TINY = {"encoder_dims": (8, 16), "code_dim": 16, "decoder_dims": (16,), "num_points": 64}
SPECS = {
    "pointnet_ae_demo": ModelSpec(*_AE, {"num_points": 512}, tiny=_TINY,
                                  doc="plain autoencoder (no capsules), PointNet + fully connected decoder, "
                                      "512 points: the capsule demo's floor"),
    "pointnet_ae_small": ModelSpec(*_AE, {"num_points": 2048}, tiny=_TINY,
                                   doc="plain autoencoder (no capsules), PointNet + fully connected decoder, "
                                       "2,048 points"),
    "foldingnet_ae_demo": ModelSpec(*_AE, {"num_points": 512, "decoder": "folding"},
                                    tiny={**_TINY, "decoder": "folding"},
                                    doc="plain autoencoder (no capsules), PointNet + FoldingNet decoder, "
                                        "512 points"),
    "foldingnet_ae_small": ModelSpec(*_AE, {"num_points": 2048, "decoder": "folding"},
                                     tiny={**_TINY, "decoder": "folding"},
                                     doc="plain autoencoder (no capsules), PointNet + FoldingNet decoder, "
                                         "2,048 points"),
}
