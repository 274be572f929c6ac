"""The core install (`pip install pointabstract`) is enough for the ops; the extras hold the rest."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import venv
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
CORE = {"torch", "numpy", "numba", "safetensors"}  # safetensors: exported model folders (engine/pretrained.py)
# what the core must not need: every extra's packages (and what they pull in at import)
HEAVY = ("matplotlib", "tensorboard", "h5py", "trimesh", "torch_geometric", "open3d", "scipy",
         "yaml", "tqdm", "PIL", "fpsample", "pykdtree", "torch_cluster")
TORCH = "torch==2.13.0"  # the local CPU build the Makefile installs; never a plain `torch`

# imports the core modules and checks them against brute force: FPS, KNN, the PyG drop-ins
CHECK = textwrap.dedent("""
    import sys
    import torch
    import pointabstract.models, pointabstract.nn
    from pointabstract import ops
    from pointabstract.interop import pyg
    g = torch.Generator().manual_seed(0)
    pos = torch.rand(2, 300, 3, generator=g)
    idx = ops.farthest_point_sample(pos, 32)
    assert torch.equal(idx, ops.farthest_point_sample_naive(pos, 32)), "fps"
    dist2, nbr = ops.knn(pos, pos, 8)
    assert torch.equal(nbr, ops.knn_naive(pos, pos, 8)[1]), "knn"
    edges = pyg.knn_graph(pos[0], 8)
    assert edges.shape == (2, 300 * 8), "knn_graph"
    print("ok", ops.backends()["knn"], ops.__file__)
""")


def _blocker(names) -> str:
    return textwrap.dedent(f"""
        import importlib.abc, sys
        class _Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in {set(names)!r}:
                    raise ImportError("blocked by test_packaging: " + name)
                return None
        sys.meta_path.insert(0, _Block())
    """)


def test_ops_import_and_run_with_the_heavy_extras_blocked():
    script = _blocker(HEAVY) + CHECK + textwrap.dedent(f"""
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in {set(HEAVY)!r})
        assert not loaded, loaded
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("ok")


def test_blocker_really_blocks():
    script = _blocker(["json"]) + "import json\n"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert result.returncode != 0 and "blocked by test_packaging: json" in result.stderr


def _pyproject() -> dict:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _name(requirement: str) -> str:
    for sep in "<>=![; ":
        requirement = requirement.split(sep)[0]
    return requirement.strip().lower()


def test_core_dependencies_are_only_the_ops_and_model_files_needs_and_all_has_every_extra():
    project = _pyproject()
    assert {_name(r) for r in project["dependencies"]} == CORE
    extras = project["optional-dependencies"]
    all_extras = extras["all"][0].split("[")[1].rstrip("]").split(",")
    assert set(all_extras) == set(extras) - {"all", "dev", "peers"}
    # every heavy import above is provided by some extra (PyPI names differ for a few)
    provided = {_name(r) for reqs in extras.values() for r in reqs}
    pypi = {"yaml": "pyyaml", "PIL": "pillow", "torch_geometric": "torch-geometric",
            "torch_cluster": "torch-cluster"}
    assert {pypi.get(m, m).lower() for m in HEAVY} <= provided


@pytest.mark.slow
def test_fresh_venv_with_only_the_core_runs_the_ops(tmp_path):
    """A plain venv (no system site-packages), the CPU torch, then `pip install .`: no extras."""
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True, system_site_packages=False).create(env_dir)
    python = env_dir / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}

    def run(*args, cwd=tmp_path):
        result = subprocess.run([str(python), *args], cwd=cwd, env=env, capture_output=True,
                                text=True, timeout=1200)
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
        return result.stdout

    src = tmp_path / "src"  # a copy: building in place would leave build/ in the checkout
    shutil.copytree(ROOT / "pointabstract", src / "pointabstract",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.nbi", "*.nbc"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    run("-m", "pip", "install", "--quiet", TORCH)
    run("-m", "pip", "install", "--quiet", str(src))
    installed = {line.split("==")[0].lower() for line in run("-m", "pip", "freeze").split()}
    absent = {"matplotlib", "tensorboard", "h5py", "trimesh", "torch-geometric", "open3d", "scipy",
              "pyyaml", "tqdm", "pillow", "fpsample", "pykdtree"}
    assert not installed & absent, installed & absent
    out = run("-c", CHECK)  # cwd is tmp_path: the installed copy is imported, not the checkout
    assert out.startswith("ok") and str(env_dir) in out, out


def _untrained_classifier(folder: Path) -> Path:
    """A checkpoint of a tiny classifier with untrained weights (no training: seconds)."""
    from pointabstract.engine import atomic_save, load_config, to_flat
    from pointabstract.models import build_model
    from tests.fixtures import tiny_sizes

    cfg = load_config(None, {"model": "centroid_transformer", "data.num_points": 32,
                             **tiny_sizes("centroid_transformer")})
    model = build_model(cfg.model, **cfg.model_args, num_classes=3, in_channels=0)
    return atomic_save({"model": model.state_dict(), "config": to_flat(cfg), "epoch": 0,
                        "task_state": {"class_names": ["a", "b", "c"]}}, folder / "last.pt")


def _one_file_per_core_format(folder: Path) -> list[Path]:
    from tests.data.test_files import write_obj_box, write_off_box, write_ply_box, write_stl_box

    folder.mkdir()
    write_off_box(folder / "a.off"), write_obj_box(folder / "a.obj"), write_ply_box(folder / "a.ply")
    write_ply_box(folder / "b.ply", fmt="binary_little_endian"), write_stl_box(folder / "a.stl", binary=True)
    write_stl_box(folder / "b.stl", binary=False)
    cloud = np.random.default_rng(0).normal(size=(40, 3))
    for suffix, sep in ((".xyz", " "), (".txt", " "), (".csv", ",")):
        np.savetxt(folder / f"a{suffix}", cloud, delimiter=sep)
    np.savetxt(folder / "a.xyzn", np.hstack([cloud, cloud / np.linalg.norm(cloud, axis=1, keepdims=True)]))
    np.savetxt(folder / "a.xyzrgb", np.hstack([cloud, np.ones((40, 3))]))
    (folder / "a.pts").write_text("40\n" + "".join(" ".join(map(str, row)) + " 7\n" for row in cloud.tolist()))
    np.save(folder / "a.npy", cloud)
    np.savez(folder / "a.npz", points=cloud)
    head = "VERSION 0.7\nFIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nCOUNT 1 1 1\nWIDTH 40\nHEIGHT 1\nPOINTS 40\nDATA binary\n"
    (folder / "a.pcd").write_bytes(head.encode() + cloud.astype("<f4").tobytes())
    return sorted(folder.iterdir())


def test_predict_reads_every_core_format_with_the_extras_blocked(tmp_path):
    """``pointabstract predict`` (the predictor and its command) on an install without the data / train / viz extras: it used to
    need h5py (the data package's eager imports) and tqdm (the engine's and the CLI's)."""
    ckpt = _untrained_classifier(tmp_path)
    files = _one_file_per_core_format(tmp_path / "in")
    from pointabstract.data.files import SUPPORTED_SUFFIXES

    assert {p.suffix for p in files} == set(SUPPORTED_SUFFIXES)
    script = _blocker(HEAVY) + textwrap.dedent(f"""
        import json
        from pointabstract.cli import main
        assert main(["predict", {str(ckpt)!r}, {str(tmp_path / "in")!r}, "--out", {str(tmp_path / "out")!r}]) == 0
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in {set(HEAVY)!r})
        assert not loaded, loaded
        print("ok", len(json.load(open({str(tmp_path / "out" / "predictions.json")!r}))))
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert f"ok {len(files)}" in result.stdout  # every file predicted
