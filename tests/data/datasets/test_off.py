import re

import numpy as np
import pytest

from pointabstract.data.categories import MODELNET40
from pointabstract.data.datasets.folder_cache import cache_folder
from pointabstract.data.datasets.off import find_meshes, read_off, sample_mesh, write_off
from pointabstract.data.datasets.off_cache import prepare_off_cache
from pointabstract.data.synthetic.surface import sample_surface

SQUARE = "4 1 0\n0 0 0\n1 0 0\n1 1 0\n0 1 0\n4 0 1 2 3\n"


def _write(tmp_path, text, name="m.off"):
    path = tmp_path / name
    path.write_bytes(text.encode())
    return path


@pytest.mark.parametrize("text", [
    "OFF\n" + SQUARE,                                   # standard
    "OFF4 1 0\n" + SQUARE.split("\n", 1)[1],            # counts glued to OFF (ModelNet40 files)
    "OFF 4 1 0\n" + SQUARE.split("\n", 1)[1],           # counts on the header line
    "# made by hand\n\nOFF\n# counts\n4 1 0\n\n0 0 0\n1 0 0 # x\n1 1 0\n0 1 0\n4 0 1 2 3\n",
    ("OFF\n" + SQUARE).replace("\n", "\r\n"),           # Windows line endings
    "OFF\n" + SQUARE.replace("4 0 1 2 3", "4 0 1 2 3 255 0 0"),  # face colour
])
def test_quad_is_fan_triangulated_in_every_header_variant(tmp_path, text):
    vertices, faces = read_off(_write(tmp_path, text))
    assert vertices.dtype == np.float64 and faces.dtype == np.int64
    np.testing.assert_array_equal(vertices, [[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]])
    np.testing.assert_array_equal(faces, [[0, 1, 2], [0, 2, 3]])


def test_pentagon_and_triangles_mixed(tmp_path):
    text = "OFF\n6 2 0\n" + "0 0 0\n1 0 0\n2 1 0\n1 2 0\n0 1 0\n5 5 5\n" + "5 0 1 2 3 4\n3 0 1 5\n"
    _, faces = read_off(_write(tmp_path, text))
    np.testing.assert_array_equal(faces, [[0, 1, 2], [0, 2, 3], [0, 3, 4], [0, 1, 5]])


def test_write_then_read_round_trip(tmp_path):
    rng = np.random.default_rng(0)
    v, f = rng.random((10, 3)), rng.integers(0, 10, (7, 3))
    write_off(tmp_path / "a.off", v, f)
    v2, f2 = read_off(tmp_path / "a.off")
    np.testing.assert_allclose(v2, v, rtol=1e-6)
    np.testing.assert_array_equal(f2, f)
    with pytest.raises(ValueError, match=r"vertices must have shape \(V, 3\)"):
        write_off(tmp_path / "b.off", np.zeros((3, 2)), f)
    with pytest.raises(ValueError, match=r"faces must have shape \(F, 3\)"):
        write_off(tmp_path / "b.off", v, np.zeros((3, 4), int))


@pytest.mark.parametrize("text, message", [
    ("", r"empty file"),
    ("PLY\n3 1 0\n", r"m\.off:1: expected the header 'OFF'"),
    ("OFF\n", r"m\.off:1: truncated file: no counts line"),
    ("OFF\n3 x 0\n", r"m\.off:2: bad counts line '3 x 0'"),
    ("OFF\n3 -1 0\n", r"m\.off:2: bad counts line"),
    ("OFF\n3 0 0\n0 0 0\n1 0 0\n0 1 0\n", r"m\.off:2: empty mesh \(3 vertices, 0 faces\)"),
    ("OFF\n0 0 0\n", r"m\.off:2: empty mesh"),
    ("OFF\n3 1 0\n0 0 0\n1 0 0\n", r"m\.off:4: truncated file: the header announces 3 vertices and 1 faces"),
    ("OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n3 0 1 2\n", r"m\.off:7: unexpected data after the last face"),
    ("OFF\n3 1 0\n0 0 0\n1 zero 0\n0 1 0\n3 0 1 2\n", r"m\.off:4: bad vertex line '1 zero 0'"),
    ("OFF\n3 1 0\n0 0 0\n1 0\n0 1 0\n3 0 1 2\n", r"m\.off:4: bad vertex line"),
    ("OFF\n3 1 0\n0 0 0\nnan 0 0\n0 1 0\n3 0 1 2\n", r"m\.off:4: non-finite vertex 'nan 0 0'"),
    ("OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1 3\n", r"m\.off:6: face index out of range \[0, 3\)"),
    ("OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n4 0 1 -1 2\n", r"m\.off:6: face index out of range"),
    ("OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n2 0 1\n", r"m\.off:6: bad face line '2 0 1'"),
    ("OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1\n", r"m\.off:6: bad face line"),
])
def test_malformed_files_name_the_file_and_line(tmp_path, text, message):
    with pytest.raises(ValueError, match=message):
        read_off(_write(tmp_path, text))


def test_missing_file_is_a_value_error(tmp_path):
    with pytest.raises(ValueError, match=r"nope\.off: cannot read OFF file"):
        read_off(tmp_path / "nope.off")


def test_sample_mesh_names_the_file_of_a_degenerate_mesh(tmp_path):
    path = _write(tmp_path, "OFF\n3 1 0\n0 0 0\n1 0 0\n2 0 0\n3 0 1 2\n")  # zero area
    with pytest.raises(ValueError, match=r"m\.off: mesh has no triangle of positive finite area"):
        sample_mesh(path, 10, rng=np.random.default_rng(0))


def _off_tree(tmp_path, classes=("chair", "bed")):
    root = tmp_path / "ModelNet40"
    for c in classes:
        for split, count in (("train", 2), ("test", 1)):
            (root / c / split).mkdir(parents=True)
            for i in range(count):
                write_off(root / c / split / f"{c}_{i + 1:04d}.off",
                          np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1.0]]) * (i + 1),
                          np.array([[0, 1, 2], [0, 1, 3], [0, 2, 3], [1, 2, 3]]))
    return root


def test_an_up_to_date_cache_an_earlier_version_wrote_into_the_tree_is_still_read(tmp_path):
    root = _off_tree(tmp_path)
    elsewhere = prepare_off_cache(root, "train", classes=MODELNET40, mesh_points=64, progress=False)
    legacy = root / elsewhere.name
    elsewhere.rename(legacy)  # where versions before 2026-11 wrote it
    assert prepare_off_cache(root, "train", classes=MODELNET40, mesh_points=64, progress=False) == legacy
    (root / "bed" / "train" / "bed_0001.off").write_text("OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n")
    rebuilt = prepare_off_cache(root, "train", classes=MODELNET40, mesh_points=64, progress=False)
    assert rebuilt == elsewhere and rebuilt.is_file()  # out of date: rebuilt outside the tree


def test_cache_is_written_once_reused_and_rebuilt_when_meshes_change(tmp_path):
    root = _off_tree(tmp_path)
    assert [p.name for p in find_meshes(root, "train")] == ["bed_0001.off", "bed_0002.off",
                                                          "chair_0001.off", "chair_0002.off"]
    cache = prepare_off_cache(root, "train", classes=MODELNET40, mesh_points=64, progress=False)
    assert cache == cache_folder(root, "modelnet") / "ModelNet40_train_64pts_seed0.h5"
    assert not cache.is_relative_to(root) and not list(root.rglob("*.h5"))  # never in the user's tree
    stamp = cache.stat().st_mtime_ns
    assert prepare_off_cache(root, "train", classes=MODELNET40, mesh_points=64, progress=False) == cache
    assert cache.stat().st_mtime_ns == stamp  # reused
    write_off(root / "bed" / "train" / "bed_0003.off", np.eye(3), np.array([[0, 1, 2]]))
    prepare_off_cache(root, "train", classes=MODELNET40, mesh_points=64, progress=False)
    import h5py

    with h5py.File(cache) as handle:
        assert handle["data"].shape == (5, 64, 3) and handle["normal"].shape == (5, 64, 3)
        assert [s.decode() for s in handle["source"]][-1] == "chair/train/chair_0002.off"
        np.testing.assert_array_equal(handle["label"][()], [2, 2, 2, 8, 8])  # bed, chair
    assert not list(root.glob("*.tmp"))


def _cached_points(cache):
    import h5py

    with h5py.File(cache) as handle:
        return handle["data"][()]


def test_mesh_edited_in_place_with_the_same_size_is_resampled(tmp_path, notes):
    root = _off_tree(tmp_path)
    cache = prepare_off_cache(root, "train", classes=MODELNET40, mesh_points=64, progress=False)
    assert f"mesh cache {cache} not found: building it from 4 meshes" in notes()
    before = _cached_points(cache)
    assert before[0].max() <= 1.0  # bed_0001: the unit tetrahedron
    mesh = root / "bed" / "train" / "bed_0001.off"
    size, text = mesh.stat().st_size, mesh.read_text()
    assert "\n1 0 0\n" in text
    mesh.write_text(text.replace("\n1 0 0\n", "\n7 0 0\n"))  # a vertex moves, same byte size
    assert mesh.stat().st_size == size
    assert prepare_off_cache(root, "train", classes=MODELNET40, mesh_points=64, progress=False) == cache
    err = notes()
    assert f"mesh cache {cache} out of date (1 mesh changed): rebuilding it from 4 meshes" in err
    after = _cached_points(cache)
    assert after[0, :, 0].max() > 1.5 and after[0].max() <= 7.0  # bed_0001 now reaches x = 7
    np.testing.assert_array_equal(after[1:], before[1:])  # the other meshes: the same samples
    prepare_off_cache(root, "train", classes=MODELNET40, mesh_points=64, progress=False)
    assert notes() == ""  # up to date again: reused without a word


def test_rebuild_says_what_changed(tmp_path, notes):
    root = _off_tree(tmp_path)
    cache = prepare_off_cache(root, "train", classes=MODELNET40, mesh_points=16, progress=False)
    (root / "bed" / "train" / "bed_0002.off").unlink()
    write_off(root / "chair" / "train" / "chair_0007.off", np.eye(3), np.array([[0, 1, 2]]))
    write_off(root / "chair" / "train" / "chair_0008.off", np.eye(3), np.array([[0, 1, 2]]))
    notes()
    prepare_off_cache(root, "train", classes=MODELNET40, mesh_points=16, progress=False)
    assert "out of date (2 meshes added, 1 mesh removed): rebuilding" in notes()
    classes = ("bed", "chair")
    prepare_off_cache(root, "train", classes=classes, mesh_points=16, progress=False)
    assert "out of date (the class list changed): rebuilding" in notes()
    import h5py

    with h5py.File(cache, "a") as handle:
        np.testing.assert_array_equal(handle["label"][()], [0, 1, 1, 1, 1])
        handle.attrs["signature"] = "v1 0123"
    prepare_off_cache(root, "train", classes=classes, mesh_points=16, progress=False)
    assert "written by another version of pointabstract: rebuilding" in notes()
    cache.write_bytes(b"not an hdf5 file")
    prepare_off_cache(root, "train", classes=classes, mesh_points=16, progress=False)
    assert f"mesh cache {cache} is unreadable (" in notes()
    assert _cached_points(cache).shape == (5, 16, 3)


def test_upper_case_extensions_are_meshes_too(tmp_path):
    root = _off_tree(tmp_path)
    (root / "bed" / "train" / "bed_0002.off").rename(root / "bed" / "train" / "bed_0002.OFF")
    (root / "chair" / "train" / "chair_0001.off").rename(root / "chair" / "train" / "chair_0001.Off")
    (root / "chair" / "train" / "notes.offset").write_text("not a mesh")
    (root / "chair" / "train" / "folder.off").mkdir()
    assert [p.name for p in find_meshes(root, "train")] == ["bed_0001.off", "bed_0002.OFF",
                                                          "chair_0001.Off", "chair_0002.off"]
    cache = prepare_off_cache(root, "train", classes=MODELNET40, mesh_points=16, progress=False)
    import h5py

    with h5py.File(cache) as handle:
        assert [s.decode() for s in handle["source"]][1:3] == ["bed/train/bed_0002.OFF",
                                                               "chair/train/chair_0001.Off"]
        np.testing.assert_array_equal(handle["label"][()], [2, 2, 8, 8])


def test_cache_is_the_same_with_workers_and_refuses_unknown_classes(tmp_path):
    root = _off_tree(tmp_path)
    a = prepare_off_cache(root, "test", classes=MODELNET40, mesh_points=32, progress=False,
                          cache_dir=tmp_path / "a")
    b = prepare_off_cache(root, "test", classes=MODELNET40, mesh_points=32, progress=False,
                          cache_dir=tmp_path / "b", workers=2)
    import h5py

    with h5py.File(a) as ha, h5py.File(b) as hb:
        np.testing.assert_array_equal(ha["data"][()], hb["data"][()])
    with pytest.raises(ValueError, match=r"chair_0001\.off: unknown class folder 'chair'"):
        prepare_off_cache(root, "test", classes=("bed",), progress=False, cache_dir=tmp_path / "c")
    with pytest.raises(ValueError, match=r"no <class>/val/\*\.off mesh found"):
        prepare_off_cache(root, "val", classes=MODELNET40, progress=False)


def test_empty_mesh_in_the_tree_names_the_file(tmp_path):
    root = _off_tree(tmp_path)
    (root / "bed" / "train" / "bed_0009.off").write_text("OFF\n0 0 0\n")
    with pytest.raises(ValueError, match=r"bed_0009\.off:2: empty mesh"):
        prepare_off_cache(root, "train", classes=MODELNET40, progress=False)


def _on_triangles(points, vertices, faces, chosen):
    """Distance of each point to the plane of its triangle, and its smallest barycentric coordinate."""
    a, b, c = (vertices[faces[chosen, i]] for i in range(3))
    n = np.cross(b - a, c - a)
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    dist = np.abs(((points - a) * n).sum(1))
    v0, v1, v2 = b - a, c - a, points - a
    d00, d01, d11 = (v0 * v0).sum(1), (v0 * v1).sum(1), (v1 * v1).sum(1)
    d20, d21 = (v2 * v0).sum(1), (v2 * v1).sum(1)
    den = d00 * d11 - d01 * d01
    v, w = (d11 * d20 - d01 * d21) / den, (d00 * d21 - d01 * d20) / den
    return dist, np.minimum.reduce([1 - v - w, v, w])


def test_real_modelnet_meshes_parse_and_sample_on_their_surface(realdata, tmp_path):
    files = sorted((realdata / "ModelNet40").glob("*/*/*.off"))
    assert len(files) == 23
    for path in files:
        raw = path.read_bytes()
        vertices, faces = read_off(path)
        header = raw.split(b"OFF", 1)[1].split()
        assert len(vertices) == int(header[0]) and len(faces) >= int(header[1]) > 0
        rng = np.random.default_rng(0)
        points, normals, chosen = sample_surface(vertices, faces, 256, rng, face_labels=np.arange(len(faces)))
        assert np.isfinite(points).all() and np.isfinite(normals).all()
        scale = np.ptp(vertices, axis=0).max()
        dist, bary = _on_triangles(points.astype(np.float64), vertices, faces, chosen)
        assert dist.max() < 1e-5 * scale and bary.min() > -1e-3, path
        assert np.allclose(np.linalg.norm(normals, axis=1), 1, atol=1e-5)
        if re.match(rb"OFF\d", raw):
            continue  # already glued (the README announces 7 such files; this copy has none)
        # the same mesh with the malformed header glued to the counts reads the same
        lines = raw.decode("latin-1").splitlines()
        glued_copy = tmp_path / path.name
        glued_copy.write_text("\n".join(["OFF" + lines[1].strip()] + lines[2:]) + "\n")
        v2, f2 = read_off(glued_copy)
        np.testing.assert_array_equal(v2, vertices)
        np.testing.assert_array_equal(f2, faces)
