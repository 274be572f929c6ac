"""PCD: binary_compressed (LZF) reads as the same points as binary, organised clouds drop their NaN
points with a note, float32 fields stay float32, damaged compressed bodies are one-line errors."""

import struct

import numpy as np
import pytest

from pointabstract.bench.shape_files import compressed_pcd, lzf_compress
from pointabstract.data.datasets.pcd import read_pcd
from pointabstract.data.files import ShapeFileError, read_shape

CLOUD = np.random.default_rng(0).normal(size=(500, 3)).astype(np.float32)


def _head(fields, n, data, *, width=None, height=1, size=4, kind="F"):
    k = len(fields)
    return (f"VERSION 0.7\nFIELDS {' '.join(fields)}\nSIZE {' '.join([str(size)] * k)}\n"
            f"TYPE {' '.join([kind] * k)}\nCOUNT {' '.join(['1'] * k)}\nWIDTH {width or n}\nHEIGHT {height}\n"
            f"POINTS {n}\nDATA {data}\n").encode()


def test_compressed_equals_binary_and_stays_float32(tmp_path):
    (tmp_path / "c.pcd").write_bytes(compressed_pcd(CLOUD))
    (tmp_path / "b.pcd").write_bytes(_head("xyz", 500, "binary") + CLOUD.tobytes())
    compressed, binary = read_pcd(tmp_path / "c.pcd"), read_pcd(tmp_path / "b.pcd")
    assert compressed[0].dtype == np.float32 and np.array_equal(compressed[0], CLOUD)
    assert np.array_equal(binary[0], CLOUD) and compressed[1:] == binary[1:] == (None, None)


def test_compressed_fields_with_normals_and_an_extra_field(tmp_path):
    normals = CLOUD / np.linalg.norm(CLOUD, axis=1, keepdims=True)
    fields = ["x", "y", "z", "rgb", "normal_x", "normal_y", "normal_z"]
    table = np.hstack([CLOUD, np.full((500, 1), 7.0, np.float32), normals]).astype("<f4")
    raw = np.ascontiguousarray(table.T).tobytes()  # field after field
    packed = lzf_compress(raw)
    (tmp_path / "n.pcd").write_bytes(_head(fields, 500, "binary_compressed")
                                     + struct.pack("<II", len(packed), len(raw)) + packed)
    points, got, note = read_pcd(tmp_path / "n.pcd")
    assert np.array_equal(points, CLOUD) and np.array_equal(got, normals) and note is None


def test_an_organised_cloud_drops_its_nan_points_with_one_note(tmp_path):
    grid = CLOUD[:480].copy()
    grid[[3, 50, 51]] = np.nan
    (tmp_path / "o.pcd").write_bytes(_head("xyz", 480, "binary", width=24, height=20) + grid.tobytes())
    shape = read_shape(tmp_path / "o.pcd")
    assert np.array_equal(shape.points, np.delete(grid, [3, 50, 51], axis=0))
    assert shape.note == ("organised cloud (24 x 20): 3 of 480 points have NaN coordinates (no return): "
                          "dropped")
    (tmp_path / "u.pcd").write_bytes(_head("xyz", 480, "binary") + grid.tobytes())  # unorganised: an error
    with pytest.raises(ShapeFileError, match=r"u\.pcd: non-finite coordinates \(NaN or Inf\) at point 3"):
        read_shape(tmp_path / "u.pcd")


def test_ascii_and_double_fields_are_float64(tmp_path):
    (tmp_path / "a.pcd").write_bytes(_head("xyz", 2, "ascii") + b"1 2 3\n4 5 6.25\n")
    (tmp_path / "d.pcd").write_bytes(_head("xyz", 2, "binary", size=8) + np.arange(6.0).tobytes())
    assert read_pcd(tmp_path / "a.pcd")[0].dtype == read_pcd(tmp_path / "d.pcd")[0].dtype == np.float64


@pytest.mark.parametrize("tail, message", [
    (struct.pack("<II", 100, 6000) + b"\x1f" * 100, r"c\.pcd: damaged binary_compressed data \(the LZF stream"),
    (struct.pack("<II", 10 ** 6, 6000), r"c\.pcd: truncated or damaged: 1000000 compressed bytes announced"),
    (struct.pack("<II", 4, 6000) + b"\x00abc", r"c\.pcd: truncated or damaged: 4 compressed bytes announced for 6000"),
    (struct.pack("<II", 4, 12) + b"\x00abc", r"c\.pcd: binary_compressed data decompresses to 12 bytes, the header's "
                                             r"500 points of 12 bytes need 6000"),
])
def test_damaged_compressed_bodies_are_one_line(tmp_path, tail, message):
    (tmp_path / "c.pcd").write_bytes(_head("xyz", 500, "binary_compressed") + tail)
    with pytest.raises(ValueError, match=message):
        read_pcd(tmp_path / "c.pcd")
