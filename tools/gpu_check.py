"""GPU check: `python tools/gpu_check.py [--out DIR] [--budget-s S] [--quick] [--device cpu]`
(`pointabstract bench gpu`: CUDA tests, ops, training steps and the demo on the GPU)."""

import sys

from pointabstract.cli import main

if __name__ == "__main__":
    sys.exit(main(["bench", "gpu", *sys.argv[1:]]))
