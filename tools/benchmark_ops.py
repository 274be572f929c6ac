"""Ops benchmark: `python tools/benchmark_ops.py [--quick] [--out FILE]` (`pointabstract bench ops`)."""

import sys

from pointabstract.cli import main

if __name__ == "__main__":
    sys.exit(main(["bench", "ops", *sys.argv[1:]]))
