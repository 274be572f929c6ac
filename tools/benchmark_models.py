"""Model benchmarks: `python tools/benchmark_models.py [--table3] [--out FILE]`."""

import sys

from pointabstract.cli import main

if __name__ == "__main__":
    sys.exit(main(["bench", "models", *sys.argv[1:]]))
