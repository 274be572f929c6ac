"""The compiled text scanners agree with their plain references: tokens and their lines, numbers
bit for bit with Python's float, keyword lines, OBJ corners."""

import numpy as np
import pytest

from pointabstract.data.datasets.text_kernels import (
    keyword_lines,
    obj_corners,
    obj_corners_naive,
    token_floats,
    token_floats_naive,
    tokenize,
    tokenize_naive,
)


def _buf(data: bytes) -> np.ndarray:
    return np.frombuffer(data, np.uint8)


def _spans(tokens):
    return list(zip(tokens.starts.tolist(), tokens.ends.tolist(), tokens.line.tolist()))


@pytest.mark.parametrize("seed", range(20))
def test_tokens_and_lines_match_the_reference(seed):
    rng = np.random.default_rng(seed)
    alphabet = np.frombuffer(b"12.5e-x \t\r\n#", np.uint8)
    data = bytes(rng.choice(alphabet, size=int(rng.integers(0, 300))))
    for comment in (None, b"#"):
        assert _spans(tokenize(_buf(data), comment=comment)) == tokenize_naive(data, comment=comment)


def test_hand_written_tokens():
    data = b"  1 2.5\r\n# c\r4\t x#y\n\n7"  # lines: CRLF, a lone CR, LF, an empty line, no end
    assert _spans(tokenize(_buf(data), comment=b"#")) == [(2, 3, 0), (4, 7, 0), (13, 14, 2), (16, 17, 2),
                                                           (21, 22, 4)]
    assert _spans(tokenize(_buf(data), 4)) == [(4, 7, 0), (9, 10, 1), (11, 12, 1), (13, 14, 2), (16, 19, 2),
                                                (21, 22, 4)]


@pytest.mark.parametrize("fmt", ["%.6f", "%.17g", "%g", "%.3e", "%.9E", "%d", "%+.2f", "%.25f"])
def test_numbers_are_those_of_python_float_bit_for_bit(fmt):
    rng = np.random.default_rng(0)
    values = rng.normal(size=3000) * 10.0 ** rng.integers(-40, 40, 3000)
    if fmt == "%d":
        values = rng.integers(-10 ** 12, 10 ** 12, 3000)
    text = " ".join(fmt % v for v in values).encode()
    tokens = tokenize(_buf(text))
    got = token_floats(_buf(text), tokens)
    want = np.array(token_floats_naive(text, zip(tokens.starts, tokens.ends)))
    assert np.array_equal(got.view(np.int64), want.view(np.int64))


def test_special_tokens_and_errors():
    text = b"nan -inf 1e400 -0 .5 5. 1E+2 007 0.000000000000000000000000001 0x10"
    tokens = tokenize(_buf(text))
    got = token_floats(_buf(text), tokens, slice(0, 9))
    assert np.isnan(got[0]) and got[1] == -np.inf and got[2] == np.inf and np.signbit(got[3])
    assert got[4:].tolist() == [0.5, 5.0, 100.0, 7.0, 1e-27]
    with pytest.raises(ValueError, match="not a number: '0x10'"):
        token_floats(_buf(text), tokens)
    for bad in (b"1_0", b"-", b"1e", b"e5", b"1.2.3", b"--1"):
        with pytest.raises(ValueError, match="where 0"):
            token_floats(_buf(bad), tokenize(_buf(bad)), where=lambda k: f"where {k}")


def test_keyword_lines_find_the_tokens_after_the_keyword_in_any_case():
    text = b"solid a\n VERTEX 1 2 3\nfacet normal 0 0 1\n\tvertex\t4 5 6 7\r\nvertexes 1 2 3\nVerTex -1 0 1"
    tokens, short = keyword_lines(_buf(text), b"vertex", 3)
    assert short == -1 and tokens.line.tolist() == [1, 1, 1, 3, 3, 3, 5, 5, 5]
    assert token_floats(_buf(text), tokens).tolist() == [1, 2, 3, 4, 5, 6, -1, 0, 1]
    assert keyword_lines(_buf(b"vertex 1 2 3\nvertex 1 2\nvertex 1 2 3"), b"vertex", 3)[1] == 1


def test_obj_corners_match_the_reference():
    rng = np.random.default_rng(0)
    parts = ["", "1", "12", "-3", "0", "x", "-"]
    corners = ["/".join(rng.choice(parts, size=int(rng.integers(1, 5)))) or "1" for _ in range(400)]
    text = " ".join(corners).encode()
    tokens = tokenize(_buf(text))
    assert len(tokens.starts) == len(corners)
    for k, token in enumerate(corners):
        got, bad = obj_corners(_buf(text), tokens, [k])
        want = obj_corners_naive(token)
        assert (bad == k) if want is None else (bad == -1 and tuple(got[0]) == want), token
