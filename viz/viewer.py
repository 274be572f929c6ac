"""The interactive neighbourhood viewer (same as ``pointabstract view``).

    python viz/viewer.py runs/demo/last.pt --index 3        # a window (needs a display)
    python viz/viewer.py runs/demo/last.pt --png view.png   # no display: render to a file

Thin entry point: parse, load, show; the logic lives in pointabstract.viz
(``loading`` builds the model and data, ``app`` the window and key map, ``render`` the PNG).
"""

import sys

from pointabstract.viz.cli import build_parser, run

if __name__ == "__main__":
    sys.exit(run(build_parser().parse_args()))
