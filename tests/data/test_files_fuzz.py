"""Fuzzing the readers: mutated and truncated shape files never crash, hang or allocate without bound.

Seed files: every format :mod:`pointabstract.bench.shape_files` writes (from a small torus of quads
and triangles, ``.npy`` / ``.npz`` beside them) and, when ``../shared/realdata`` is there, real
files (the smallest ModelNet OFF mesh, a resampled ``.txt`` and a ShapeNetPart ``.txt`` cut to
their first 200 lines; the originals are only read). Each case applies one mutation chosen
with a fixed seed (cut short, bytes flipped, inserted, deleted or repeated, digits swapped for
other characters, a header count made huge, zero or negative) and reads the result with
:func:`read_shape`, which must return a shape or raise one :class:`ShapeFileError` line naming the
file, within seconds, with its traced peak memory bounded by a multiple of the file's size.
"""

from __future__ import annotations

import re
import time
import tracemalloc

import numpy as np
import pytest

from pointabstract.bench.shape_files import mixed_polygons, torus, write_shape_files
from pointabstract.data.files import ShapeFile, ShapeFileError, read_shape
from tests.conftest import REALDATA

SECONDS = 5.0  # per case: a hang shows as a case over this
MEMORY = 64  # traced peak memory at most MEMORY x the file's bytes + 8 MiB


def _seeds(folder) -> list[tuple[str, bytes]]:
    vertices, quads = torus(6)
    files = [(path.suffix, path.read_bytes())
             for _, path, _ in write_shape_files(folder, vertices, *mixed_polygons(quads))]
    np.save(folder / "a.npy", vertices)
    np.savez(folder / "a.npz", points=vertices, normals=vertices)
    files += [(".npy", (folder / "a.npy").read_bytes()), (".npz", (folder / "a.npz").read_bytes())]
    if REALDATA.is_dir():
        mesh = min(REALDATA.glob("ModelNet40/*/*/*.off"), key=lambda p: p.stat().st_size)  # 12 kB, whole
        files.append((".off", mesh.read_bytes()))
        for pattern in ("modelnet40_normal_resampled/*/*.txt",
                        "shapenetcore_partanno_segmentation_benchmark_v0_normal/*/*.txt"):
            real = sorted(REALDATA.glob(pattern))[0]
            files.append((real.suffix, b"".join(real.read_bytes().splitlines(keepends=True)[:200])))
    return files


_DIGITS = re.compile(rb"\d+")


def mutate(data: bytes, rng: np.random.Generator) -> bytes:
    """One random mutation of ``data``."""
    kind = int(rng.integers(0, 7))
    n = len(data)
    at = int(rng.integers(0, n)) if n else 0
    if kind == 0:  # cut short
        return data[:at]
    if kind == 1:  # flip a few bytes
        out = bytearray(data)
        for _ in range(int(rng.integers(1, 9))):
            if out:
                out[int(rng.integers(0, len(out)))] = int(rng.integers(0, 256))
        return bytes(out)
    if kind == 2:  # insert random bytes
        return data[:at] + rng.integers(0, 256, int(rng.integers(1, 16))).astype(np.uint8).tobytes() + data[at:]
    if kind == 3:  # delete a slice
        return data[:at] + data[at + int(rng.integers(1, 64)):]
    if kind == 4:  # repeat a slice
        return data[:at] + data[at:at + int(rng.integers(1, 200))] * 2 + data[at + 1:]
    if kind == 5:  # a digit becomes something else
        picks = [m.start() for m in _DIGITS.finditer(data[:4096])]
        if not picks:
            return data[:at]
        where = picks[int(rng.integers(0, len(picks)))]
        swap = [b"x", b"-", b".", b"nan", b"9" * 12, b"", b" ", b"\n", b"1e999"][int(rng.integers(0, 9))]
        return data[:where] + swap + data[where + 1:]
    head = list(_DIGITS.finditer(data[:400]))  # a header count made huge, zero or negative
    if not head:
        return data
    m = head[int(rng.integers(0, len(head)))]
    swap = [b"4000000000", b"0", b"-1", b"99999999999999999999", b"1"][int(rng.integers(0, 5))]
    return data[:m.start()] + swap + data[m.end():]


def _run(tmp_path, cases: int, seed: int) -> dict:
    seeds = _seeds(tmp_path / "seeds")
    for suffix, data in seeds:  # every reader loaded (compiled kernels from their cache) before timing
        (tmp_path / f"warm{suffix}").write_bytes(data)
        read_shape(tmp_path / f"warm{suffix}")
    rng = np.random.default_rng(seed)
    outcome = {"read": 0, "refused": 0}
    tracemalloc.start()
    try:
        for case in range(cases):
            suffix, data = seeds[int(rng.integers(0, len(seeds)))]
            for _ in range(int(rng.integers(1, 3))):
                data = mutate(data, rng)
            path = tmp_path / f"case{case % 7}{suffix}"
            path.write_bytes(data)
            tracemalloc.reset_peak()
            start = time.perf_counter()
            try:
                assert isinstance(read_shape(path), ShapeFile)
                outcome["read"] += 1
            except ShapeFileError as err:
                text = str(err)
                assert "\n" not in text and str(path) in text, (case, text)
                outcome["refused"] += 1
            elapsed = time.perf_counter() - start
            peak = tracemalloc.get_traced_memory()[1]
            assert elapsed < SECONDS, (case, suffix, elapsed)
            assert peak < MEMORY * len(data) + 8 * 2 ** 20, (case, suffix, peak, len(data))
    finally:
        tracemalloc.stop()
    return outcome


def test_a_few_hundred_mutated_files(tmp_path):
    outcome = _run(tmp_path, 300, seed=0)
    assert outcome["read"] > 20 and outcome["refused"] > 100  # both kinds of outcome were exercised


@pytest.mark.slow
def test_a_few_thousand_mutated_files(tmp_path):
    outcome = _run(tmp_path, 4000, seed=1)
    assert outcome["read"] > 300 and outcome["refused"] > 1500


@pytest.mark.parametrize("seed", range(3))
def test_mutations_change_the_bytes(seed):
    rng = np.random.default_rng(seed)
    data = b"OFF\n4 2 0\n0 0 0\n1 0 0\n0 1 0\n0 0 1\n3 0 1 2\n3 0 2 3\n"
    assert sum(mutate(data, rng) != data for _ in range(50)) >= 40
