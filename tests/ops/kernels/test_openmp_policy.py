"""OpenMP settings pointabstract makes on import (pointabstract/__init__.py).

Imported after torch without OMP_WAIT_POLICY, torch's OpenMP threads busy-wait: pointabstract
then starts an idle second OpenMP team, which makes GNU OpenMP shorten its busy-wait. Imported
first, it sets the passive policy with a short spin (GOMP_SPINCOUNT) unless told otherwise. The
mechanisms are checked here; the measurements are tools/openmp_contention.py's."""

import os
import subprocess
import sys

import pointabstract
from pointabstract._openmp import THREAD_NAME

CHECK = ("import threading\n{first}\nimport pointabstract\n"
         f"print(pointabstract.OPENMP_SPINS, any(t.name == {THREAD_NAME!r} for t in threading.enumerate()))")


def _run(first: str, policy: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if policy is not None:
        env["OMP_WAIT_POLICY"] = policy
    return subprocess.run([sys.executable, "-c", CHECK.format(first=first)], env=env, capture_output=True,
                          text=True, check=True).stdout.strip()


def test_torch_first_without_a_policy_starts_the_second_team():
    assert _run("import torch", None) == "True True"


def test_pointabstract_first_or_an_explicit_policy_leaves_openmp_alone():
    assert _run("", None) == "False False"
    assert _run("import torch", "PASSIVE") == "False False"
    assert _run("import torch", "ACTIVE") == "False False"  # the user's explicit choice


def test_the_test_suite_imports_pointabstract_before_torch():
    assert not pointabstract.OPENMP_SPINS


SPIN = "import os\nimport pointabstract\nprint(os.environ.get('OMP_WAIT_POLICY'), os.environ.get('GOMP_SPINCOUNT'))"


def _spin(extra: dict[str, str]) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    return subprocess.run([sys.executable, "-c", SPIN], env={**env, **extra}, capture_output=True, text=True,
                          check=True).stdout.strip()


def test_passive_threads_spin_briefly_unless_told_otherwise():
    assert _spin({}) == f"PASSIVE {pointabstract.SPIN_COUNT}"
    assert _spin({"OMP_WAIT_POLICY": "passive"}) == f"passive {pointabstract.SPIN_COUNT}"
    assert _spin({"GOMP_SPINCOUNT": "0"}) == "PASSIVE 0"  # fully passive, the user's choice
    assert _spin({"OMP_WAIT_POLICY": "ACTIVE"}) == "ACTIVE None"  # a spin count would cap ACTIVE's
