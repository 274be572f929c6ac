"""`make demo` runs its stages two at a time: every command once, in order within its stage,
each line tagged with its stage, the threads split between the two, and a failing command fails
the whole run. A copy of the project's Makefile is run in a scratch folder with a stand-in for the CLI
that only prints what it was asked to do (the set-up and the dataset are taken as done)."""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(shutil.which("make") is None or not Path("/bin/bash").exists(),
                                reason="needs GNU make and bash")

FAKE_CLI = """#!/bin/bash
echo "ran $* threads=${OMP_NUM_THREADS:-unset} numba=${NUMBA_NUM_THREADS:-unset}"
case "$*" in *"$FAIL_ON"*) [ -n "$FAIL_ON" ] && { echo "failing on purpose"; exit 3; } ;; esac
exit 0
"""


def _make(tmp_path: Path, *targets: str, fail_on: str = "") -> subprocess.CompletedProcess:
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")  # `make demo` calls make again on it
    cli = tmp_path / "fake_cli.sh"
    cli.write_text(FAKE_CLI)
    cli.chmod(cli.stat().st_mode | stat.S_IXUSR)
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "setup-done").write_text("")  # the set-up's stamp, newer than what it depends on
    (tmp_path / "datasets/synthetic").mkdir(parents=True, exist_ok=True)
    (tmp_path / "datasets/synthetic/.pointabstract-synth.json").write_text("{}")  # the demo's data
    for page in ("runs/demo/eval_last/viewer.html", "runs/demo/parts/eval_last/viewer.html"):
        (tmp_path / page).parent.mkdir(parents=True, exist_ok=True)  # what the last line lists
        (tmp_path / page).write_text("")
    env = {k: v for k, v in os.environ.items()
           if k not in {"OMP_NUM_THREADS", "NUMBA_NUM_THREADS", "MAKEFLAGS", "MAKELEVEL"}}
    env["FAIL_ON"] = fail_on
    return subprocess.run(["make", "--no-print-directory", "STAMP=setup-done", f"CLI={cli}", *targets],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


def _ran(out: str) -> list[tuple[str, str, str]]:
    """(stage, command, threads) of every command the stand-in ran."""
    return re.findall(r"^\[([\w-]+)\] ran (.+?) threads=(\S+) numba=\S+$", out, re.M)


def test_make_demo_runs_every_stage_command_once_tagged_and_on_half_the_cores(tmp_path):
    res = _make(tmp_path, "demo")
    assert res.returncode == 0, res.stdout + res.stderr
    ran = _ran(res.stdout)
    commands = [cmd for _, cmd, _ in ran]
    expected = {
        "demo-classify": ["train demo --overwrite", "eval runs/demo/last.pt --neighbourhoods"],
        "demo-capsules-dr": ["train capsules_demo_dr --overwrite", "eval runs/demo/capsules_dr/last.pt"],
        "demo-capsules-ca": ["train capsules_demo_ca --overwrite", "eval runs/demo/capsules_ca/last.pt"],
        "demo-capsules": ["view runs/demo/capsules_dr/last.pt --compare runs/demo/capsules_ca/last.pt "
                          "--figure runs/demo/capsules.png"],
        "demo-parts": ["train parts_demo --overwrite", "eval runs/demo/parts/last.pt"],
    }
    assert sorted(commands) == sorted(c for cmds in expected.values() for c in cmds)
    for stage, cmds in expected.items():  # each stage's own commands in order, under its own tag
        assert [cmd for s, cmd, _ in ran if s == stage] == cmds
    # the figure needs both capsule models: it comes after both evaluations
    assert commands.index(expected["demo-capsules"][0]) > max(
        commands.index(expected["demo-capsules-dr"][1]), commands.index(expected["demo-capsules-ca"][1]))
    half = str(max(1, int(subprocess.run(["nproc"], capture_output=True, text=True).stdout) // 2))
    assert {threads for _, _, threads in ran} == {half}
    assert re.search(r"^make demo: \d+ s after set-up", res.stdout, re.M)


def test_a_failing_command_fails_make_demo_despite_the_tagging_pipe(tmp_path):
    res = _make(tmp_path, "demo", fail_on="train capsules_demo_ca")
    assert res.returncode != 0
    assert "[demo-capsules-ca] failing on purpose" in res.stdout
    commands = [cmd for _, cmd, _ in _ran(res.stdout)]
    assert "eval runs/demo/capsules_ca/last.pt" not in commands
    assert not any(cmd.startswith("view ") for cmd in commands)
    assert "s after set-up" not in res.stdout


def test_a_stage_alone_prints_untagged_and_leaves_the_threads_to_torch(tmp_path):
    res = _make(tmp_path, "demo-parts")
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.splitlines() == [
        f"{tmp_path / 'fake_cli.sh'} train parts_demo --overwrite",
        "ran train parts_demo --overwrite threads=unset numba=unset",
        f"{tmp_path / 'fake_cli.sh'} eval runs/demo/parts/last.pt",
        "ran eval runs/demo/parts/last.pt threads=unset numba=unset"]
