"""Shape files keep the precision they store (data/files.py's module docstring): text and
doubles come back as float64, float32 storage as float32, so a georeferenced scan keeps its
millimetres; meshes far from the origin are sampled without losing them."""

from __future__ import annotations

import numpy as np
import pytest

from pointabstract.data.files import coordinate_dtype, read_shape, sample_shape
from tests.data.test_files import BOX, QUADS

# a cloud at UTM coordinates (zone 32N, metres): float32 spacing there is 0.03 m (x), 0.5 m (y)
UTM = np.array([[512345.123456, 5412345.654321, 100.25], [512346.001, 5412345.999, 101.5],
                [512345.5, 5412346.75, 99.125], [512344.875, 5412344.0625, 100.0]])
OFFSET = np.array([512345.0, 5412345.0, 0.0])


def _ply(path, points, prop, fmt="binary_little_endian"):
    head = (f"ply\nformat {fmt} 1.0\nelement vertex {len(points)}\n"
            + "".join(f"property {prop} {a}\n" for a in "xyz") + "end_header\n")
    if fmt == "ascii":
        path.write_text(head + "".join(" ".join(repr(float(v)) for v in row) + "\n" for row in points))
    else:
        path.write_bytes(head.encode() + points.astype("<f8" if prop == "double" else "<f4").tobytes())
    return path


def _pcd(path, points, size, data="binary"):
    head = (f"VERSION 0.7\nFIELDS x y z\nSIZE {size} {size} {size}\nTYPE F F F\nCOUNT 1 1 1\n"
            f"WIDTH {len(points)}\nHEIGHT 1\nPOINTS {len(points)}\nDATA {data}\n")
    body = ("".join(" ".join(repr(float(v)) for v in row) + "\n" for row in points).encode() if data == "ascii"
            else points.astype(f"<f{size}").tobytes())
    path.write_bytes(head.encode() + body)
    return path


def _text(path, points, *, head: str = "", row: str = "{!r} {!r} {!r}\n"):
    path.write_text(head + "".join(row.format(*map(float, p)) for p in points))
    return path


WRITERS = {
    "ascii.ply": lambda p: _ply(p, UTM, "float", "ascii"),
    "double.ply": lambda p: _ply(p, UTM, "double"),
    "ascii.pcd": lambda p: _pcd(p, UTM, 8, "ascii"),
    "double.pcd": lambda p: _pcd(p, UTM, 8),
    "scan.xyz": lambda p: _text(p, UTM),
    "scan.txt": lambda p: _text(p, UTM),
    "scan.npy": lambda p: np.save(p, UTM) or p,
    "scan.npz": lambda p: np.savez(p, points=UTM) or p,
    "scan.obj": lambda p: _text(p, UTM, row="v {!r} {!r} {!r}\n"),
    "scan.off": lambda p: _text(p, UTM, head="OFF\n4 0 0\n"),
    "scan.csv": lambda p: _text(p, UTM, head="x,y,z\n", row="{!r},{!r},{!r}\n"),
}


@pytest.mark.parametrize("name", sorted(WRITERS))
def test_text_and_doubles_keep_every_digit(tmp_path, name):
    shape = read_shape(WRITERS[name](tmp_path / name))
    assert shape.points.dtype == np.float64
    np.testing.assert_array_equal(shape.points, UTM)  # exactly: no trip through float32


@pytest.mark.parametrize("name, write", [
    ("float.ply", lambda p: _ply(p, UTM, "float")),
    ("float.pcd", lambda p: _pcd(p, UTM, 4)),
    ("float.npy", lambda p: np.save(p, UTM.astype(np.float32)) or p),
])
def test_float32_storage_stays_float32(tmp_path, name, write):
    shape = read_shape(write(tmp_path / name))
    assert shape.points.dtype == np.float32
    np.testing.assert_array_equal(shape.points, UTM.astype(np.float32))


def test_coordinate_dtype():
    f4, f8 = np.zeros(2, np.float32), np.zeros(2)
    assert coordinate_dtype(f4, f4) == np.float32 and coordinate_dtype(np.zeros(2, np.float16)) == np.float32
    assert coordinate_dtype(f4, f8) == np.float64 and coordinate_dtype(np.zeros(2, np.int32)) == np.float64


def test_a_mesh_far_from_the_origin_is_sampled_without_losing_its_millimetres(tmp_path):
    """A 1 x 2 x 3 box at UTM coordinates: every sample lies on a face of the box to within
    1e-6 m (float32 at y = 5.4e6 rounds to 0.5 m), the same samples as the box at the origin."""
    faces = [f"f {' '.join(str(i + 1) for i in q)}" for q in QUADS]
    for name, vertices in (("far.obj", BOX + OFFSET), ("near.obj", BOX)):
        (tmp_path / name).write_text("".join("v {!r} {!r} {!r}\n".format(*map(float, v)) for v in vertices)
                                     + "\n".join(faces))
    points, _ = sample_shape(read_shape(tmp_path / "far.obj"), 2000, rng=np.random.default_rng(0))
    assert points.dtype == np.float64
    local = points - OFFSET
    on_face = np.min([np.abs(local[:, a, None] - [0, top]).min(1) for a, top in enumerate((1, 2, 3))], axis=0)
    assert on_face.max() < 1e-6, on_face.max()
    reference, _ = sample_shape(read_shape(tmp_path / "near.obj"), 2000, rng=np.random.default_rng(0))
    np.testing.assert_allclose(local, reference, atol=1e-6)
