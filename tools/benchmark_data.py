"""Data benchmark: `python tools/benchmark_data.py [--shapes N] [--root DIR] [--out FILE]`.

Samples per second through a 2-worker DataLoader for the ModelNet HDF5, resampled-txt and
cached-OFF layouts, and synthetic generation speed (see pointabstract.bench.data).
"""

import argparse
import sys

from pointabstract._log import cli_notes
from pointabstract.bench import data as bench

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    bench.add_arguments(parser)
    with cli_notes():  # the library's notes (a cache being built) printed as by `pointabstract`
        sys.exit(bench.main(parser.parse_args(), command=" ".join(["python", *sys.argv])))
