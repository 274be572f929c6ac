"""Checkpoints are data: a file asking to run code is refused everywhere it can be opened,
old files (numpy RNG state) still load, and a full disk is one line that says what was kept."""

import errno
import os
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from pointabstract.cli import main
from pointabstract.engine import atomic_save, load_checkpoint, load_config, restore, train
from pointabstract.engine.checkpoint import UnsafeCheckpointError, rng_state, set_rng_state


class _RunsCode:
    """What a malicious checkpoint carries: unpickling it calls os.system."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


@pytest.fixture
def trained(tiny_overrides, tmp_path):
    cfg = load_config(None, [*tiny_overrides, "optim.epochs=1"])
    train(cfg)
    return cfg, tmp_path / "run" / "last.pt"


def _poison(path: Path, marker: Path) -> None:
    ckpt = torch.load(path, weights_only=False)  # our own file, written just now
    ckpt["metrics"]["note"] = _RunsCode(marker)
    torch.save(ckpt, path)


def test_a_checkpoint_that_runs_code_is_refused_everywhere(trained, tiny_overrides, tmp_path, capsys):
    cfg, path = trained
    marker = tmp_path / "code_ran"
    _poison(path, marker)
    with pytest.raises(UnsafeCheckpointError, match=r"last\.pt refused: it asks to load 'posix\.system'"):
        load_checkpoint(path)
    with pytest.raises(UnsafeCheckpointError, match="nothing from it was run"):
        restore(path)
    with pytest.raises(UnsafeCheckpointError):
        train(load_config(None, [*tiny_overrides, "optim.epochs=2"]), resume=True)
    for argv in (["eval", str(path)], ["view", str(path), "--png", str(tmp_path / "v.png")],
                 ["train", "demo", *tiny_overrides, "optim.epochs=2", "--resume"]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "refused: it asks to load 'posix.system'" in err, (argv, err)
    assert not marker.exists()


def test_checkpoints_load_with_weights_only(trained):
    _, path = trained
    ckpt = torch.load(path, weights_only=True)  # plain torch, no allow-list: pure data
    assert ckpt["epoch"] == 1 and torch.is_tensor(ckpt["rng"]["numpy"][1])


def test_old_checkpoints_with_a_numpy_rng_state_still_load(trained):
    _, path = trained
    ckpt = torch.load(path, weights_only=True)
    name, keys, *rest = ckpt["rng"]["numpy"]
    ckpt["rng"]["numpy"] = (name, keys.numpy().astype(np.uint32), *rest)  # as earlier versions wrote it
    ckpt["metrics"]["overall_accuracy"] = np.float64(ckpt["metrics"]["overall_accuracy"])
    torch.save(ckpt, path)
    with pytest.raises(Exception, match="(?i)weights.only"):
        torch.load(path, weights_only=True)
    loaded = load_checkpoint(path)
    set_rng_state(loaded["rng"])
    first = np.random.rand(3)
    set_rng_state(loaded["rng"])
    assert np.array_equal(first, np.random.rand(3))


def test_rng_state_round_trips():
    state = rng_state()
    a = (torch.rand(2), np.random.rand(2), __import__("random").random())
    set_rng_state(state)
    b = (torch.rand(2), np.random.rand(2), __import__("random").random())
    assert torch.equal(a[0], b[0]) and np.array_equal(a[1], b[1]) and a[2] == b[2]


def test_a_full_disk_is_one_line_and_keeps_the_previous_checkpoint(tmp_path, monkeypatch):
    path = tmp_path / "last.pt"
    atomic_save({"epoch": 1}, path)
    before = path.read_bytes()
    real_open = open

    class _Full:
        def __init__(self, f):
            self.f = f

        def write(self, data):
            raise OSError(errno.ENOSPC, "No space left on device")

        def __getattr__(self, name):
            return getattr(self.f, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

    def full_open(file, mode="r", *args, **kwargs):
        f = real_open(file, mode, *args, **kwargs)
        return _Full(f) if "w" in mode and ".tmp-" in str(file) else f

    monkeypatch.setattr("builtins.open", full_open)
    with pytest.raises(OSError, match=r"no space left on device writing .*last\.pt \(0\.0 MB\); the previous "
                                      r"last\.pt is kept unchanged") as err:
        atomic_save({"epoch": 2}, path)
    assert err.value.errno == errno.ENOSPC and "\n" not in str(err.value)
    monkeypatch.undo()
    assert path.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == ["last.pt"]


@pytest.mark.skipif(os.geteuid() != 0 or not Path("/bin/mount").exists(), reason="needs root to mount a tmpfs")
def test_a_really_full_disk(tmp_path):
    small = tmp_path / "small"
    small.mkdir()
    if os.system(f"mount -t tmpfs -o size=64k tmpfs {small} 2>/dev/null") != 0:
        pytest.skip("mounting a tmpfs is not allowed here")
    try:
        with pytest.raises(OSError, match=r"no space left on device writing .*big\.pt .*no big\.pt was written"):
            atomic_save({"w": torch.zeros(100_000)}, small / "big.pt")
        assert list(small.iterdir()) == []
    finally:
        os.system(f"umount {small}")


def _cut(data: bytes, fraction: float) -> bytes:
    return data[: int(len(data) * fraction)]


def _flip(data: bytes, fraction: float) -> bytes:
    """One byte flipped inside a tensor record's bytes (not in the alignment padding torch puts
    between records, which no checksum covers): the record holding the byte at ``fraction`` of
    the file, or the nearest one after it."""
    import io
    import struct
    import zipfile

    out = bytearray(data)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        spans = []
        for info in archive.infolist():
            if "/data/" not in info.filename or info.file_size == 0:
                continue
            name_len, extra_len = struct.unpack("<HH", data[info.header_offset + 26: info.header_offset + 30])
            start = info.header_offset + 30 + name_len + extra_len
            spans.append((start, start + info.compress_size))
    at = int(len(out) * fraction)
    start, end = next(((s, e) for s, e in sorted(spans) if e > at), max(spans))
    out[min(max(at, start), end - 1)] ^= 0xFF
    return bytes(out)


@pytest.mark.parametrize("damage, pattern", [
    (lambda d: b"", r"is not a readable checkpoint \(an empty file\)"),
    (lambda d: b"\x89PNG\r\n\x1a\n" + d[8:], r"not a torch zip archive: it starts with b'\\x89PNG'"),
    *[(lambda d, f=f: _cut(d, f), r"is damaged: cut short or altered") for f in (0.01, 0.5, 0.99)],
    *[(lambda d, f=f: _flip(d, f), r"is damaged: its record 'archive/data/\d+' does not match its checksum")
      for f in (0.3, 0.6)],
])
def test_a_damaged_checkpoint_is_one_line_everywhere(trained, tiny_overrides, tmp_path, damage, pattern, capsys):
    _, path = trained
    good = path.read_bytes()
    path.write_bytes(damage(good))
    for call in (lambda: load_checkpoint(path), lambda: restore(path)):
        with pytest.raises(ValueError, match=pattern):
            call()
    for argv in (["eval", str(path)], ["view", str(path), "--png", str(tmp_path / "v.png")]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and re.search(pattern, err), (argv, err)
    # --resume names the intact best.pt (the run's only epoch was its best)
    with pytest.raises(ValueError, match=pattern + r".*best\.pt \(epoch 1\) is intact: copy it over last\.pt"):
        train(load_config(None, [*tiny_overrides, "optim.epochs=2"]), resume=True)
