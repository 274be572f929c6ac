import struct

import numpy as np
import pytest

from pointabstract.data.datasets.ply import read_ply, read_ply_points
from pointabstract.data.datasets.polygons import fan_triangles_naive
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


def _polygons(seed: int, count: int, n_vertices: int) -> list[list[int]]:
    rng = np.random.default_rng(seed)
    return [rng.integers(0, n_vertices, int(rng.integers(3, 7))).tolist() for _ in range(count)]


def _mesh_ply(path, vertices, polygons, fmt, *, extra: bool = False, vertex_type: str = "float"):
    """A PLY of ``polygons`` of mixed sizes; ``extra`` adds a uchar before the list and a float after."""
    e = ">" if fmt == "binary_big_endian" else "<"
    face_props = ("property uchar flag\n" if extra else "") + "property list uchar int vertex_indices\n" + (
        "property float quality\n" if extra else "")
    head = (f"ply\nformat {fmt} 1.0\nelement vertex {len(vertices)}\n"
            + "".join(f"property {vertex_type} {a}\n" for a in "xyz")
            + f"element edge 2\nproperty int a\nproperty int b\nelement face {len(polygons)}\n{face_props}"
            + "end_header\n").encode()
    if fmt == "ascii":
        rows = [" ".join(map(repr, v)) for v in vertices.tolist()] + ["0 1", "1 2"]
        rows += [("9 " if extra else "") + f"{len(p)} " + " ".join(map(str, p)) + (" 0.5" if extra else "")
                 for p in polygons]
        path.write_bytes(head + ("\n".join(rows) + "\n").encode())
        return
    body = vertices.astype(e + ("f4" if vertex_type == "float" else "f8")).tobytes() + struct.pack(f"{e}4i", 0, 1, 1, 2)
    for p in polygons:
        body += (struct.pack(f"{e}B", 9) if extra else b"") + struct.pack(f"{e}B{len(p)}i", len(p), *p) + (
            struct.pack(f"{e}f", 0.5) if extra else b"")
    path.write_bytes(head + body)


@pytest.mark.parametrize("fmt", ["ascii", "binary_little_endian", "binary_big_endian"])
@pytest.mark.parametrize("extra", [False, True])
def test_faces_of_mixed_sizes_are_the_fans_of_every_polygon(tmp_path, fmt, extra):
    vertices = np.random.default_rng(0).normal(size=(40, 3))
    polygons = _polygons(1, 300, 40)
    _mesh_ply(tmp_path / "m.ply", vertices, polygons, fmt, extra=extra)
    points, normals, faces = read_ply(tmp_path / "m.ply")
    assert np.array_equal(faces, fan_triangles_naive(polygons)) and normals is None
    # binary floats stay float32 as stored; ascii text is read as float64 (issue 38's dtype contract)
    assert points.dtype == (np.float64 if fmt == "ascii" else np.float32)
    assert np.array_equal(points, vertices if fmt == "ascii" else vertices.astype(np.float32))


def test_doubles_stay_float64_and_uniform_faces_are_viewed_in_place(tmp_path):
    vertices = np.random.default_rng(2).normal(size=(10, 3))
    _mesh_ply(tmp_path / "d.ply", vertices, [[0, 1, 2], [3, 4, 5]], "binary_little_endian", vertex_type="double")
    points, _, faces = read_ply(tmp_path / "d.ply")
    assert points.dtype == np.float64 and np.array_equal(points, vertices) and faces.tolist() == [[0, 1, 2],
                                                                                                   [3, 4, 5]]


@pytest.mark.parametrize("body, message", [
    (b"1 2 3\n4 5 6\n0 1\n1 2\n3 0 1 2\n3 0 1\n", r"m\.ply:18: face 1: bad row"),
    (b"1 2 3\n4 5 6\n0 1\n1 2\n3 0 1 2\n2 0 1\n", r"m\.ply: face 1 has 2 corners \(at least 3 needed\)"),
    (b"1 2 3\n4 5 6\n0 1\n1 2\n3 0 1 2\n3 0 1 x\n", r"m\.ply:18: not a number: b'x'"),
    (b"1 2 3\n4 5 6\n0 1\n1 2\n3 0 1 2\n", r"m\.ply: truncated: 2 faces announced, 1 rows left"),
    (b"1 2 3\n4 5 6\n0 1\n1 2\n3 0 1 2\n3 0 1 1.5\n", r"m\.ply: a face index is not a whole number"),
    (b"1 2 3\n4 5 6\n0 1\n1 2\n3 0 1 0\n3 0 1 9\n", r"m\.ply: a face refers to vertex \[0, 1, 9\], outside \[0, 2\)"),
])
def test_bad_ascii_faces_name_the_file_and_line(tmp_path, body, message):
    head = (b"ply\nformat ascii 1.0\nelement vertex 2\nproperty float x\nproperty float y\nproperty float z\n"
            b"element edge 2\nproperty int a\nproperty int b\nelement face 2\nproperty list uchar int vertex_indices\n"
            b"end_header\n")
    (tmp_path / "m.ply").write_bytes(head + body)
    with pytest.raises(ValueError, match=message):
        read_ply(tmp_path / "m.ply")


def test_a_binary_list_cut_short_is_named(tmp_path):
    _mesh_ply(tmp_path / "m.ply", np.zeros((5, 3)), [[0, 1, 2], [0, 1, 2, 3]], "binary_little_endian")
    data = (tmp_path / "m.ply").read_bytes()
    (tmp_path / "m.ply").write_bytes(data[:-3])
    with pytest.raises(ValueError, match=r"m\.ply: truncated in element 'face' \(row 1 of 2 runs past"):
        read_ply(tmp_path / "m.ply")
