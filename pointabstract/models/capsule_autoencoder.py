"""3D point-capsule autoencoder (Zhao et al. 2019) with a swappable routing (Wu et al. 2021, 3.3).

    pos (B, N, 3) -> primary capsules (B, P, D) -> routing -> latent capsules (B, L, D')
        -> patch decoder -> points (B, N_out, 3), N_out = L * (num_points // L)

Every latent capsule decodes its own patch of ``S = num_points // L`` points, AtlasNet style:
an MLP maps (capsule, 2D sample of the unit square) to a 3D point. Training draws the 2D
samples at random (as the original); evaluation uses a fixed, evenly spread set, so outputs are
deterministic. With ``noise_seed`` (one int per cloud; the reconstruction task gives each
training sample one drawn from its dataset generator, seeded by (run seed, epoch, dataset index),
see :class:`DecoderNoiseSeed`) a cloud's samples come from its own generator, so they are the
same whichever process or batch position holds the cloud (DDP matches one process); without
it they come from torch's global generator.

``decoders`` sets how many MLPs share the work: 0 gives every one of the S point slots its own
MLP, each decoding one point per capsule (3D-PointCapsNet's ``CapsDecoder``); 1 shares one MLP
over all points (AtlasNet with one patch MLP). The cost per point is the same.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from .. import _validate as V
from ..interop.model_input import model_inputs
from ..nn.capsules import PrimaryPointCapsules
from ..nn.ragged import model_lengths
from ..nn.routing import ROUTINGS, build_routing
from .spec import ModelSpec

__all__ = ["SPECS", "CapsuleAutoencoder", "CapsuleAutoencoderConfig", "DecoderNoiseSeed", "PatchDecoder",
           "fixed_grid"]

MIN_POINTS = 8  # fewer input points than this is refused


@dataclass
class CapsuleAutoencoderConfig:
    routing: str = "dynamic"  # primary -> latent capsules: dynamic | em | centroid
    primary_caps: int = 1024  # P primary capsules
    primary_dim: int = 16  # D primary capsule dimension (= branches of the primary layer)
    latent_caps: int = 64  # L latent capsules
    latent_dim: int = 64  # D' latent capsule dimension
    num_points: int = 2048  # decoded points (each capsule decodes num_points // L of them)
    iters: int = 3  # routing iterations (T for centroid routing)
    heads: int = 4  # attention heads of the centroid routing (dividing latent_dim)
    encoder_dims: tuple[int, ...] = (64, 128)  # shared per-point MLP before the primary capsules
    decoders: int = 0  # decoder MLPs: 0 = one per point slot (3D-PointCapsNet), 1 = one shared
    chunk: int = 2  # primary-capsule branches evaluated together (memory only)
    decoder_width: int = 0  # hidden width w of the decoder MLP (w, w/2, w/4); 0: D'+2 (the paper)
    latent_norm: str = "none"  # none | batch | layer: the latent capsules' normalisation before
    #                            decoding (batch: every capsule channel over the batch; layer: each
    #                            capsule over its D' channels; see docs/capsules.md)
    primary_norm: bool = False  # BatchNorm of the pooled primary-capsule channels before the squash
    centroid_update: str = "sum"  # centroid routing's eq. 4 update: sum (as printed) | mean (per
    #                               latent capsule, divided by its total weight; docs/capsules.md)


def fixed_grid(count: int, *, dtype=torch.float32, device=None) -> torch.Tensor:
    """(count, 2) evenly spread points of the unit square (an R2 / golden-ratio lattice):
    the decoder's 2D samples in evaluation mode."""
    i = torch.arange(count, dtype=torch.float64, device=device)
    golden = (math.sqrt(5) - 1) / 2
    return torch.stack([(i + 0.5) / count, (0.5 + i * golden) % 1.0], -1).to(dtype)


class PatchDecoder(nn.Module):
    """Latent capsules (B, L, D') -> points (B, L * S, 3), capsule-major (capsule l decoded
    points ``l * S .. (l + 1) * S - 1``).

    Each point is ``MLP_g([capsule, sample])``: layers (D'+2) -> (D'+2) -> (D'+2)/2 ->
    (D'+2)/4 -> 3 with BatchNorm + ReLU and a final tanh (the 3D-PointCapsNet PointGenCon).
    The S samples of a capsule are split into G = ``decoders`` equal groups, group g decoded by
    MLP g (G = S when ``decoders=0``).

    Args:
        dim: D'. points_per_capsule: S. decoders: G (a divisor of S) or 0.
    """

    def __init__(self, dim: int, points_per_capsule: int, *, decoders: int = 0, width: int = 0):
        super().__init__()
        groups = points_per_capsule if decoders == 0 else decoders
        if groups < 1 or points_per_capsule % groups:
            raise ValueError(f"decoders must be 0 or divide the points per capsule "
                             f"({points_per_capsule}), got {decoders}")
        V.check_int("decoder_width", width, low=0)
        c = dim + 2
        w = width or c
        dims = [c, w, w // 2, w // 4, 3]
        self.groups, self.points_per_capsule = groups, points_per_capsule
        self.weights = nn.ParameterList()
        self.biases = nn.ParameterList()
        self.norms = nn.ModuleList()
        for i, (a, b) in enumerate(zip(dims[:-1], dims[1:])):
            bound = 1 / math.sqrt(a)
            self.weights.append(nn.Parameter(torch.empty(groups, a, b).uniform_(-bound, bound)))
            self.biases.append(nn.Parameter(torch.empty(groups, 1, b).uniform_(-bound, bound)))
            if i < len(dims) - 2:
                self.norms.append(nn.BatchNorm1d(groups * b))

    def samples(self, batch: int, caps: int, like: torch.Tensor, *,
                noise_seed: torch.Tensor | None = None) -> torch.Tensor:
        """(B, L, S, 2) 2D samples: uniform at random in training, :func:`fixed_grid` in eval.

        In training, ``noise_seed`` (B,) int64 draws cloud b's samples from a generator seeded
        with ``noise_seed[b]`` (the global generator is left alone); None draws them all from
        torch's global generator.
        """
        s = self.points_per_capsule
        if not self.training:
            return fixed_grid(s, dtype=like.dtype, device=like.device).expand(batch, caps, s, 2)
        if noise_seed is None:
            return torch.rand(batch, caps, s, 2, dtype=like.dtype, device=like.device)
        gens = [torch.Generator(device=like.device).manual_seed(seed) for seed in noise_seed.tolist()]
        return torch.stack([torch.rand(caps, s, 2, generator=g, dtype=like.dtype, device=like.device)
                            for g in gens])

    def forward(self, v: torch.Tensor, *, noise_seed: torch.Tensor | None = None) -> torch.Tensor:
        """v: (B, L, D') -> points (B, L * S, 3); ``noise_seed``: (B,) int64, see :meth:`samples`."""
        batch, caps, dim = v.shape
        s, g = self.points_per_capsule, self.groups
        grid = self.samples(batch, caps, v, noise_seed=noise_seed)  # (B, L, S, 2)
        x = torch.cat([v.unsqueeze(2).expand(-1, -1, s, -1), grid], -1)  # (B, L, S, D'+2)
        x = x.view(batch, caps, g, s // g, dim + 2).permute(2, 0, 1, 3, 4)  # (G, B, L, S/G, D'+2)
        x = x.reshape(g, -1, dim + 2)  # (G, B L S/G, D'+2)
        for i, (w, b) in enumerate(zip(self.weights, self.biases)):
            x = torch.baddbmm(b, x, w)  # (G, B L S/G, C_i)
            if i < len(self.norms):
                rows = x.shape[1]
                x = self.norms[i](x.permute(1, 0, 2).reshape(rows, -1))  # (B L S/G, G C_i)
                x = torch.relu(x).view(rows, g, -1).permute(1, 0, 2)
        x = torch.tanh(x).view(g, batch, caps, s // g, 3).permute(1, 2, 0, 3, 4)  # (B, L, G, S/G, 3)
        return x.reshape(batch, caps * s, 3)


class DecoderNoiseSeed:
    """A transform adding ``noise_seed``, an int in [0, 2^63), drawn from the sample's
    generator: the seed of the decoder's training samples of this cloud (module docstring).
    The dataset seeds the generator from (seed, epoch, index), so the value depends on nothing
    else; put it last in a ``Compose`` so that it leaves the other transforms' draws unchanged.
    (A plain callable, not a :class:`~pointabstract.data.Transform`: the models import no data
    code, which needs the ``data`` extra.)"""

    random = True  # draws from the generator (Compose's protocol)

    def __call__(self, sample: dict, rng: np.random.Generator) -> dict:
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a numpy Generator, got {type(rng).__name__}")
        seed = int(rng.integers(0, 2**63 - 1))
        out = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in sample.items()}
        return {**out, "noise_seed": seed}

    def __repr__(self) -> str:
        return "DecoderNoiseSeed()"


class CapsuleAutoencoder(nn.Module):
    """Point-capsule autoencoder; see the module docstring. Build from a
    :class:`CapsuleAutoencoderConfig` (or by registry name)."""

    has_capsules = True  # eval and the viewer draw what each capsule decodes

    def __init__(self, cfg: CapsuleAutoencoderConfig):
        super().__init__()
        V.check_choice("routing", cfg.routing, ROUTINGS)
        for name in ("primary_caps", "primary_dim", "latent_caps", "latent_dim", "num_points", "iters",
                     "heads", "chunk"):  # named as in the config, before the layers name their own
            V.check_int(name, getattr(cfg, name), low=1)
        V.check_int("decoders", cfg.decoders, low=0)
        V.check_int("decoder_width", cfg.decoder_width, low=0)
        if 0 < cfg.decoder_width < 4:
            raise ValueError(f"decoder_width must be 0 (D'+2) or at least 4, got {cfg.decoder_width}")
        V.check_choice("latent_norm", cfg.latent_norm, ("none", "batch", "layer"))
        if cfg.num_points < cfg.latent_caps:
            raise ValueError(f"num_points ({cfg.num_points}) must be at least latent_caps "
                             f"({cfg.latent_caps})")
        self.cfg = cfg
        self.primary = PrimaryPointCapsules(cfg.primary_caps, cfg.primary_dim, hidden=cfg.encoder_dims,
                                            chunk=cfg.chunk, pooled_norm=cfg.primary_norm)
        self.routing = build_routing(cfg.routing, cfg.primary_caps, cfg.primary_dim, cfg.latent_caps,
                                     cfg.latent_dim, iters=cfg.iters, heads=cfg.heads,
                                     update=cfg.centroid_update)
        per_capsule = cfg.num_points // cfg.latent_caps
        self.latent_norm = {"none": None, "batch": nn.BatchNorm1d(cfg.latent_caps * cfg.latent_dim),
                            "layer": nn.LayerNorm(cfg.latent_dim)}[cfg.latent_norm]
        self.decoder = PatchDecoder(cfg.latent_dim, per_capsule, decoders=cfg.decoders,
                                    width=cfg.decoder_width)
        self.register_buffer("capsule_index", torch.arange(cfg.latent_caps).repeat_interleave(per_capsule),
                             persistent=False)

    def encode(self, pos: torch.Tensor, lengths: torch.Tensor | None = None):
        """pos (B, N, 3) -> latent capsules (B, L, D'), assignments (B, P, L), primary (B, P, D).
        ``lengths`` (B,): real points per cloud (padding is never pooled into a capsule)."""
        # an empty batch would fail in the routing; coordinates beyond the square limit in its norms
        V.check_cloud("pos", pos, min_points=MIN_POINTS, squares=True)
        lengths = model_lengths(lengths, pos)
        if lengths is not None and int(lengths.min()) < MIN_POINTS:
            raise ValueError(f"lengths must be at least {MIN_POINTS} (points per cloud), got "
                             f"{lengths.tolist()}")
        primary = self.primary(pos, lengths)
        v, assignments = self.routing(primary)
        return v, assignments, primary

    def decoder_input(self, v: torch.Tensor) -> torch.Tensor:
        """Latent capsules (B, L, D') -> what the decoder reads (``latent_norm`` applied)."""
        if isinstance(self.latent_norm, nn.BatchNorm1d):
            return self.latent_norm(v.flatten(1)).view(v.shape)
        return v if self.latent_norm is None else self.latent_norm(v)

    def forward(self, pos: torch.Tensor, *, lengths: torch.Tensor | None = None,
                return_features: bool = False, noise_seed: torch.Tensor | None = None) -> dict:
        """pos: (B, N, 3) -> ``{"points": (B, N_out, 3), "capsules": (B, L, D'),
        "capsule_index": (N_out,) int64 capsule that decoded each output point,
        "assignments": (B, P, L)}``; ``return_features`` adds ``"primary"`` (B, P, D).
        ``lengths`` (B,) int64: real points per cloud of a padded batch (None: all N); ``pos``
        may also be a PyG ``Data`` / ``Batch`` (docs/pyg.md).
        ``noise_seed``: (B,) int64 seeds of the decoder's training samples, one per cloud
        (None: torch's global generator); ignored in evaluation mode. ``N_out`` = L x
        (``num_points`` // L): each latent capsule decodes the same number of points, so the
        12-capsule models give 12 x 170 = 2,040 points for 2,048 (the paper's Fig. 5 caption)."""
        pos, _, lengths, _ = model_inputs(pos, lengths=lengths)
        v, assignments, primary = self.encode(pos, lengths)
        if noise_seed is not None:
            V.check_ids("noise_seed", noise_seed, (pos.shape[0],), "(B,)")
        code = self.decoder_input(v)
        out = {"points": self.decoder(code, noise_seed=noise_seed), "capsules": v,
               "capsule_index": self.capsule_index, "assignments": assignments}
        if return_features:
            out["primary"] = primary
        return out


_AE = (CapsuleAutoencoder, CapsuleAutoencoderConfig, "reconstruction")
_SMALL = {"primary_caps": 512, "primary_dim": 16, "latent_caps": 12, "latent_dim": 128}
_BASE = {"primary_caps": 1024, "primary_dim": 16, "latent_caps": 64, "latent_dim": 64}
# trains in about two minutes on 2 CPU cores (see the report of `pointabstract train`)
_DEMO = {"primary_caps": 64, "primary_dim": 8, "latent_caps": 8, "latent_dim": 32, "num_points": 512,
         "encoder_dims": (32, 64), "decoders": 1}
_TINY = {"primary_caps": 16, "primary_dim": 4, "latent_caps": 4, "latent_dim": 8, "num_points": 64,
         "encoder_dims": (8, 16), "decoders": 2, "heads": 2, "decoder_width": 16}
# The demo models' reconstruction recipe (docs/capsules.md, "Why the reconstructions were blobs"): a
# decoder MLP of width 256 for every routing (the paper's D'+2 = 34 at demo size decodes blobs), and
# for centroid attention eq. 4's update divided by each latent capsule's total weight (the sum as
# printed grows with the primary capsules and swamps the initial latent capsules). Measured at demo
# size only: the paper-size models (small / base: D'+2 = 130 / 66) keep the paper's settings, and
# model.decoder_width=0 model.centroid_update=sum restores them on the demo models.
_RECIPE = {"dr": {"decoder_width": 256}, "em": {"decoder_width": 256},
           "ca": {"decoder_width": 256, "centroid_update": "mean"}}
_NAMES = {"dr": "dynamic", "em": "em", "ca": "centroid"}
_WHAT = {"dr": "dynamic routing", "em": "EM routing", "ca": "centroid attention (linear init, T = 3)"}

SPECS = {
    **{f"capsule_ae_small_{k}": ModelSpec(*_AE, {**_SMALL, "routing": r}, tiny=_TINY,
                                          doc=f"512 x 16 primary -> 12 x 128 latent capsules, {_WHAT[k]}")
       for k, r in _NAMES.items()},
    **{f"capsule_ae_base_{k}": ModelSpec(*_AE, {**_BASE, "routing": r}, tiny=_TINY,
                                         doc=f"1024 x 16 primary -> 64 x 64 latent capsules, {_WHAT[k]}")
       for k, r in _NAMES.items()},
    **{f"capsule_ae_demo_{k}": ModelSpec(*_AE, {**_DEMO, "routing": r, **_RECIPE[k]}, tiny=_TINY,
                                         doc=f"demo size (64 x 8 -> 8 x 32, 512 points, decoder width 256), "
                                             f"{_WHAT[k]}" + (", mean update" if k == "ca" else ""))
       for k, r in _NAMES.items()},
}
