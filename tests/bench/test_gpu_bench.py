"""``pointabstract bench gpu`` on a machine without CUDA: the one-line path, the pieces (test
discovery, JUnit counts, time caps, the max-batch search, random batches), the orchestration with
stand-in sections, and (slow) the whole CPU dry run as the GPU machine's environment would see it."""

import json
import sys
import time
from pathlib import Path

import pytest
import torch

from pointabstract.bench import gpu, gpu_steps
from pointabstract.bench.gpu_demo import demo_rows
from pointabstract.bench.gpu_run import last_line, run_command
from pointabstract.bench.gpu_tests import cuda_test_files, read_junit
from pointabstract.cli import main

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message of a machine without CUDA")
def test_without_cuda_one_line_after_collecting_the_cuda_tests(tmp_path, capsys):
    assert main(["bench", "gpu", "--out", str(tmp_path / "out")]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("no CUDA device here"), lines
    count = int(lines[0].split("nothing measured; ")[1].split()[0])
    assert count > 80, lines  # ops, every registered model twice, the engine's
    assert not (tmp_path / "out").exists()  # measured nothing, wrote nothing


def test_every_test_needing_cuda_carries_the_marker():
    files = cuda_test_files(TESTS)
    assert {TESTS / "test_cuda.py", TESTS / "ops" / "test_ops_cuda.py", TESTS / "models" / "test_models_cuda.py",
            TESTS / "interop" / "test_pyg.py"} <= set(files)
    for path in TESTS.rglob("test_*.py"):
        if "skipif(not torch.cuda.is_available()" in path.read_text():
            assert path in files, f"{path} skips without CUDA but has no pytest.mark.cuda"


def test_junit_counts(tmp_path):
    (tmp_path / "j.xml").write_text(
        '<testsuites><testsuite><testcase classname="a" name="ok"/><testcase classname="a" name="bad">'
        '<failure message="assert 1 == 2&#10;more">trace</failure></testcase>'
        '<testcase classname="b" name="skip"><skipped message="no CUDA"/></testcase>'
        '<testcase classname="b" name="err"><error message="boom"/></testcase></testsuite></testsuites>')
    assert read_junit(tmp_path / "j.xml") == {"passed": 1, "failed": 1, "errors": 1, "skipped": 1,
                                              "failures": ["a::bad: assert 1 == 2", "b::err: boom"]}


def test_a_command_past_its_cap_is_killed_and_reported(tmp_path):
    log = tmp_path / "log"
    start = time.monotonic()
    code = "import time; print('started', flush=True); time.sleep(60)"
    error = run_command([sys.executable, "-c", code], log, 1.0, {})
    assert time.monotonic() - start < 20
    assert error == "timeout after 1 s (last output: started)"
    failing = "import sys; print('first'); print('the reason'); sys.exit(3)"
    assert run_command([sys.executable, "-c", failing], log, 30, {}) == "exit code 3: the reason"
    assert run_command([sys.executable, "-c", "pass"], log, 30, {}) == ""
    assert last_line("a\n\n  b  \n\n") == "b" and last_line("") == "no output"


def test_max_batch_search_bisects_to_within_a_sixteenth():
    tried = []

    def fits(b):
        tried.append(b)
        return b <= 37

    good, bad, stopped = gpu_steps._search(fits, 1024, None)
    assert tried[:7] == [1, 2, 4, 8, 16, 32, 64] and not stopped
    assert good <= 37 < bad and bad - good <= max(1, good // 16)
    assert gpu_steps._search(lambda b: True, 8, None) == (8, None, False)
    assert gpu_steps._search(fits, 1024, time.monotonic() - 1) == (0, None, True)


@pytest.mark.parametrize("task", ["classification", "reconstruction", "part_segmentation"])
def test_random_batches_hold_what_each_task_reads(task):
    from pointabstract.engine.metrics.part_iou import check_part_labels

    batch = gpu_steps.random_batch(task, 3, 50)
    assert batch["pos"].shape == (3, 50, 3) and batch["pos"].abs().max() <= 1
    if task == "classification":
        assert batch["label"].shape == (3,) and int(batch["label"].max()) < 40
    if task == "part_segmentation":
        check_part_labels(batch["part"], batch["category"])  # raises for a part of another category


def test_one_training_step_measured_on_the_cpu():
    row = gpu_steps.measure("centroid transformer (paper size)", device="cpu", amp=False, tiny=True,
                            warmup=1, steps=1)
    assert row["batch"] == 2 and row["points"] == 64 and row["samples_per_s"] > 0 and row["finite_weights"]
    assert "peak_mib" not in row  # CUDA only


def test_demo_is_skipped_with_a_line_without_trimesh(tmp_path, monkeypatch):
    from pointabstract.bench import gpu_demo

    real = gpu_demo._importable
    monkeypatch.setattr(gpu_demo, "_importable", lambda name: name != "trimesh" and real(name))
    rows = demo_rows(tmp_path, device="cpu", tiny=True)
    assert rows == [{"what": "data synth", "skipped": "trimesh not importable (data synth needs it; give --data "
                                                      "DIR, a generated set)"}]


def _fake_sections(monkeypatch, outcomes):
    caps = {}

    def fake(name, args, work, cap):
        caps[name] = cap
        if outcomes.get(name) == "crash":
            raise RuntimeError(f"{name} broke\nsecond line")
        return {"status": outcomes.get(name, "ok"), "summary": f"{name} done", "rows": [], "table": ""}

    monkeypatch.setattr(gpu, "_section", fake)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(gpu, "_device_name", lambda device: "a stand-in GPU")
    return caps


def test_a_crashing_section_fails_the_run_after_the_others_ran(tmp_path, monkeypatch, capsys):
    caps = _fake_sections(monkeypatch, {"ops": "crash", "demo": "skipped"})
    assert main(["bench", "gpu", "--out", str(tmp_path / "out"), "--budget-s", "85"]) == 1
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())["sections"]
    assert list(summary) == list(gpu.SECTIONS)
    assert summary["ops"]["status"] == "FAILED" and summary["ops"]["summary"] == "RuntimeError: ops broke"
    assert summary["demo"]["status"] == "skipped" and summary["train"]["status"] == "ok"
    assert caps["kernels"] == pytest.approx(85 * 1.0 / sum(gpu.WEIGHTS.values()), rel=0.05)  # its weight's share
    out = capsys.readouterr().out
    assert out.rstrip().endswith(f"FAILED: ops; {tmp_path / 'out' / 'summary.md'}")
    assert "| ops | FAILED |" in out and "| demo | skipped |" in out
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["bench.log", "demo.log", "pytest.log",
                                                                    "summary.json", "summary.md"]


def test_every_section_passing_exits_zero(tmp_path, monkeypatch):
    _fake_sections(monkeypatch, {})
    assert main(["bench", "gpu", "--out", str(tmp_path / "out"), "--sections", "ops", "train"]) == 0
    text = (tmp_path / "out" / "summary.md").read_text()
    assert "a stand-in GPU" in text and "| train | ok |" in text and "| kernels |" not in text


@pytest.mark.slow
def test_cpu_dry_run_as_on_the_gpu_machine(tmp_path):
    """Every section at toy sizes on the CPU, with the packages the GPU machine lacks hidden
    (open3d, fpsample, pykdtree) and from a copy-free working tree (no datasets/, no runs/)."""
    import os
    import subprocess

    hide = tmp_path / "hide"
    for name in ("open3d", "fpsample", "pykdtree"):
        (hide / name).mkdir(parents=True)
        (hide / name / "__init__.py").write_text(f'raise ModuleNotFoundError("No module named {name!r}", name={name!r})\n')
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(hide), str(REPO)])}
    out = tmp_path / "out"
    cmd = [sys.executable, str(REPO / "tools" / "gpu_check.py"), "--device", "cpu", "--out", str(out),
           "--budget-s", "900", "--work", str(tmp_path / "work")]
    proc = subprocess.run(cmd, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    sections = json.loads((out / "summary.json").read_text())["sections"]
    assert {name: s["status"] for name, s in sections.items()} == dict.fromkeys(gpu.SECTIONS, "ok")
    assert "skipped: fpsample not importable" in sections["ops"]["notes"]
    assert sections["tests"]["counts"]["passed"] > 80
    files = [p for p in out.rglob("*") if p.is_file()]
    assert len(files) <= 8 and all(p.parent == out for p in files)
    assert proc.stdout.rstrip().splitlines()[-1].startswith("every section passed")


def test_kernel_groups_are_checked():
    from pointabstract.ops.kernels.warm import compile_kernels

    with pytest.raises(ValueError, match=r"unknown kernel group 'knn'; choose from \['attention', 'ball_query'"):
        compile_kernels(["knn"])
    with pytest.raises(ValueError, match=r"unknown pass 'both'; choose from \['parallel', 'serial'\]"):
        compile_kernels(["fps"], passes=("both",))


@pytest.mark.slow
def test_kernels_section_compiles_every_cached_kernel(tmp_path):
    """The kernels section's processes (one per group and pass) leave no kernel to compile: a
    fresh numba cache folder stands for the GPU machine's fresh copy of the tree."""
    import os
    import subprocess

    from pointabstract.bench.gpu_run import run_kernels

    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(REPO)}
    result = run_kernels(tmp_path / "log", 1200, env)
    assert result["status"] == "ok", result
    check = [sys.executable, "-c", "from pointabstract.cli import uncompiled_kernels; print(uncompiled_kernels())"]
    assert subprocess.run(check, env=env, capture_output=True, text=True, check=True).stdout.strip() == "[]"


def test_a_section_past_its_cap_is_cut_and_reported(tmp_path, capsys):
    assert main(["bench", "gpu", "--device", "cpu", "--sections", "train", "--budget-s", "2",
                 "--out", str(tmp_path / "out")]) == 1
    train = json.loads((tmp_path / "out" / "summary.json").read_text())["sections"]["train"]
    assert train["status"] == "FAILED" and train["summary"].startswith("timeout after 2 s (last output: "), train
    assert train["seconds"] < 15
