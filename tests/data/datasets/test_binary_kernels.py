"""The compiled loops of the binary readers agree with their plain references: merging rows, the
rows and items of binary PLY lists, LZF decoding (and refusing damaged streams), polygon fans."""

import struct

import numpy as np
import pytest

from pointabstract.bench.shape_files import lzf_compress
from pointabstract.data.datasets.binary_kernels import (
    list_items,
    list_rows,
    list_rows_naive,
    lzf_decompress,
    lzf_decompress_naive,
    merge_rows,
    merge_rows_naive,
)
from pointabstract.data.datasets.polygons import fan_triangles, fan_triangles_naive


@pytest.mark.parametrize("seed, n, values", [(0, 0, 3), (1, 1, 3), (2, 500, 2), (3, 5000, 40), (4, 3000, 10 ** 9)])
def test_merge_rows_matches_the_reference(seed, n, values):
    keys = np.random.default_rng(seed).integers(0, values, (n, 3)).astype(np.uint32)
    inverse, first = merge_rows(keys)
    want_inverse, want_first = merge_rows_naive(keys)
    assert np.array_equal(inverse, want_inverse) and np.array_equal(first, want_first)
    assert np.array_equal(keys[first][inverse], keys)


def test_merge_rows_by_hand():
    keys = np.array([[1, 2], [3, 4], [1, 2], [5, 6], [3, 4]], np.uint64)
    inverse, first = merge_rows(keys)
    assert inverse.tolist() == [0, 1, 0, 2, 1] and first.tolist() == [0, 1, 3]


def _element(rng, rows: int, big: bool):
    """Bytes of ``rows`` rows: a uchar flag, a uchar-counted int list, a ushort-counted short list."""
    e = ">" if big else "<"
    out, lists = b"", []
    for _ in range(rows):
        a, b = rng.integers(0, 6, 2)
        first, second = rng.integers(-50, 50, a), rng.integers(0, 50, b)
        out += struct.pack(f"{e}B", 7) + struct.pack(f"{e}B{a}i", a, *first) + struct.pack(f"{e}H{b}h", b, *second)
        lists.append(first.tolist())
    return out, lists


@pytest.mark.parametrize("big", [False, True])
def test_list_rows_and_items_match_the_reference(big):
    data, lists = _element(np.random.default_rng(1), 200, big)
    props = [(1, 0, False), (1, 4, False), (2, 2, False)]
    buf = np.frombuffer(data, np.uint8)
    starts, lengths, bad = list_rows(buf, 0, 200, props, big=big)
    want_starts, want_lengths = list_rows_naive(data, 0, 200, props, big=big)
    assert bad == -1 and starts.tolist() == want_starts and lengths.tolist() == want_lengths
    items = list_items(buf, starts[:-1] + 2, lengths[:, 0], 4, signed=True, big=big)
    assert items.tolist() == [i for row in lists for i in row]
    cut = list_rows(buf[:-1], 0, 200, props, big=big)[2]
    assert cut == 199  # the last row runs past the end
    assert list_rows(np.frombuffer(struct.pack("<b", -1), np.uint8), 0, 1, [(1, 4, True)], big=False)[2] == 0


@pytest.mark.parametrize("data", [b"", b"a", b"abcabcabc" * 40, bytes(range(256)) * 3,
                                  np.random.default_rng(0).integers(0, 3, 4000).astype(np.uint8).tobytes(),
                                  np.random.default_rng(1).normal(size=900).astype("<f4").tobytes()])
def test_lzf_round_trip_and_the_reference(data):
    packed = lzf_compress(data)
    got = lzf_decompress(np.frombuffer(packed, np.uint8), len(data))
    assert got is not None and got.tobytes() == data == lzf_decompress_naive(packed, len(data))


def test_lzf_by_hand_and_damaged_streams():
    stream = bytes([2]) + b"abc" + bytes([(1 << 5) | 0, 2])  # 'abc', then 3 bytes from 3 back
    assert lzf_decompress(np.frombuffer(stream, np.uint8), 6).tobytes() == b"abcabc"
    rng = np.random.default_rng(2)
    packed = lzf_compress(b"point clouds " * 50)
    for _ in range(300):  # truncated or flipped: None or the naive decoder's bytes, never a crash
        damaged = bytearray(packed[:int(rng.integers(0, len(packed)))])
        if damaged and rng.random() < 0.5:
            damaged[int(rng.integers(0, len(damaged)))] = int(rng.integers(0, 256))
        size = 650 if rng.random() < 0.5 else int(rng.integers(0, 1000))
        got = lzf_decompress(np.frombuffer(bytes(damaged), np.uint8), size)
        want = lzf_decompress_naive(bytes(damaged), size)
        assert (got is None) == (want is None) and (got is None or got.tobytes() == want)
    assert lzf_decompress(np.frombuffer(bytes([0x20, 5]), np.uint8), 3) is None  # a reference before the start


def test_fans_match_the_reference():
    rng = np.random.default_rng(0)
    polygons = [rng.integers(0, 99, int(rng.integers(3, 9))).tolist() for _ in range(300)]
    sizes = np.array([len(p) for p in polygons])
    triangles, owner = fan_triangles(sizes, np.concatenate(polygons))
    assert np.array_equal(triangles, fan_triangles_naive(polygons))
    assert owner.tolist() == [i for i, p in enumerate(polygons) for _ in range(len(p) - 2)]
    assert fan_triangles(np.array([4]), np.array([5, 6, 7, 8]))[0].tolist() == [[5, 6, 7], [5, 7, 8]]
