"""Every CLI command imports the engine; the heavy optional libraries load only where used
(trimesh + scipy.spatial cost about 2 s, open3d with dash about 3 s, per command)."""

import subprocess
import sys

HEAVY = ("trimesh", "scipy.spatial", "open3d", "matplotlib", "dash", "plotly")


def test_the_engine_and_cli_import_no_heavy_library():
    code = ("import sys\nfrom pointabstract.engine import evaluate_checkpoint, train\nimport pointabstract.cli\n"
            f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
