"""The DataLoader of engine/sampler.py: its workers leave Ctrl-C to the main process and say
nothing when it goes away, so an interrupt ends with one line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

from pointabstract.engine.sampler import make_loader


class _Dispositions(torch.utils.data.Dataset):
    """Each sample records, as its label, whether the process reading it ignores SIGINT."""

    def __len__(self):
        return 2

    def __getitem__(self, i):
        return {"pos": np.zeros((4, 3), np.float32), "label": int(signal.getsignal(signal.SIGINT) is signal.SIG_IGN)}


def test_workers_ignore_ctrl_c_and_the_main_process_keeps_it():
    # Python's own Ctrl-C handler, whatever the test process inherited: a shell's background job
    # (`make test &`) starts with SIGINT ignored
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        batch = next(iter(make_loader(_Dispositions(), None, 2, 1)))
        assert batch["label"].tolist() == [1, 1]  # read in the worker
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        assert next(iter(make_loader(_Dispositions(), None, 2, 0)))["label"].tolist() == [0, 0]  # no worker
    finally:
        signal.signal(signal.SIGINT, before)


SCRIPT = textwrap.dedent("""
    import os, signal, sys, time
    import numpy as np
    import torch
    from pointabstract.cli import _terminate
    from pointabstract.engine.sampler import make_loader

    class Slow(torch.utils.data.Dataset):
        def __len__(self):
            return 400

        def __getitem__(self, i):
            if i == 40:
                os.killpg(os.getpgrp(), signal.SIGINT)  # Ctrl-C: every process of the terminal's group
            t = time.time()
            while time.time() - t < 0.02:
                pass
            return {"pos": np.zeros((256, 3), np.float32), "label": 0}

    signal.signal(signal.SIGTERM, _terminate)  # as pointabstract train installs it before the workers fork
    try:
        for batch in make_loader(Slow(), None, 4, 2):
            pass
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
""")


@pytest.mark.slow
def test_ctrl_c_with_workers_prints_one_line(tmp_path):
    """Ctrl-C mid-epoch, 6 times: stderr is the main process's one line each time (before: a
    worker's BrokenPipeError traceback in about 4 runs of 10)."""
    script = tmp_path / "interrupt.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "OMP_WAIT_POLICY": "PASSIVE"}
    for _ in range(6):
        done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120,
                              start_new_session=True,
                              preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        assert (done.returncode, done.stderr.strip()) == (130, "interrupted"), done.stderr
