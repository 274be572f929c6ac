"""pointabstract: point-cloud abstractions (centroid attention, capsules, tree attention)."""

import os
import sys

# torch's and numba's OpenMP thread pools take turns on the same cores; busy-waiting between
# parallel regions makes each steal the other's cores (a small training step measured 6x
# slower on 2 cores). Takes effect when pointabstract is imported before torch; an explicit
# OMP_WAIT_POLICY in the environment wins.
#
# Imported after torch with no policy in the environment, torch's OpenMP runtime has read its
# settings already and its threads busy-wait after every op: under load from another process a
# step collapsed (capsules_demo_ca: 0.35-0.78 s at best instead of 0.07-0.10 s). GNU OpenMP
# shortens that busy-wait when it manages more threads than there are CPUs, so one idle second
# team is started on a background thread (_openmp.py), which restored 0.10 s.
OPENMP_SPINS = "torch" in sys.modules and "OMP_WAIT_POLICY" not in os.environ
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
if OPENMP_SPINS and os.environ.get("POINTABSTRACT_OPENMP_TEAM", "1") != "0":  # 0: measure without
    from ._openmp import throttle_spinning

    throttle_spinning()

__version__ = "0.1.0"


def load(checkpoint, device="cpu"):
    """A trained checkpoint as a predictor for your own files and arrays, no dataset needed:
    ``pointabstract.load("runs/demo/last.pt").predict("chair.ply")`` (see
    :func:`pointabstract.predict.load` and docs/predict.md)."""
    from .predict import load as _load

    return _load(checkpoint, device=device)
