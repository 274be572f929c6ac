"""Compiled scanning of text shape files: whitespace tokens with their line, numbers parsed in place.

The text readers (ASCII PLY and STL, OBJ, PTS) find the tokens of a body in one pass
(:func:`tokenize`), then parse the ones they need (:func:`token_floats`, :func:`obj_corners`).
A number is parsed here when it is a plain decimal (``-12.5e-3``) of at most 15 significant
digits whose power of ten is within 22: then ``m * 10^e`` (or ``m / 10^-e``) is one IEEE
operation on exact operands, so the result is the correctly rounded double, as ``float()``
gives (Clinger's fast path). Every other token (``nan``, ``inf``, more digits, a wider
exponent, or not a number at all) is handed to Python's ``float`` (tokens with ``_`` refused),
so values are always those of ``float(token)``. ``*_naive`` are the plain references.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

__all__ = ["Tokens", "keyword_lines", "obj_corners", "obj_corners_naive", "token_floats",
           "token_floats_naive", "token_text", "tokenize", "tokenize_naive"]

_POW10 = np.array([10.0 ** k for k in range(23)])
_MAX_EXACT = 2 ** 53


class Tokens(NamedTuple):
    """The whitespace-separated tokens of a byte range: ``buf[starts[k]:ends[k]]`` on line ``line[k]``
    (0-based, counted from the range's start; ``\\n``, ``\\r\\n`` and a lone ``\\r`` end a line)."""

    starts: np.ndarray  # (T,) int64
    ends: np.ndarray  # (T,) int64
    line: np.ndarray  # (T,) int64


@njit(cache=True)
def _scan(buf, start, end, comment, starts, ends, lines):
    """Tokens of ``buf[start:end]`` into the arrays (when given room), text after ``comment`` to the
    end of its line skipped (comment < 0: none); returns the token count."""
    count, line, inside, i = 0, 0, False, start
    room = len(starts)
    while i < end:
        c = buf[i]
        if c == comment:
            if inside and count <= room:
                ends[count - 1] = i
            inside = False
            while i < end and buf[i] != 10 and buf[i] != 13:
                i += 1
            continue
        if c == 32 or (9 <= c <= 13):
            if inside:
                if count <= room:
                    ends[count - 1] = i
                inside = False
            if c == 10 or (c == 13 and not (i + 1 < end and buf[i + 1] == 10)):
                line += 1
        elif not inside:
            if count < room:
                starts[count] = i
                lines[count] = line
            count += 1
            inside = True
        i += 1
    if inside and count <= room:
        ends[count - 1] = end
    return count


def tokenize(buf: np.ndarray, start: int = 0, end: int | None = None, *,
             comment: bytes | None = None) -> Tokens:
    """The tokens of ``buf[start:end]`` (a uint8 array), ``comment`` (one byte such as ``b"#"``)
    starting text that is skipped up to the end of its line."""
    end = len(buf) if end is None else end
    mark = -1 if comment is None else comment[0]
    empty = np.zeros(0, np.int64)
    count = _scan(buf, start, end, mark, empty, empty, empty)
    tokens = Tokens(np.empty(count, np.int64), np.empty(count, np.int64), np.empty(count, np.int64))
    _scan(buf, start, end, mark, *tokens)
    return tokens


def tokenize_naive(data: bytes, *, comment: bytes | None = None) -> list[tuple[int, int, int]]:
    """(start, end, line) of every token, by splitting lines and then whitespace (the reference)."""
    out, offset = [], 0
    for number, line in enumerate(data.splitlines(keepends=True)):
        body = line.split(comment)[0] if comment else line
        at = 0
        for token in body.split():
            at = body.index(token, at)
            out.append((offset + at, offset + at + len(token), number))
            at += len(token)
        offset += len(line)
    return out


@njit(cache=True)
def _keyword_lines(buf, keyword, width, starts, ends, lines):
    """Tokens 1 .. width of every line whose first token is ``keyword`` (ASCII letters, any case)
    into (K, width) arrays when given room; returns (K, the first such line with fewer tokens or -1)."""
    count, line, i, n, size, room = 0, 0, 0, len(buf), len(keyword), starts.shape[0]
    while i < n:
        while i < n and (buf[i] == 32 or buf[i] == 9):
            i += 1
        match = i + size <= n
        for j in range(size):
            if not match or (buf[i + j] | 32) != keyword[j]:
                match = False
                break
        if match and (i + size == n or buf[i + size] <= 32):
            i += size
            for k in range(width):
                while i < n and (buf[i] == 32 or buf[i] == 9):
                    i += 1
                if i == n or buf[i] == 10 or buf[i] == 13:
                    return count, line
                start = i
                while i < n and buf[i] > 32:
                    i += 1
                if count < room:
                    starts[count, k], ends[count, k] = start, i
            if count < room:
                lines[count] = line
            count += 1
        while i < n and buf[i] != 10 and buf[i] != 13:
            i += 1
        if i < n:
            if buf[i] == 13 and i + 1 < n and buf[i + 1] == 10:
                i += 1
            line += 1
            i += 1
    return count, -1


def keyword_lines(buf: np.ndarray, keyword: bytes, width: int) -> tuple[Tokens, int]:
    """The ``width`` tokens after ``keyword`` (lower-case ASCII; matched in any case) on every line
    that starts with it, as :class:`Tokens` (K * width, line by line), and the 0-based line of the
    first such line with fewer tokens (-1: none). Other lines are skipped unread."""
    word = np.frombuffer(keyword, np.uint8)
    empty = np.zeros((0, width), np.int64)
    count, short = _keyword_lines(buf, word, width, empty, empty, np.zeros(0, np.int64))
    if short >= 0:
        return Tokens(empty.ravel(), empty.ravel(), np.zeros(0, np.int64)), int(short)
    starts, ends = np.empty((count, width), np.int64), np.empty((count, width), np.int64)
    lines = np.empty(count, np.int64)
    _keyword_lines(buf, word, width, starts, ends, lines)
    return Tokens(starts.ravel(), ends.ravel(), np.repeat(lines, width)), -1


@njit(cache=True)
def _fast_float(buf, s, e):
    """(value, True) for a plain decimal within Clinger's fast path, else (0.0, False)."""
    i, neg = s, False
    if buf[i] == 45 or buf[i] == 43:
        neg = buf[i] == 45
        i += 1
    mantissa, digits, exp10, seen = 0, 0, 0, False
    point = False
    while i < e:
        c = buf[i]
        if 48 <= c <= 57:
            seen = True
            if digits > 0 or c != 48:
                if digits >= 16:
                    return 0.0, False
                mantissa = mantissa * 10 + (c - 48)
                digits += 1
            if point:
                exp10 -= 1
        elif c == 46 and not point:
            point = True
        else:
            break
        i += 1
    if not seen:
        return 0.0, False
    if i < e and (buf[i] == 101 or buf[i] == 69):
        i += 1
        negative_exp = False
        if i < e and (buf[i] == 45 or buf[i] == 43):
            negative_exp = buf[i] == 45
            i += 1
        if i == e:
            return 0.0, False
        value = 0
        while i < e and 48 <= buf[i] <= 57:
            value = value * 10 + (buf[i] - 48)
            if value > 400:
                return 0.0, False
            i += 1
        exp10 += -value if negative_exp else value
    if i != e or mantissa > _MAX_EXACT:
        return 0.0, False
    if mantissa == 0:
        return -0.0 if neg else 0.0, True
    if exp10 < -22 or exp10 > 22:
        return 0.0, False
    out = float(mantissa) * _POW10[exp10] if exp10 >= 0 else float(mantissa) / _POW10[-exp10]
    return -out if neg else out, True


@njit(cache=True)
def _parse(buf, starts, ends, out, slow):
    for k in range(len(starts)):
        out[k], ok = _fast_float(buf, starts[k], ends[k])
        slow[k] = not ok


def token_text(buf: np.ndarray, tokens: Tokens, k: int) -> str:
    """Token ``k`` as text (for error messages)."""
    return bytes(buf[tokens.starts[k]:tokens.ends[k]]).decode("latin-1")


def token_floats(buf: np.ndarray, tokens: Tokens, select=slice(None), *, where=None) -> np.ndarray:
    """float64 values of ``tokens[select]``; a token that is not a number raises ValueError
    ``where(k)`` (k: its index into ``tokens``; default: the token itself)."""
    picked = np.arange(len(tokens.starts))[select]
    starts, ends = tokens.starts[picked], tokens.ends[picked]
    out, slow = np.empty(len(picked)), np.zeros(len(picked), np.bool_)
    _parse(buf, starts, ends, out, slow)
    for j in np.flatnonzero(slow):
        text = bytes(buf[starts[j]:ends[j]])
        try:
            if b"_" in text:
                raise ValueError
            out[j] = float(text)
        except ValueError:
            k = int(picked[j])
            raise ValueError(where(k) if where else f"not a number: {token_text(buf, tokens, k)!r}") from None
    return out


def token_floats_naive(data: bytes, spans) -> list[float]:
    """``float(data[s:e])`` for every (start, end) span (the reference)."""
    return [float(data[s:e]) for s, e in spans]


@njit(cache=True)
def _corners(buf, starts, ends, out):
    """``i[/t[/n]]`` corners into out (T, 3): 0 for an absent field; returns the first bad k or -1."""
    for k in range(len(starts)):
        field, value, neg, digits, i = 0, 0, False, 0, starts[k]
        while i <= ends[k]:
            c = buf[i] if i < ends[k] else 47
            if c == 47:
                if neg and digits == 0 or field > 2:
                    return k
                out[k, field] = -value if neg else value
                field, value, neg, digits = field + 1, 0, False, 0
            elif c == 45 and digits == 0 and not neg:
                neg = True
            elif 48 <= c <= 57 and digits < 12:
                value = value * 10 + (c - 48)
                digits += 1
            else:
                return k
            i += 1
        if out[k, 0] == 0:
            return k
    return -1


def obj_corners(buf: np.ndarray, tokens: Tokens, select) -> tuple[np.ndarray, int]:
    """(T, 3) int64 (vertex, texture, normal) of OBJ face corners ``i``, ``i/t``, ``i//n``, ``i/t/n``
    (0: absent; a vertex of 0 is invalid), and the index into ``tokens`` of the first bad corner
    or -1."""
    picked = np.arange(len(tokens.starts))[select]
    out = np.zeros((len(picked), 3), np.int64)
    bad = _corners(buf, tokens.starts[picked], tokens.ends[picked], out)
    return out, (-1 if bad < 0 else int(picked[bad]))


def obj_corners_naive(token: str) -> tuple[int, int, int] | None:
    """One corner by ``str.split('/')`` (the reference); None when it is not a valid corner."""
    parts = token.split("/")
    if len(parts) > 3 or not parts[0]:
        return None
    try:
        values = [int(p) if p else 0 for p in parts] + [0] * (3 - len(parts))
    except ValueError:
        return None
    return None if values[0] == 0 else tuple(values)
