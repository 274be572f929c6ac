"""Compiled loops of the binary readers, each beside its plain reference (``*_naive``).

- :func:`merge_rows`: identical rows (an STL's corners, as their bit patterns) merged into one
  index each, in order of first appearance (a hash table: one pass, no sort);
- :func:`list_rows`: where each row of a binary PLY element with list properties starts, and
  each row's list lengths (rows of different lengths cannot be viewed as one array);
- :func:`lzf_decompress`: the LZF stream of PCD ``DATA binary_compressed``; every read and
  write is bounds-checked, so a damaged stream is an error, never a crash or an overrun.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["list_items", "list_rows", "list_rows_naive", "lzf_decompress", "lzf_decompress_naive",
           "merge_rows", "merge_rows_naive"]


@njit(cache=True)
def _merge(keys, inverse, first):
    n, width = keys.shape
    size = 1
    while size < 2 * n:
        size *= 2
    table = np.zeros(size, np.int64)  # group + 1, 0: empty
    groups = 0
    for i in range(n):
        h = np.uint64(14695981039346656037)
        for j in range(width):
            h = (h ^ np.uint64(keys[i, j])) * np.uint64(1099511628211)
        slot = np.int64(h >> np.uint64(11)) & (size - 1)
        while True:
            g = table[slot]
            if g == 0:
                table[slot] = groups + 1
                first[groups] = i
                inverse[i] = groups
                groups += 1
                break
            row = first[g - 1]
            same = True
            for j in range(width):
                if keys[row, j] != keys[i, j]:
                    same = False
                    break
            if same:
                inverse[i] = g - 1
                break
            slot = (slot + 1) & (size - 1)
    return groups


def merge_rows(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Merge identical rows of ``keys`` (N, C) unsigned ints.

    Returns:
        inverse: (N,) int64, the group of each row (groups numbered by first appearance).
        first: (G,) int64, the first row of each group, so ``keys[first][inverse] == keys``.
    """
    keys = np.ascontiguousarray(keys)
    inverse, first = np.empty(len(keys), np.int64), np.empty(len(keys), np.int64)
    groups = _merge(keys, inverse, first) if len(keys) else 0
    return inverse, first[:groups]


def merge_rows_naive(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    seen: dict = {}
    inverse = [seen.setdefault(tuple(row), len(seen)) for row in keys.tolist()]
    first = {g: i for i, g in reversed(list(enumerate(inverse)))}
    return np.array(inverse, np.int64), np.array([first[g] for g in range(len(seen))], np.int64)


@njit(cache=True)
def _read_uint(buf, at, size, big):
    value = 0
    for j in range(size):
        byte = np.int64(buf[at + (j if big else size - 1 - j)])
        value = value * 256 + byte
    return value


@njit(cache=True)
def _list_rows(buf, offset, count, sizes, items, signed, big, starts, lengths):
    """Walk ``count`` rows from ``offset``; returns the offset after them, or -(row + 1) for the
    first row that runs past the buffer or has a negative list length."""
    at, lists = offset, items.shape[0]
    for row in range(count):
        starts[row] = at
        k = 0
        for p in range(lists):
            if items[p] == 0:  # a scalar property of sizes[p] bytes
                at += sizes[p]
                continue
            if at + sizes[p] > len(buf):
                return -(row + 1)
            n = _read_uint(buf, at, sizes[p], big)
            if signed[p] and n >= 2 ** (8 * sizes[p] - 1):
                return -(row + 1)
            lengths[row, k] = n
            at += sizes[p] + n * items[p]
            k += 1
        if at > len(buf):
            return -(row + 1)
    starts[count] = at
    return at


def list_rows(buf: np.ndarray, offset: int, count: int, props: list[tuple[int, int, bool]], *,
              big: bool) -> tuple[np.ndarray, np.ndarray, int]:
    """Rows of an element whose ``props`` are (size, item size, signed count): a scalar of ``size``
    bytes when item size is 0, else a list of ``size``-byte counts and ``item size``-byte items.

    Returns:
        starts: (count + 1,) int64 byte offset of each row, and of the end.
        lengths: (count, L) int64 the length of each row's L lists, in property order.
        bad: -1, or the first row that is cut short or has a negative length (then ``starts``
            and ``lengths`` are incomplete).
    """
    sizes = np.array([p[0] for p in props], np.int64)
    items = np.array([p[1] for p in props], np.int64)
    signed = np.array([p[2] for p in props], np.bool_)
    starts = np.zeros(count + 1, np.int64)
    lengths = np.zeros((count, int((items > 0).sum())), np.int64)
    end = _list_rows(buf, offset, count, sizes, items, signed, big, starts, lengths)
    return starts, lengths, (-end - 1 if end < 0 else -1)


def list_rows_naive(data: bytes, offset: int, count: int, props, *, big: bool):
    starts, lengths = [], []
    for _ in range(count):
        starts.append(offset)
        row = []
        for size, item, signed in props:
            if item == 0:
                offset += size
                continue
            n = int.from_bytes(data[offset:offset + size], "big" if big else "little", signed=signed)
            row.append(n)
            offset += size + n * item
        lengths.append(row)
    return starts + [offset], lengths


@njit(cache=True)
def _list_items(buf, offsets, sizes, item, signed, big, out):
    k = 0
    for row in range(len(offsets)):
        at = offsets[row]
        for _ in range(sizes[row]):
            value = _read_uint(buf, at, item, big)
            if signed and value >= 2 ** (8 * item - 1):
                value -= 2 ** (8 * item)
            out[k] = value
            k += 1
            at += item


def list_items(buf: np.ndarray, offsets: np.ndarray, sizes: np.ndarray, item: int, *, signed: bool,
               big: bool) -> np.ndarray:
    """(sum(sizes),) int64: ``sizes[r]`` integers of ``item`` bytes from ``offsets[r]``, row after row
    (the lists located by :func:`list_rows`, which checked they lie inside ``buf``)."""
    out = np.empty(int(np.sum(sizes)), np.int64)
    _list_items(buf, np.asarray(offsets, np.int64), np.asarray(sizes, np.int64), item, signed, big, out)
    return out


@njit(cache=True)
def _lzf(src, out):
    ip, op, n, m = 0, 0, len(src), len(out)
    while ip < n:
        ctrl = np.int64(src[ip])
        ip += 1
        if ctrl < 32:  # a literal run of ctrl + 1 bytes
            length = ctrl + 1
            if ip + length > n or op + length > m:
                return -1
            out[op:op + length] = src[ip:ip + length]
            ip += length
            op += length
            continue
        length = ctrl >> 5  # a back reference
        ref = op - ((ctrl & 31) << 8) - 1
        if length == 7:
            if ip >= n:
                return -1
            length += np.int64(src[ip])
            ip += 1
        if ip >= n:
            return -1
        ref -= np.int64(src[ip])
        ip += 1
        length += 2
        if ref < 0 or op + length > m:
            return -1
        for k in range(length):  # byte by byte: the reference may overlap what it writes
            out[op + k] = out[ref + k]
        op += length
    return op


def lzf_decompress(src: np.ndarray, size: int) -> np.ndarray | None:
    """The ``size`` bytes an LZF stream ``src`` (uint8) decodes to, or None when the stream is
    damaged or decodes to another size."""
    out = np.empty(size, np.uint8)
    return out if _lzf(np.ascontiguousarray(src, np.uint8), out) == size else None


def lzf_decompress_naive(src: bytes, size: int) -> bytes | None:
    out, ip = bytearray(), 0
    try:
        while ip < len(src):
            ctrl = src[ip]
            ip += 1
            if ctrl < 32:
                if ip + ctrl + 1 > len(src):
                    return None
                out += src[ip:ip + ctrl + 1]
                ip += ctrl + 1
                continue
            length = ctrl >> 5
            if length == 7:
                length += src[ip]
                ip += 1
            ref = len(out) - ((ctrl & 31) << 8) - 1 - src[ip]
            ip += 1
            if ref < 0:
                return None
            for _ in range(length + 2):
                out.append(out[ref])
                ref += 1
    except IndexError:
        return None
    return bytes(out) if len(out) == size else None
