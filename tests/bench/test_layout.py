"""pointabstract.bench has no import circle (imports inside functions count too)."""

from pathlib import Path

import pointabstract.bench as bench
from tests.import_graph import find_cycle, import_graph


def test_bench_has_no_import_circle():
    assert find_cycle(import_graph(Path(bench.__file__).parent)) is None
