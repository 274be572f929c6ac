"""pointabstract: point-cloud abstractions (centroid attention, capsules, tree attention)."""

import os

# torch's and numba's OpenMP thread pools take turns on the same cores; busy-waiting between
# parallel regions makes each steal the other's cores (a small training step measured 6x
# slower on 2 cores). Takes effect when pointabstract is imported before torch; an explicit
# OMP_WAIT_POLICY in the environment wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

__version__ = "0.1.0"
