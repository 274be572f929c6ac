"""pointabstract.data.files: every format read from hand-written files, binary and ascii agreeing,
the area sampler on a box, finding files, and one error per bad input."""

import struct
from pathlib import Path

import numpy as np
import pytest

from pointabstract.data.datasets.off import read_off
from pointabstract.data.files import (
    NO_FACES,
    NOT_NORMALS,
    SUPPORTED_SUFFIXES,
    ShapeFile,
    ShapeFileError,
    find_shape_files,
    read_shape,
    sample_shape,
)

# a 1 x 2 x 3 box: vertex 4x + 2y + z sits at (x, 2y, 3z); six quads, each split into a fan of two
BOX = np.array([(x, 2 * y, 3 * z) for x in (0, 1) for y in (0, 1) for z in (0, 1)], dtype=np.float64)
QUADS = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
TRIANGLES = np.array([t for a, b, c, d in QUADS for t in ((a, b, c), (a, c, d))], dtype=np.int64)
CLOUD = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1.5]], dtype=np.float64)
NORMALS = np.array([[0, 0, 1], [1, 0, 0], [0, 1, 0], [0, 0, -1]], dtype=np.float64)


# --- writers (the folder-dataset tests use them too) ---------------------------------------------

def write_off_box(path: Path, *, crlf: bool = False, glued: bool = False) -> Path:
    head = f"OFF{len(BOX)} {len(QUADS)} 0\n" if glued else f"OFF\n{len(BOX)} {len(QUADS)} 0\n"
    text = head + "".join(f"{x:g} {y:g} {z:g}\n" for x, y, z in BOX) + "".join(
        f"4 {a} {b} {c} {d}\n" for a, b, c, d in QUADS)
    path.write_bytes((text.replace("\n", "\r\n") if crlf else text).encode())
    return path


def write_obj_box(path: Path, *, negative: bool = False) -> Path:
    """The box with ``v/vt/vn`` corners (normal k = vertex k), or negative (relative) indices."""
    rows = [f"v {x:g} {y:g} {z:g}" for x, y, z in BOX] + ["vt 0 0"]
    rows += [f"vn {x:g} {y:g} {z:g}" for x, y, z in BOX / np.linalg.norm(BOX + 1e-9, axis=1, keepdims=True)]
    for quad in QUADS:
        corners = [f"{i - 8}" if negative else f"{i + 1}/1/{i + 1}" for i in quad]
        rows.append("f " + " ".join(corners))
    path.write_text("# a box\no box\n" + "\n".join(rows) + "\n")
    return path


def write_ply_box(path: Path, *, fmt: str = "ascii") -> Path:
    head = (f"ply\nformat {fmt} 1.0\nelement vertex {len(BOX)}\nproperty float x\nproperty float y\n"
            f"property float z\nelement face {len(QUADS)}\nproperty list uchar int vertex_indices\nend_header\n")
    if fmt == "ascii":
        body = "".join(f"{x:g} {y:g} {z:g}\n" for x, y, z in BOX) + "".join(
            "4 " + " ".join(map(str, q)) + "\n" for q in QUADS)
        path.write_bytes((head + body).encode())
        return path
    e = "<" if fmt == "binary_little_endian" else ">"
    body = BOX.astype(f"{e}f4").tobytes() + b"".join(struct.pack(f"{e}B4i", 4, *q) for q in QUADS)
    path.write_bytes(head.encode() + body)
    return path


def write_stl_box(path: Path, *, binary: bool, solid_header: bool = False) -> Path:
    corners = BOX[TRIANGLES]  # (T, 3, 3)
    if binary:
        header = (b"solid made by a test" if solid_header else b"binary").ljust(80, b" ")
        records = b"".join(struct.pack("<12fH", 0, 0, 0, *tri.ravel(), 0) for tri in corners)
        path.write_bytes(header + struct.pack("<I", len(corners)) + records)
        return path
    facets = "".join("facet normal 0 0 0\n outer loop\n" + "".join(f"  vertex {x:g} {y:g} {z:g}\n" for x, y, z in tri)
                     + " endloop\nendfacet\n" for tri in corners)
    path.write_text(f"solid box\n{facets}endsolid box\n")
    return path


def write_pcd(path: Path, *, binary: bool, normals: bool = True, extra: bool = True) -> Path:
    """CLOUD (+ NORMALS) as PCD, with an rgb field between (skipped by the reader)."""
    fields = ["x", "y", "z"] + (["rgb"] if extra else []) + (["normal_x", "normal_y", "normal_z"] if normals else [])
    table = np.hstack([CLOUD] + ([np.full((4, 1), 7.0)] if extra else []) + ([NORMALS] if normals else []))
    head = (f"# .PCD v0.7\nVERSION 0.7\nFIELDS {' '.join(fields)}\nSIZE {' '.join(['4'] * len(fields))}\n"
            f"TYPE {' '.join(['F'] * len(fields))}\nCOUNT {' '.join(['1'] * len(fields))}\nWIDTH 4\nHEIGHT 1\n"
            f"VIEWPOINT 0 0 0 1 0 0 0\nPOINTS 4\nDATA {'binary' if binary else 'ascii'}\n")
    body = table.astype("<f4").tobytes() if binary else "".join(" ".join(f"{v:g}" for v in r) + "\n" for r in table).encode()
    path.write_bytes(head.encode() + body)
    return path


# --- every format ----------------------------------------------------------------------------------

def _same_mesh(shape: ShapeFile, vertices=BOX, triangles=TRIANGLES):
    """Equal as triangle sets over vertex positions (readers may renumber vertices)."""
    assert shape.is_mesh and shape.points.dtype in (np.float32, np.float64) and shape.faces.dtype == np.int64
    got = sorted(tuple(sorted(map(tuple, shape.points[f].tolist()))) for f in shape.faces)
    want = sorted(tuple(sorted(map(tuple, vertices[f].tolist()))) for f in triangles)
    assert got == want


@pytest.mark.parametrize("name, write, dtype", [
    ("box.off", write_off_box, np.float64),
    ("crlf.off", lambda p: write_off_box(p, crlf=True, glued=True), np.float64),
    ("box.obj", write_obj_box, np.float64),
    ("relative.obj", lambda p: write_obj_box(p, negative=True), np.float64),
    ("ascii.ply", write_ply_box, np.float64),
    ("le.ply", lambda p: write_ply_box(p, fmt="binary_little_endian"), np.float32),
    ("be.ply", lambda p: write_ply_box(p, fmt="binary_big_endian"), np.float32),
    ("ascii.stl", lambda p: write_stl_box(p, binary=False), np.float64),
    ("binary.stl", lambda p: write_stl_box(p, binary=True), np.float32),
    ("solid.STL", lambda p: write_stl_box(p, binary=True, solid_header=True), np.float32),
])
def test_every_mesh_format_reads_the_same_box(tmp_path, name, write, dtype):
    shape = read_shape(write(tmp_path / name))
    _same_mesh(shape)
    assert shape.note is None and shape.path == tmp_path / name
    assert shape.points.dtype == dtype  # the file's precision: text parses to float64


def test_exact_vertices_and_fans_where_the_format_keeps_the_order(tmp_path):
    for path in (write_off_box(tmp_path / "a.off"), write_ply_box(tmp_path / "a.ply"),
                 write_obj_box(tmp_path / "a.obj"), write_obj_box(tmp_path / "b.obj", negative=True)):
        shape = read_shape(path)
        np.testing.assert_array_equal(shape.points, BOX)
        np.testing.assert_array_equal(shape.faces, TRIANGLES)


def test_obj_normals_follow_the_corners_that_name_them(tmp_path):
    shape = read_shape(write_obj_box(tmp_path / "a.obj"))
    np.testing.assert_allclose(shape.normals, BOX / np.linalg.norm(BOX + 1e-9, axis=1, keepdims=True), atol=1e-6)
    # vertex 0 gets two different normals from two faces: per-corner data, left out
    (tmp_path / "b.obj").write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nvn 0 0 1\nvn 0 0 -1\nf 1//1 2//1 3//1\nf 1//2 3//2 2//2\n")
    assert read_shape(tmp_path / "b.obj").normals is None


def test_obj_polygon_with_tabs_and_vertex_colours(tmp_path):
    (tmp_path / "p.obj").write_text("v\t0 0 0 1 0 0\nv 1 0 0 1 0 0\nv 1 1 0\nv 0 1 0\nv 0 2 0\nf 1 2 3 4 5\n")
    shape = read_shape(tmp_path / "p.obj")
    np.testing.assert_array_equal(shape.faces, [[0, 1, 2], [0, 2, 3], [0, 3, 4]])
    assert shape.normals is None


def test_ply_mixed_polygons_and_an_element_before_the_faces(tmp_path):
    head = ("ply\nformat {fmt} 1.0\nelement vertex 5\nproperty float x\nproperty float y\nproperty float z\n"
            "element edge 1\nproperty int vertex1\nproperty int vertex2\n"
            "element face 2\nproperty uchar flags\nproperty list uchar int vertex_indices\nend_header\n")
    points = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [0, 0, 1]], dtype=np.float32)
    ascii_body = "".join(f"{x:g} {y:g} {z:g}\n" for x, y, z in points) + "0 1\n9 4 0 1 2 3\n9 3 0 1 4\n"
    (tmp_path / "a.ply").write_text(head.format(fmt="ascii") + ascii_body)
    binary = (points.astype("<f4").tobytes() + struct.pack("<2i", 0, 1) + struct.pack("<BB4i", 9, 4, 0, 1, 2, 3)
              + struct.pack("<BB3i", 9, 3, 0, 1, 4))
    (tmp_path / "b.ply").write_bytes(head.format(fmt="binary_little_endian").encode() + binary)
    for name in ("a.ply", "b.ply"):
        shape = read_shape(tmp_path / name)
        np.testing.assert_array_equal(shape.points, points)
        np.testing.assert_array_equal(shape.faces, [[0, 1, 2], [0, 2, 3], [0, 1, 4]])


@pytest.mark.parametrize("fmt", ["ascii", "binary_little_endian", "binary_big_endian"])
def test_ply_point_cloud_with_normals(tmp_path, fmt):
    from tests.fixtures import write_ply

    points = np.random.default_rng(3).normal(size=(30, 3)).astype(np.float32)
    write_ply(tmp_path / "c.ply", points, fmt=fmt)
    shape = read_shape(tmp_path / "c.ply")
    assert not shape.is_mesh and shape.faces is None and shape.note is None
    np.testing.assert_allclose(shape.points, points, atol=1e-6)
    np.testing.assert_allclose(shape.normals, points / np.linalg.norm(points, axis=1, keepdims=True), atol=1e-5)


@pytest.mark.parametrize("binary", [False, True])
def test_pcd_ascii_and_binary_agree(tmp_path, binary):
    shape = read_shape(write_pcd(tmp_path / "c.pcd", binary=binary))
    np.testing.assert_array_equal(shape.points, CLOUD)
    np.testing.assert_array_equal(shape.normals, NORMALS)
    assert not shape.is_mesh
    assert read_shape(write_pcd(tmp_path / "d.pcd", binary=binary, normals=False, extra=False)).normals is None


@pytest.mark.parametrize("text", [
    "0 0 0\n1 0 0\n0 1 0\n0 0 1.5\n",
    "x,y,z\n0,0,0\n1,0,0\n0,1,0\n0,0,1.5\n",
    "# scanner export\n0;0;0\n1;0;0\n\n0;1;0\n0;0;1.5\n",
    "0\t0\t0\r\n1\t0\t0\r\n0\t1\t0\r\n0\t0\t1.5\r\n",
    "X Y Z R G B\n0 0 0 255 0 0\n1 0 0 0 255 0\n0 1 0 0 0 255\n0 0 1.5 9 9 9\n",  # colours named by the header
])
def test_text_tables_without_normals(tmp_path, text):
    (tmp_path / "c.txt").write_text(text)
    shape = read_shape(tmp_path / "c.txt")
    np.testing.assert_array_equal(shape.points, CLOUD)
    assert shape.normals is None


@pytest.mark.parametrize("name, text", [
    ("c.xyz", "0 0 0 0 0 1\n1 0 0 1 0 0\n0 1 0 0 1 0\n0 0 1.5 0 0 -1\n"),
    ("c.csv", "x,y,z,nx,ny,nz\n0,0,0,0,0,1\n1,0,0,1,0,0\n0,1,0,0,1,0\n0,0,1.5,0,0,-1\n"),
    ("c.csv", "i,normal_x,normal_y,normal_z,x,y,z\n0,0,0,1,0,0,0\n1,1,0,0,1,0,0\n2,0,1,0,0,1,0\n3,0,0,-1,0,0,1.5\n"),
])
def test_text_tables_with_normals(tmp_path, name, text):
    (tmp_path / name).write_text(text)
    shape = read_shape(tmp_path / name)
    np.testing.assert_array_equal(shape.points, CLOUD)
    np.testing.assert_array_equal(shape.normals, NORMALS)


def test_six_columns_that_are_not_normals_are_left_out_with_a_note(tmp_path):
    rgb = np.array([[255, 0, 0], [0, 255, 0], [0, 0, 255], [9, 9, 9]], dtype=np.float64)
    (tmp_path / "c.xyz").write_text("".join(" ".join(f"{v:g}" for v in row) + "\n" for row in np.hstack([CLOUD, rgb])))
    np.save(tmp_path / "c.npy", np.hstack([CLOUD, rgb]))
    np.savez(tmp_path / "c.npz", points=np.hstack([CLOUD, rgb]))
    for name in ("c.xyz", "c.npy", "c.npz"):
        shape = read_shape(tmp_path / name)
        np.testing.assert_array_equal(shape.points, CLOUD)
        assert shape.normals is None and shape.note == NOT_NORMALS


def test_shapenet_part_rows_are_read_without_their_part_ids(tmp_path):
    from pointabstract.data.datasets.point_table import SHAPENET_PART_NOTE

    (tmp_path / "s.txt").write_text("0 0 0 0 0 1 6.000000\n1 0 0 1 0 0 7\n0 1 0 0 1 0 6\n0 0 1.5 0 0 -1 7\n")
    shape = read_shape(tmp_path / "s.txt")
    np.testing.assert_array_equal(shape.points, CLOUD)
    np.testing.assert_array_equal(shape.normals, NORMALS)
    assert shape.note == SHAPENET_PART_NOTE
    (tmp_path / "f.txt").write_text("0 0 0 0 0 1 6.5\n")
    with pytest.raises(ShapeFileError, match=r"f\.txt:1: 7 columns whose last is not whole numbers"):
        read_shape(tmp_path / "f.txt")


def test_real_shapenet_part_and_resampled_modelnet_text_files(realdata):
    part = sorted((realdata / "shapenetcore_partanno_segmentation_benchmark_v0_normal").glob("*/*.txt"))
    resampled = sorted(p for p in (realdata / "modelnet40_normal_resampled").glob("*/*.txt"))
    if not part or not resampled:
        pytest.skip("no ShapeNetPart / resampled ModelNet40 text files in realdata")
    for path, columns in ((part[0], 7), (resampled[0], 6)):
        table = np.loadtxt(path, delimiter="," if columns == 6 else None)
        shape = read_shape(path)
        np.testing.assert_allclose(shape.points, table[:, :3], rtol=1e-6)
        np.testing.assert_allclose(shape.normals, table[:, 3:6], rtol=1e-6)


def test_normals_named_by_a_header_are_kept_as_they_are(tmp_path):
    (tmp_path / "c.csv").write_text("x,y,z,nx,ny,nz\n0,0,0,0,0,2\n1,0,0,3,0,0\n")
    shape = read_shape(tmp_path / "c.csv")
    np.testing.assert_array_equal(shape.normals, [[0, 0, 2], [3, 0, 0]])
    assert shape.note is None


def test_what_looks_like_normals():
    from pointabstract.data.datasets.point_table import unit_normals

    unit = np.tile(NORMALS, (5, 1))  # 20 unit rows
    assert unit_normals(unit) and unit_normals(np.vstack([unit, [[0, 0, 0], [0.01, 0, 0]]]))  # 2 degenerate of 22
    assert not unit_normals(np.vstack([unit, [[0, 0, 0.3]] * 3]))  # 3 of 23 short: 87 % unit
    assert not unit_normals(np.vstack([unit, [[0, 0, 1.1]]]))  # longer than 1.05
    assert not unit_normals(np.array([[1.0, 1.0, 1.0], [1, 0, 0]]))  # white and red, colours in [0, 1]


def test_numpy_files(tmp_path):
    np.save(tmp_path / "a.npy", CLOUD)
    np.save(tmp_path / "b.npy", np.hstack([CLOUD, NORMALS]).astype(np.float32))
    np.savez(tmp_path / "c.npz", pos=CLOUD, normals=NORMALS, label=np.array(3))
    np.savez(tmp_path / "d.npz", CLOUD)  # the only array, named arr_0
    np.savez(tmp_path / "e.npz", xyz=np.hstack([CLOUD, NORMALS]))
    for name, normals in [("a.npy", None), ("b.npy", NORMALS), ("c.npz", NORMALS), ("d.npz", None), ("e.npz", NORMALS)]:
        shape = read_shape(tmp_path / name)
        np.testing.assert_array_equal(shape.points, CLOUD)
        if normals is None:
            assert shape.normals is None
        else:
            np.testing.assert_array_equal(shape.normals, normals)


@pytest.mark.parametrize("name, text", [
    ("c.off", "OFF\n3 0 0\n0 0 0\n1 0 0\n0 1 0\n"),
    ("c.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\n"),
    ("c.ply", "ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\nproperty float z\n"
              "element face 0\nproperty list uchar int vertex_indices\nend_header\n0 0 0\n1 0 0\n0 1 0\n"),
])
def test_mesh_formats_without_faces_are_clouds_with_a_note(tmp_path, name, text):
    (tmp_path / name).write_text(text)
    shape = read_shape(tmp_path / name)
    assert not shape.is_mesh and shape.faces is None and shape.note == NO_FACES == "mesh without faces: used as a point cloud"
    np.testing.assert_array_equal(shape.points, [[0, 0, 0], [1, 0, 0], [0, 1, 0]])
    points, normals = sample_shape(shape, 100, rng=np.random.default_rng(0))
    assert points is shape.points and normals is None  # a cloud is returned as it is


# --- the sampler -----------------------------------------------------------------------------------

def test_box_samples_are_spread_by_area(tmp_path):
    shape = read_shape(write_obj_box(tmp_path / "box.obj"))
    points, normals = sample_shape(shape, 22_000, rng=np.random.default_rng(0))
    assert points.shape == normals.shape == (22_000, 3) and points.dtype == np.float64  # an OBJ is text
    # every point lies on one of the six faces; their areas are 6, 6, 3, 3, 2, 2 of 22
    on = {"x": np.isclose(points[:, 0], 0) | np.isclose(points[:, 0], 1),
          "y": np.isclose(points[:, 1], 0) | np.isclose(points[:, 1], 2),
          "z": np.isclose(points[:, 2], 0) | np.isclose(points[:, 2], 3)}
    assert (on["x"] | on["y"] | on["z"]).all()
    for axis, share in (("x", 12 / 22), ("y", 6 / 22), ("z", 4 / 22)):
        assert abs(on[axis].mean() - share) < 0.02, (axis, on[axis].mean())
    # each point carries the unit normal of its face
    np.testing.assert_allclose(np.abs(normals[on["x"] & ~on["y"] & ~on["z"]]), [[1, 0, 0]] * int((on["x"] & ~on["y"] & ~on["z"]).sum()))


def test_sampling_is_seeded_and_binary_ascii_give_the_same_samples(tmp_path):
    a = read_shape(write_stl_box(tmp_path / "a.stl", binary=False))
    b = read_shape(write_stl_box(tmp_path / "b.stl", binary=True))
    sa = sample_shape(a, 50, rng=np.random.default_rng(7))
    sb = sample_shape(b, 50, rng=np.random.default_rng(7))
    np.testing.assert_allclose(sa[0], sb[0], atol=1e-6)  # float64 (ascii) and float32 (binary) storage
    assert not np.array_equal(sa[0], sample_shape(a, 50, rng=np.random.default_rng(8))[0])


def test_sample_shape_refuses_bad_n_and_flat_meshes(tmp_path):
    shape = read_shape(write_off_box(tmp_path / "a.off"))
    with pytest.raises(ValueError, match=r"n must be a positive int, got 0"):
        sample_shape(shape, 0, rng=np.random.default_rng(0))
    (tmp_path / "flat.obj").write_text("v 0 0 0\nv 1 0 0\nv 2 0 0\nf 1 2 3\n")
    with pytest.raises(ShapeFileError, match=r"flat\.obj: mesh has no triangle of positive finite area"):
        sample_shape(read_shape(tmp_path / "flat.obj"), 10, rng=np.random.default_rng(0))


# --- finding files ---------------------------------------------------------------------------------

def test_find_shape_files_in_folders_globs_and_files(tmp_path):
    for name in ("b/z.OBJ", "b/deep/y.ply", "a.off", "notes.md", ".hidden/h.ply", "b/.x.off"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    found = find_shape_files([tmp_path])
    assert found == [tmp_path / "a.off", tmp_path / "b/deep/y.ply", tmp_path / "b/z.OBJ"]
    assert find_shape_files([str(tmp_path / "b" / "**" / "*")]) == [tmp_path / "b/deep/y.ply", tmp_path / "b/z.OBJ"]
    # a file named twice (directly and in its folder) is listed once, in first-seen order
    assert find_shape_files([tmp_path / "a.off", tmp_path]) == [tmp_path / "a.off", tmp_path / "b/deep/y.ply",
                                                                tmp_path / "b/z.OBJ"]
    assert set(SUPPORTED_SUFFIXES) == {".ply", ".off", ".obj", ".stl", ".pcd", ".xyz", ".txt", ".csv", ".xyzn",
                                       ".xyzrgb", ".pts", ".npy", ".npz"}


def test_find_shape_files_errors(tmp_path):
    (tmp_path / "notes.md").write_text("")
    (tmp_path / "empty").mkdir()
    cases = [
        ([tmp_path / "notes.md"], r"notes\.md: unknown extension '\.md'; supported: \.ply \.off"),
        ([tmp_path / "empty"], r"empty: no shape file \(\.ply .*\) in this folder or below \(it holds: \(empty\)\)"),
        ([tmp_path / "nope.ply"], r"nope\.ply: no such file or folder"),
        ([str(tmp_path / "*.ply")], r"\*\.ply: no shape file .* matches this pattern"),
        ([], r"no input given"),
    ]
    for inputs, message in cases:
        with pytest.raises(ShapeFileError, match=message):
            find_shape_files(inputs)


# --- errors ----------------------------------------------------------------------------------------

def _bytes(path: Path, content) -> Path:
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path


@pytest.mark.parametrize("name, content, message", [
    ("a.dxf", "0\nSECTION\n", r"a\.dxf: unknown extension '\.dxf'; supported: \.ply"),
    ("empty.xyz", "", r"empty\.xyz: empty: no data line"),
    ("header_only.csv", "x,y,z\n", r"header_only\.csv: empty: no data line"),
    ("empty.obj", "# nothing\n", r"empty\.obj: empty: no point"),
    ("empty.off", "", r"empty\.off: empty file \(no OFF header\)"),
    ("empty.ply", "", r"empty\.ply: not a PLY file"),
    ("empty.stl", "", r"empty\.stl: not an STL file"),
    ("empty.pcd", "", r"empty\.pcd: not a PCD file"),
    ("empty.npy", "", r"empty\.npy: "),
    ("nan.xyz", "0 0 0\n1 nan 0\n", r"nan\.xyz: non-finite coordinates \(NaN or Inf\) at point 1 \(1 of 2 points\)"),
    ("inf.obj", "v 0 0 0\nv inf 0 0\n", r"inf\.obj: non-finite coordinates \(NaN or Inf\) at point 1"),
    ("cols.csv", "0,0,0,1\n1,1,1,1\n", r"cols\.csv:1: 4 columns; expected 3 \(x y z\) or 6 \(x y z nx ny nz\)"),
    ("eight.txt", "0 0 0 0 0 1 1 1\n", r"eight\.txt:1: 8 columns; expected 3"),
    ("ragged.xyz", "0 0 0\n1 1\n", r"ragged\.xyz:2: expected 3 numbers \(like the first data line\), got '1 1'"),
    ("word.xyz", "0 0 0\n1 a 1\n", r"word\.xyz:2: expected 3 numbers"),
    ("face.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 4\n", r"face\.obj:4: face corner '4' refers to a missing vertex \(the file has 3 vertices\)"),
    ("neg.obj", "v 0 0 0\nf -1 -2 -3\nv 1 0 0\n", r"neg\.obj:2: face corner '-2' refers to a missing vertex"),
    ("two.obj", "v 0 0 0\nv 1 0 0\nf 1 2\n", r"two\.obj:3: a face needs at least 3 corners"),
    ("badv.obj", "v 0 0\n", r"badv\.obj:1: bad vertex line '0 0': expected 3 numbers"),
    ("face.off", "OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1 5\n", r"face\.off:6: face index out of range \[0, 3\)"),
    ("face.ply", "ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\nproperty float z\n"
                 "element face 1\nproperty list uchar int vertex_indices\nend_header\n0 0 0\n1 0 0\n0 1 0\n3 0 1 7\n",
     r"face\.ply: a face refers to vertex \[0, 1, 7\], outside \[0, 3\)"),
    ("short.stl", "solid x\nfacet normal 0 0 1\nouter loop\nvertex 0 0 0\nvertex 1 0 0\nendloop\nendfacet\n",
     r"short\.stl: 2 'vertex' lines, not a multiple of 3"),
    ("none.stl", "solid x\nendsolid x\n", r"none\.stl: empty: the STL file has no triangle"),
    ("z.pcd", "VERSION 0.7\nFIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nCOUNT 1 1 1\nWIDTH 1\nHEIGHT 1\nPOINTS 1\n"
              "DATA binary_compressed\n", r"z\.pcd: truncated: no compressed sizes after 'DATA binary_compressed'"),
    ("u.pcd", "FIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nCOUNT 1 1 1\nPOINTS 1\nDATA binary_lzma\n",
     r"u\.pcd: unsupported PCD storage 'DATA binary_lzma' \(ascii, binary or binary_compressed\)"),
    ("xy.pcd", "FIELDS x y\nSIZE 4 4\nTYPE F F\nCOUNT 1 1\nPOINTS 1\nDATA ascii\n0 0\n", r"xy\.pcd: PCD header needs FIELDS with x y z"),
    ("rows.pcd", "FIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nCOUNT 1 1 1\nPOINTS 2\nDATA ascii\n0 0 0\n", r"rows\.pcd: expected 2 rows of 3 values"),
    # a field of no values (the fuzz test's mutation of a COUNT to 0): it was an IndexError
    ("count0.pcd", "FIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nCOUNT 0 1 1\nPOINTS 1\nDATA binary\n" + "\0" * 8,
     r"count0\.pcd: PCD header COUNT values must be positive integers, got \['0', '1', '1'\]"),
])
def test_bad_files_get_one_line_naming_the_file(tmp_path, name, content, message):
    with pytest.raises(ShapeFileError, match=message) as info:
        read_shape(_bytes(tmp_path / name, content))
    assert "\n" not in str(info.value) and str(tmp_path / name) in str(info.value)


def test_bad_numpy_files(tmp_path):
    np.save(tmp_path / "flat.npy", np.zeros(6))
    np.save(tmp_path / "wide.npy", np.zeros((5, 4)))
    np.save(tmp_path / "words.npy", np.array([["a", "b", "c"]]))
    np.savez(tmp_path / "many.npz", a=np.zeros((3, 3)), b=np.zeros((3, 3)))
    np.savez(tmp_path / "normals.npz", points=np.zeros((3, 3)), normals=np.zeros((2, 3)))
    np.save(tmp_path / "nan.npy", np.array([[0, 0, np.nan]]))
    np.save(tmp_path / "mask.npy", np.ones((4, 3), dtype=bool))
    cases = [("flat.npy", r"flat\.npy: the array must be a numeric \(N, 3\) or \(N, 6\) array .* got shape \(6,\)"),
             ("wide.npy", r"wide\.npy: .* got shape \(5, 4\)"),
             ("words.npy", r"words\.npy: .* of dtype <U1"),
             ("many.npz", r"many\.npz: no 'points', 'xyz' or 'pos' array, and more than one array \(found \['a', 'b'\]\)"),
             ("normals.npz", r"normals\.npz: 'normals' must be \(3, 3\) beside a \(N, 3\) 'points', got \(2, 3\)"),
             ("nan.npy", r"nan\.npy: non-finite coordinates"),
             ("mask.npy", r"mask\.npy: .* of dtype bool")]
    for name, message in cases:
        with pytest.raises(ShapeFileError, match=message):
            read_shape(tmp_path / name)


def test_missing_file_and_folder(tmp_path):
    with pytest.raises(ShapeFileError, match=r"gone\.ply: file not found"):
        read_shape(tmp_path / "gone.ply")
    (tmp_path / "dir.obj").mkdir()
    with pytest.raises(ShapeFileError, match=r"dir\.obj: is a folder, not a file"):
        read_shape(tmp_path / "dir.obj")


# --- real files ----------------------------------------------------------------------------------

def test_real_modelnet_meshes_read_as_read_off_reads_them(realdata):
    if not (realdata / "ModelNet40").is_dir():
        pytest.skip("no ModelNet40 meshes in realdata")
    files = find_shape_files([realdata / "ModelNet40"])
    assert len(files) >= 10 and all(f.suffix.lower() == ".off" for f in files)
    for path in files:
        shape = read_shape(path)
        vertices, faces = read_off(path)
        np.testing.assert_array_equal(shape.points, vertices)  # text: float64, as read_off reads it
        np.testing.assert_array_equal(shape.faces, faces)
        points, normals = sample_shape(shape, 256, rng=np.random.default_rng(0))
        assert points.shape == (256, 3) and np.isfinite(points).all()


def test_real_scannet_scene_is_xyz_with_colours_left_out(realdata):
    files = sorted((realdata / "scenes").glob("*_xyzrgb.npy"))
    if not files:
        pytest.skip("no ScanNet scene in realdata/scenes")
    shape = read_shape(files[0])
    assert shape.points.shape == (len(np.load(files[0], mmap_mode="r")), 3) and shape.note == NOT_NORMALS
    np.testing.assert_array_equal(shape.points, np.load(files[0])[:, :3])


# --- a light import ---------------------------------------------------------------------------------

def test_importing_the_module_imports_numpy_only():
    """``import pointabstract.data.files`` loads no third-party module but numpy (it used to pull
    in torch, h5py and tqdm through the package's eager ``__init__``: 2 s)."""
    import subprocess
    import sys

    code = ("import sys\nbefore = set(sys.modules)\nimport pointabstract.data.files\n"
            "top = {m.split('.')[0] for m in set(sys.modules) - before}\n"
            "print(sorted(top - set(sys.stdlib_module_names) - {'numpy', 'pointabstract'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]", out.stdout


def _npy_bytes(array: np.ndarray, shape_text: str | None = None) -> bytes:
    import io

    buffer = io.BytesIO()
    np.save(buffer, array)
    data = buffer.getvalue()
    return data if shape_text is None else data.replace(f"{array.shape}".encode(), shape_text.encode(), 1)


@pytest.mark.parametrize("shape_text, message", [
    ("(40000000000, 3)", r"a\.npy: the array announces \(40000000000, 3\) float64 values \(960000000000 bytes\)"),
    ("(0, 99999999999999999999)", r"a\.npy: the array announces \(0, 99999999999999999999\)"),
    ("(-4, 3)", r"a\.npy: the array announces \(-4, 3\)"),
])
def test_a_damaged_npy_header_is_refused_before_numpy_allocates_it(tmp_path, shape_text, message):
    """Found by the fuzz test: numpy allocates the announced array first (a MemoryError)."""
    (tmp_path / "a.npy").write_bytes(_npy_bytes(np.zeros((4, 3)), shape_text.ljust(6)))
    with pytest.raises(ShapeFileError, match=message):
        read_shape(tmp_path / "a.npy")
    (tmp_path / "b.npy").write_bytes(b"\x93NUMPY\x01\x73" + b"\xff" * 40)
    with pytest.raises(ShapeFileError, match=r"b\.npy: the array is not a whole \.npy array \(damaged header\)"):
        read_shape(tmp_path / "b.npy")


def test_a_damaged_npz_member_is_refused(tmp_path):
    import zipfile

    with zipfile.ZipFile(tmp_path / "a.npz", "w") as archive:
        archive.writestr("points.npy", _npy_bytes(np.zeros((4, 3)), "(4000000000, 3)"))
    with pytest.raises(ShapeFileError, match=r"a\.npz: array 'points\.npy' announces \(4000000000, 3\)"):
        read_shape(tmp_path / "a.npz")
