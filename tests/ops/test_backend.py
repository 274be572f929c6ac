import os
import subprocess
import sys

import pytest
import torch

from pointabstract.ops import backends, ball_query, farthest_point_sample, knn
from pointabstract.ops._backend import resolve
from tests.fixtures import cloud


def test_backends_report_what_imports():
    found = backends()
    assert set(found) == {"farthest_point_sample", "knn", "ball_query"}
    for names in found.values():
        assert "torch" in names and "numba" in names


def test_auto_picks_the_compiled_kernels_on_cpu():
    cpu = torch.device("cpu")
    assert resolve("farthest_point_sample", "auto", cpu) == "numba"
    assert resolve("knn", "auto", cpu, channels=128) == "numba"
    assert resolve("knn", "auto", torch.device("cuda")) == "torch"
    # FPS on CUDA goes through the host kernel (a launch per step on the GPU is slower)
    assert resolve("farthest_point_sample", "auto", torch.device("cuda")) == "numba"
    with pytest.raises(ValueError, match="'numba' does not run on cuda"):
        resolve("ball_query", "numba", torch.device("cuda"))


def test_unknown_backend_lists_the_choices():
    with pytest.raises(ValueError, match=r"backend must be 'auto' or one of \['numba'"):
        knn(cloud(1, 5), cloud(1, 5), 2, backend="faiss")
    with pytest.raises(ValueError, match="backend must be 'auto' or one of"):
        farthest_point_sample(cloud(1, 5), 2, backend="pykdtree")


def test_missing_backend_names_the_available_ones():
    if "torch_cluster" in backends()["knn"]:
        pytest.skip("torch-cluster is installed here")
    with pytest.raises(ValueError, match=r"'torch_cluster' is not installed; available for knn here: \["):
        knn(cloud(1, 5), cloud(1, 5), 2, backend="torch_cluster")


def test_cpu_library_refuses_other_devices():
    with pytest.raises(ValueError, match="does not run on cuda"):
        resolve("knn", "pykdtree", torch.device("cuda"))


def test_3d_only_backend_refuses_features():
    if "open3d" in backends()["knn"]:  # the viz extra: absent on a bare install
        with pytest.raises(ValueError, match="supports only 3 channels"):
            knn(cloud(1, 20, 16), cloud(1, 20, 16), 2, backend="open3d")
    with pytest.raises(ValueError, match="supports only 3 channels"):
        resolve("ball_query", "scipy", torch.device("cpu"), channels=2)


def test_single_thread_runs_the_serial_kernels():
    pos = cloud(2, 500, seed=1)
    want = knn(pos, pos, 8)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        got = knn(pos, pos, 8)
        d, i = ball_query(pos, pos, 0.2, 8)
    finally:
        torch.set_num_threads(threads)
    assert torch.equal(got[1], want[1]) and torch.equal(got[0], want[0])
    assert torch.equal(i, ball_query(pos, pos, 0.2, 8)[1])


def test_auto_imports_only_the_backend_it_picks():
    """backend="auto" stops at the first usable library: a process that only calls the ops never
    pays for importing the later ones (open3d alone took seconds per CLI command)."""
    code = ("import sys, torch\nfrom pointabstract.ops import ball_query, farthest_point_sample, knn\n"
            "x = torch.rand(1, 20, 3)\nknn(x, x, 4); farthest_point_sample(x, 5); ball_query(x, x, 0.5, 4)\n"
            "print(sorted(m for m in ('open3d', 'scipy.spatial', 'pykdtree.kdtree', 'fpsample') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.slow
def test_set_up_compiles_every_cached_kernel(tmp_path):
    """The Makefile's set-up step (`python -m pointabstract.ops.kernels.warm`) leaves no kernel
    to compile in the first real command (a fresh numba cache folder stands for a fresh clone)."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path), "OMP_WAIT_POLICY": "PASSIVE"}
    check = [sys.executable, "-c", "from pointabstract.cli import uncompiled_kernels; print(uncompiled_kernels())"]
    before = subprocess.run(check, env=env, capture_output=True, text=True, check=True).stdout.strip()
    assert before != "[]"  # the check sees an empty cache
    subprocess.run([sys.executable, "-m", "pointabstract.ops.kernels.warm"], env=env, check=True,
                   capture_output=True)
    assert subprocess.run(check, env=env, capture_output=True, text=True, check=True).stdout.strip() == "[]"
