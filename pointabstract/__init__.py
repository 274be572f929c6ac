"""pointabstract: point-cloud abstractions (centroid attention, capsules, tree attention)."""

import logging
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
#
# Fully passive threads (spin count 0) pay for it on an idle machine: every parallel region
# wakes a sleeping thread, and on this project's 2-core VM a wake-up cost 0.05-0.5 ms, so the
# Sequoia demo step took 0.23 s passive against 0.13 s spinning. A short spin (GOMP_SPINCOUNT,
# about 20 us here) keeps most of that speed and bounds what spinning costs another process:
# measured idle and with another 2-thread process busy, GOMP_SPINCOUNT=2000 made the three
# demo steps 1.15-1.40x faster idle and 1.19-1.30x slower under load than 0
# (docs/ops.md#openmp-threads, tools/openmp_contention.py). Set only with the passive policy
# and when GOMP_SPINCOUNT is not in the environment (GOMP_SPINCOUNT=0: fully passive).
SPIN_COUNT = "2000"
OPENMP_SPINS = "torch" in sys.modules and "OMP_WAIT_POLICY" not in os.environ
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
if os.environ["OMP_WAIT_POLICY"].strip().upper() == "PASSIVE":
    os.environ.setdefault("GOMP_SPINCOUNT", SPIN_COUNT)
if OPENMP_SPINS and os.environ.get("POINTABSTRACT_OPENMP_TEAM", "1") != "0":  # 0: measure without
    from ._openmp import throttle_spinning

    throttle_spinning()

__version__ = "0.1.0"

# notes are records of the "pointabstract" logger (_log.py); a library configures no handler but
# this one, which keeps them off Python's last-resort stderr handler until the program decides
logging.getLogger(__name__).addHandler(logging.NullHandler())


def load(checkpoint, device="cpu"):
    """A trained checkpoint as a predictor for your own files and arrays, no dataset needed:
    ``pointabstract.load("runs/demo/last.pt").predict("chair.ply")``; also a folder written by
    ``save_pretrained`` / ``pointabstract export`` (see :func:`pointabstract.predict.load` and
    docs/predict.md)."""
    from .predict import load as _load

    return _load(checkpoint, device=device)


def from_pretrained(folder, device="cpu"):
    """A folder written by ``Predictor.save_pretrained`` / ``pointabstract export``
    (``config.json`` + ``model.safetensors``) as a predictor: :func:`load` under the name peers use."""
    return load(folder, device=device)
