"""``.xyzn``, ``.xyzrgb`` and ``.pts`` read through read_shape; their errors name file and line."""

import numpy as np
import pytest

from pointabstract.data.files import ShapeFileError, read_shape

POINTS = np.random.default_rng(0).normal(size=(30, 3))
NORMALS = POINTS / np.linalg.norm(POINTS, axis=1, keepdims=True)


def _rows(table) -> str:
    return "".join(" ".join(repr(v) for v in row) + "\n" for row in np.asarray(table).tolist())


def test_xyzn_keeps_its_normals_and_xyzrgb_drops_its_colours(tmp_path):
    (tmp_path / "a.xyzn").write_text(_rows(np.hstack([POINTS, NORMALS * 0.5])))  # not unit: still normals
    (tmp_path / "a.xyzrgb").write_text(_rows(np.hstack([POINTS, np.ones((30, 3))])))
    xyzn, rgb = read_shape(tmp_path / "a.xyzn"), read_shape(tmp_path / "a.xyzrgb")
    np.testing.assert_allclose(xyzn.points, POINTS, rtol=1e-6)
    np.testing.assert_allclose(xyzn.normals, NORMALS * 0.5, rtol=1e-6)
    np.testing.assert_allclose(rgb.points, POINTS, rtol=1e-6)
    assert rgb.normals is None and rgb.note is None


@pytest.mark.parametrize("columns", [3, 4, 6, 7])
def test_pts_blocks_of_any_leica_layout(tmp_path, columns):
    table = np.hstack([POINTS, np.ones((30, columns - 3))])
    (tmp_path / "a.pts").write_text("20\n" + _rows(table[:20]) + "10\n" + _rows(table[20:]))
    np.testing.assert_allclose(read_shape(tmp_path / "a.pts").points, POINTS, rtol=1e-6)


@pytest.mark.parametrize("name, text, message", [
    ("a.xyzn", "1 2 3 0 0 1\n1 2 3 0 0\n", r"a\.xyzn:2: expected 6 numbers \(like the first data line\), "
                                             r"got '1 2 3 0 0'"),
    ("a.xyzrgb", "", r"a\.xyzrgb: empty: no data line"),
    ("a.pts", "1 2 3\n", r"a\.pts:1: expected the point count on the first line, got '1 2 3'"),
    ("a.pts", "3\n1 2 3\n4 5 6\n", r"a\.pts:1: expected the count of the 2 point lines that follow, got '3'"),
    ("a.pts", "2\n1 2 3\n4 5\n", r"a\.pts:3: expected x y z \[i\] \[r g b\]: 3 or 4 or 6 or 7 numbers"),
    ("a.pts", "2\n1 2 3 4 5\n4 5 6 7 8\n", r"a\.pts:2: expected x y z \[i\] \[r g b\]"),
    ("a.pts", "2.5\n1 2 3\n4 5 6\n", r"a\.pts:1: expected the count of the 2 point lines"),
    ("a.pts", "x\n1 2 3\n", r"a\.pts:1: expected a point count, got 'x'"),
    ("a.pts", "1\n1 2 z\n", r"a\.pts:2: expected 3 numbers, got '1 2 z'"),
])
def test_bad_files_name_the_file_and_line(tmp_path, name, text, message):
    (tmp_path / name).write_text(text)
    with pytest.raises(ShapeFileError, match=message) as info:
        read_shape(tmp_path / name)
    assert "\n" not in str(info.value)
