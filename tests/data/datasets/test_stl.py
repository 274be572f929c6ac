"""STL: ascii in any keyword case, binary with or without a 'solid' header or trailing bytes,
corners merged in order of first appearance, float32 kept for binary files."""

import struct

import numpy as np
import pytest

from pointabstract.data.datasets.stl import read_stl

# two triangles sharing an edge; corner (0, 0, 0) is also written as -0.0
CORNERS = np.array([[[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[1, 0, 0], [1, 1, 0], [-0.0, 1, 0]]], np.float32)


def _binary(path, corners, *, header=b"binary", trailing=b""):
    records = b"".join(struct.pack("<12fH", 0, 0, 1, *tri.ravel(), 0) for tri in corners)
    path.write_bytes(header.ljust(80) + struct.pack("<I", len(corners)) + records + trailing)
    return path


def _ascii(path, corners, *, upper=False, crlf=False):
    text = "solid t\n" + "".join("  facet normal 0 0 1\n    outer loop\n" + "".join(
        f"      vertex {x!r} {y!r} {z!r}\n" for x, y, z in tri.tolist()) + "    endloop\n  endfacet\n"
        for tri in corners) + "endsolid t\n"
    text = text.upper() if upper else text
    path.write_bytes((text.replace("\n", "\r\n") if crlf else text).encode())
    return path


@pytest.mark.parametrize("write", [
    lambda p: _binary(p, CORNERS), lambda p: _binary(p, CORNERS, header=b"solid but binary"),
    lambda p: _binary(p, CORNERS, trailing=b"\0" * 7), lambda p: _ascii(p, CORNERS),
    lambda p: _ascii(p, CORNERS, upper=True), lambda p: _ascii(p, CORNERS, upper=True, crlf=True)])
def test_every_flavour_reads_the_same_two_triangles(tmp_path, write):
    path = write(tmp_path / "t.stl")
    vertices, faces = read_stl(path)
    # first appearance: (0,0,0) (1,0,0) (0,1,0) (1,1,0); -0.0 is the same coordinate as 0.0
    assert vertices.tolist() == [[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]]
    assert faces.tolist() == [[0, 1, 2], [1, 3, 2]]
    binary = path.read_bytes()[:5].lower() != b"solid" or b"binary" in path.read_bytes()[:80]
    assert vertices.dtype == (np.float32 if binary else np.float64)


def test_merging_matches_np_unique_on_a_random_mesh(tmp_path):
    rng = np.random.default_rng(0)
    grid = rng.integers(0, 6, (900, 3, 3)).astype(np.float32) / 4
    vertices, faces = read_stl(_binary(tmp_path / "r.stl", grid))
    assert np.array_equal(vertices[faces], grid)
    assert len(vertices) == len(np.unique(grid.reshape(-1, 3), axis=0))


@pytest.mark.parametrize("content, message", [
    (b"solid x\nfacet normal 0 0 1\nouter loop\nvertex 0 0 0\nvertex 1 0\nendloop\n", r"t\.stl:5: bad vertex line"),
    (b"solid x\nfacet normal 0 0 1\nouter loop\nvertex 0 0 0\nvertex 1 0 q\nvertex 0 1 0\n",
     r"t\.stl:5: bad vertex line: 'q' is not a number"),
    (b"\0" * 80 + struct.pack("<I", 10 ** 9), r"t\.stl: not an STL file, or a binary STL cut short: its header announces "
                                           r"1000000000 triangles"),
    (b"tiny", r"t\.stl: not an STL file"),
])
def test_bad_files_are_one_line_naming_the_file(tmp_path, content, message):
    (tmp_path / "t.stl").write_bytes(content)
    with pytest.raises(ValueError, match=message):
        read_stl(tmp_path / "t.stl")
