"""The interactive viewer (same as ``pointabstract view``): neighbourhoods of a classifier, the
latent capsules of an autoencoder.

    python viz/viewer.py runs/demo/last.pt --index 3        # a window (needs a display)
    python viz/viewer.py runs/demo/last.pt --png view.png   # no display: render to a file
    python viz/viewer.py runs/ae_ca/last.pt --capsule 2     # an autoencoder: N / B cycle the capsules

Thin entry point: parse, load, show; the logic lives in pointabstract.viz
(``tasks`` picks the checkpoint's task: its session builds the model and data, its ``app`` the
key map; ``core.window`` opens the window, ``core.render`` draws the PNG).
"""

import sys

from pointabstract.viz.cli import main

if __name__ == "__main__":
    sys.exit(main())
