import numpy as np
import pytest

from pointabstract.data.shapenet_core import SHAPENET_CORE13, ShapeNetCore, find_ply_folder, read_ply_points
from tests.data.test_shapenet_part import CAP, MUG, write_hdf5

HEADER = "ply\nformat {fmt} 1.0\ncomment written by a test\nelement vertex {n}\n{props}end_header\n"
PROPS = "property float x\nproperty float y\nproperty float z\nproperty float nx\nproperty float ny\nproperty float nz\n"


def write_ply(path, points, *, fmt="ascii"):
    table = np.hstack([points, points / np.linalg.norm(points, axis=1, keepdims=True)]).astype(np.float32)
    head = HEADER.format(fmt=fmt, n=len(points), props=PROPS).encode()
    if fmt == "ascii":
        body = "".join(" ".join(f"{v:.6f}" for v in row) + "\n" for row in table).encode()
    else:
        body = table.astype("<f4" if fmt == "binary_little_endian" else ">f4").tobytes()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(head + body)


def write_core13(root, per_category=5, n=64):
    folder = root / "shapenet_core13" / "customShapeNet"
    rng = np.random.default_rng(0)
    for synset in ("02691156", "04530566"):
        for i in range(per_category):
            fmt = ("ascii", "binary_little_endian", "binary_big_endian")[i % 3]
            write_ply(folder / synset / "ply" / f"{i:03d}.points.ply", rng.normal(size=(n, 3)), fmt=fmt)
    return folder


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


def test_core13_layout_splits_80_20_and_samples_at_random(tmp_path):
    folder = write_core13(tmp_path)
    assert find_ply_folder(tmp_path) == folder
    train, test = ShapeNetCore(tmp_path, "train", num_points=32), ShapeNetCore(tmp_path, "test", num_points=32)
    assert train.layout == "ply" and (len(train), len(test)) == (8, 2)
    assert list(test.categories) == [0, 12] and test.category_names[12] == "watercraft"
    assert [s.rsplit("/", 1)[1] for s in test.sources] == ["004.points.ply", "004.points.ply"]
    sample = train[1]
    assert set(sample) == {"pos", "category"} and sample["pos"].shape == (32, 3) and sample["category"] == 0
    stored = read_ply_points(folder / "02691156" / "ply" / "001.points.ply")
    rows = {np.flatnonzero((stored == p).all(1))[0] for p in sample["pos"]}
    assert len(rows) == 32  # a subset of the stored points, none twice
    np.testing.assert_array_equal(train[1]["pos"], sample["pos"])  # seeded
    train.set_epoch(1)
    assert not np.array_equal(train[1]["pos"], sample["pos"])
    assert len(ShapeNetCore(tmp_path, "train", categories=["04530566"])) == 4
    with pytest.raises(ValueError, match="unknown ShapeNetCore13 category 'boat'"):
        ShapeNetCore(tmp_path, "train", categories="boat")
    with pytest.raises(ValueError, match="split must be 'train' or 'test' for the PLY layout"):
        ShapeNetCore(tmp_path, "val")
    (folder / "12345678" / "ply").mkdir(parents=True)
    with pytest.raises(ValueError, match=r"12345678: unknown synset folder"):
        ShapeNetCore(tmp_path, "train")


def test_shapenet_part_points_without_labels(tmp_path):
    write_hdf5(tmp_path)
    data = ShapeNetCore(tmp_path, "train", num_points=16)
    assert data.layout == "hdf5" and list(data.categories) == [CAP, MUG]
    assert set(data[0]) == {"pos", "category"} and data[0]["category"] == CAP
    assert data.category_names[CAP] == "Cap"
    with pytest.raises(ValueError, match=r"(?s)no ShapeNetPart layout found .*\(and no ShapeNetCore13 PLY"):
        ShapeNetCore(tmp_path / "nothing", "train")
    with pytest.raises(ValueError, match=r"no ShapeNetCore13 PLY layout"):
        ShapeNetCore(tmp_path, "train", layout="ply")


def test_core13_table():
    assert len(SHAPENET_CORE13) == 13 and sorted(SHAPENET_CORE13, key=lambda c: c[1]) == list(SHAPENET_CORE13)


def test_real_cap_points(realdata):
    data = ShapeNetCore(realdata, "test", num_points=1024)
    assert len(data) == 11 and all(data[i]["category"] == CAP for i in range(len(data)))
    assert all(np.isfinite(data[i]["pos"]).all() for i in range(len(data)))
