"""data synth and a full disk: refused before any work when the set cannot fit; a disk that fills
while writing anyway is one error line, and the staging folder is removed (also on SIGTERM).

What is simulated: the free space (``shutil.disk_usage`` patched) for the check before any work,
and the kernel's ENOSPC for a disk that fills mid-set (one HDF5 file of the set written to
``/dev/full``, whose every write fails with ENOSPC, through the real writer). Where this runs as
root and may mount a tmpfs, a real small file system checks both (another process's file filling
it while the set is written).
"""

import os
import shutil
import signal
import subprocess
import sys
import time
from collections import namedtuple
from pathlib import Path

import numpy as np
import pytest

from pointabstract.cli import main
from pointabstract.data.synthetic import generate, output
from pointabstract.data.synthetic import generator as generator_module
from pointabstract.data.synthetic.output import expected_bytes, is_complete, write_h5

ROOT = Path(__file__).resolve().parents[3]
TINY = dict(train_per_class=1, test_per_class=1, num_points=32, progress=False, workers=1)
ARGS = ["--num-points", "32", "--train-per-class", "1", "--test-per-class", "1", "--workers", "1"]


def _snapshot(root):
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("per_class, points", [(1, 32), (3, 700)])
def test_the_expected_size_is_never_below_what_is_written(tmp_path, per_class, points):
    generate(tmp_path / "s", train_per_class=per_class, test_per_class=per_class, num_points=points,
             progress=False, workers=1)
    written = sum(p.stat().st_size for p in (tmp_path / "s").rglob("*") if p.is_file())
    expected = expected_bytes(2 * per_class * 16, points)
    assert written <= expected <= 1.2 * written + 1e6, (written, expected)


def test_write_h5_gives_the_bytes_of_a_file_written_by_h5py(tmp_path):
    import h5py

    arrays = {"data": np.random.default_rng(0).random((5, 7, 3), dtype=np.float32),
              "label": np.arange(5, dtype=np.int32)[:, None]}
    with h5py.File(tmp_path / "direct.h5", "w") as f:
        for key, value in arrays.items():
            f.create_dataset(key, data=value, track_times=False)
    write_h5(tmp_path / "image.h5", **arrays)
    assert (tmp_path / "image.h5").read_bytes() == (tmp_path / "direct.h5").read_bytes()


def test_a_set_that_cannot_fit_is_refused_before_any_work(tmp_path, monkeypatch, capsys):
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(output.shutil, "disk_usage", lambda path: usage(10**9, 10**9 - 300_000, 300_000))
    monkeypatch.setattr(generator_module, "_generate_split", lambda *a, **k: pytest.fail("work started"))
    out = tmp_path / "data" / "s"
    assert main(["data", "synth", "--out", str(out), *ARGS]) == 2
    err = capsys.readouterr().err
    assert err == (f"error: --out {out}: the set needs about {expected_bytes(32, 32) / 1e6:.1f} MB and {tmp_path} "
                   "has 0.3 MB free: free some space, make a smaller set (--train-per-class, --test-per-class, "
                   "--num-points) or give another --out; nothing was written\n")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full (its writes fail with ENOSPC)")
def test_a_disk_that_fills_while_writing_is_one_line_and_leaves_the_previous_set(tmp_path, monkeypatch, capsys):
    root = tmp_path / "s"
    generate(root, seed=1, **TINY)
    before = _snapshot(root)
    calls = [0]

    def filling(path, **arrays):
        calls[0] += 1
        write_h5("/dev/full" if calls[0] == 3 else path, **arrays)  # the third file meets a full disk

    monkeypatch.setattr(generator_module, "_write_h5", filling)
    assert main(["data", "synth", "--out", str(root), *ARGS, "--seed", "2", "--overwrite"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: no space left on the device of --out {root} while writing the set (the set "
                          "needs about ") and err.count("\n") == 1, err
    assert f"the partial set was removed and {root} is as it was" in err
    assert _snapshot(root) == before and is_complete(root)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s"]  # no staging folder left


@pytest.mark.skipif(os.geteuid() != 0 or not Path("/bin/mount").exists(), reason="needs root to mount a tmpfs")
def test_a_really_full_disk(tmp_path, monkeypatch):
    small = tmp_path / "small"
    small.mkdir()
    if os.system(f"mount -t tmpfs -o size=1m tmpfs {small} 2>/dev/null") != 0:
        pytest.skip("mounting a tmpfs is not allowed here")
    try:
        with pytest.raises(OSError, match=r"--out .*small/big: the set needs about 3\.4 MB and .*small has 1\.0 MB "
                                          r"free: free some space"):
            generate(small / "big", train_per_class=2, test_per_class=1, num_points=1024, progress=False, workers=1)
        assert list(small.iterdir()) == []
        real = generator_module._write_h5

        def and_another_process(path, **arrays):  # fills the disk once the free space was checked
            if not (small / "other.bin").exists():  # leaves one page free
                (small / "other.bin").write_bytes(b"x" * (shutil.disk_usage(small).free - 4096))
            real(path, **arrays)

        monkeypatch.setattr(generator_module, "_write_h5", and_another_process)
        with pytest.raises(OSError, match=r"no space left on the device of --out .*small/s while writing the set"):
            generate(small / "s", **TINY)
        assert [p.name for p in small.iterdir()] == ["other.bin"]  # the staging folder removed
    finally:
        os.system(f"umount {small}")


@pytest.mark.slow  # a CLI process generating for a few seconds
def test_sigterm_removes_the_staging_folder(tmp_path):
    out = tmp_path / "s"
    proc = subprocess.Popen([sys.executable, "-m", "pointabstract.cli", "data", "synth", "--out", str(out),
                             "--train-per-class", "60", "--test-per-class", "1", "--workers", "1"],
                            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not any(p.name.startswith(".s.synth-new-") for p in tmp_path.iterdir()):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    time.sleep(1.0)  # generating the train split
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and err.strip().splitlines()[-1] == "interrupted", err
    assert list(tmp_path.iterdir()) == []


def test_the_sigterm_handler_raises_only_in_the_commands_own_process():
    """The pool's forked workers inherit the handler and are ended with SIGTERM when the pool
    closes: there it must end the worker as the default action would (raising KeyboardInterrupt
    inside a worker printed its traceback into `make demo` and once left a worker blocked on the
    task queue's lock, so that `data synth` hung)."""
    import multiprocessing

    from pointabstract.data.cli import _interrupt

    with pytest.raises(KeyboardInterrupt):
        _interrupt(os.getpid(), signal.SIGTERM, None)
    worker = multiprocessing.get_context("fork").Process(target=_interrupt,
                                                         args=(os.getpid(), signal.SIGTERM, None))
    worker.start()
    worker.join(timeout=30)
    assert worker.exitcode == -signal.SIGTERM  # ended by the signal itself, no exception raised


@pytest.mark.slow  # a few seconds of generation with two workers, several times
def test_data_synth_with_workers_ends_cleanly(tmp_path):
    for attempt in range(4):  # the old handler's traceback came in about one run of four
        out = tmp_path / f"s{attempt}"
        proc = subprocess.run([sys.executable, "-m", "pointabstract.cli", "data", "synth", "--out", str(out),
                               "--train-per-class", "4", "--test-per-class", "4", "--workers", "2"], cwd=ROOT,
                              env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
