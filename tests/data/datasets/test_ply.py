import numpy as np
import pytest

from pointabstract.data.datasets.ply import read_ply_points
from tests.fixtures import write_ply


@pytest.mark.parametrize("fmt", ["ascii", "binary_little_endian", "binary_big_endian"])
def test_read_ply_points_in_every_format(tmp_path, fmt):
    points = np.random.default_rng(1).normal(size=(20, 3)).astype(np.float32)
    write_ply(tmp_path / "a.ply", points, fmt=fmt)
    np.testing.assert_allclose(read_ply_points(tmp_path / "a.ply"), points, atol=1e-6)


@pytest.mark.parametrize("content, message", [
    (b"not a ply", r"a\.ply: not a PLY file"),
    (b"ply\nformat ascii 1.0\nelement face 3\nend_header\n", r"a\.ply:3: the first element must be 'vertex N'"),
    (b"ply\nformat ascii 1.0\nelement vertex 2\nproperty float x\nend_header\n1\n2\n",
     r"a\.ply: unsupported PLY header"),
    (b"ply\nformat ascii 1.0\nelement vertex 0\nproperty float x\nproperty float y\nproperty float z\n"
     b"end_header\n", r"a\.ply: empty point cloud"),
    (b"ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\nproperty float z\n"
     b"end_header\n1 2 3\n4 5 6\n", r"a\.ply: truncated or malformed: expected 3 rows of 3 values"),
    (b"ply\nformat ascii 1.0\nelement vertex 2\nproperty float x\nproperty float y\nproperty float z\n"
     b"end_header\n1 2 3\n4 nan 6\n", r"a\.ply: non-finite point \(NaN or Inf\) at vertex 1"),
    (b"ply\nformat binary_little_endian 1.0\nelement vertex 2\nproperty float x\nproperty float y\n"
     b"property float z\nend_header\n" + b"\0" * 20, r"a\.ply: truncated: 2 vertices need 24 bytes, the file has 20"),
])
def test_bad_ply_files_are_named(tmp_path, content, message):
    (tmp_path / "a.ply").write_bytes(content)
    with pytest.raises(ValueError, match=message):
        read_ply_points(tmp_path / "a.ply")
