"""OBJ: a random file of every corner form, negative indices, polygons and other statements read as
a line-by-line parser reads it."""

import numpy as np
import pytest

from pointabstract.data.datasets.obj import read_obj
from pointabstract.data.datasets.polygons import fan_triangles_naive


def _random_obj(seed: int) -> tuple[str, np.ndarray, list[list[int]]]:
    rng = np.random.default_rng(seed)
    lines, vertices, polygons = ["# made by a test", "mtllib x.mtl", "o thing"], [], []
    for _ in range(400):
        kind = rng.choice(["v", "vt", "f", "g", "s"], p=[0.4, 0.1, 0.4, 0.05, 0.05])
        if kind == "v":
            vertices.append(rng.normal(size=3))
            lines.append("v " + " ".join(f"{x:.9g}" for x in vertices[-1]) + (" 1" if rng.random() < 0.2 else ""))
        elif kind == "f" and len(vertices) >= 3:
            ids = rng.integers(0, len(vertices), int(rng.integers(3, 7))).tolist()
            form = rng.choice(["{}", "{}/1", "{}//1", "{}/1/1"])
            relative = rng.random() < 0.3  # -1 is the latest vertex
            lines.append("f " + " ".join(form.format(i - len(vertices) if relative else i + 1) for i in ids))
            polygons.append(ids)
        elif kind in ("vt", "g", "s"):
            lines.append({"vt": "vt 0.5 0.5", "g": "g group", "s": "s off"}[kind])
    lines.insert(5, "vn 0 0 1")
    return "\n".join(lines) + "\n", np.array(vertices), polygons


@pytest.mark.parametrize("seed", range(5))
def test_a_random_obj_reads_as_the_line_by_line_parse(tmp_path, seed):
    text, vertices, polygons = _random_obj(seed)
    (tmp_path / "r.obj").write_text(text.replace("\n", "\r\n") if seed % 2 else text)
    got, _, faces = read_obj(tmp_path / "r.obj")
    np.testing.assert_array_equal(got, np.array([[float(f"{x:.9g}") for x in v] for v in vertices]))
    np.testing.assert_array_equal(faces, fan_triangles_naive(polygons))


@pytest.mark.parametrize("text, message", [
    ("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 4\n", r"r\.obj:4: face corner '4' refers to a missing vertex"),
    ("v 0 0 0\nv 1 0 0\nf 1 -3 2\n", r"r\.obj:3: face corner '-3' refers to a missing vertex"),
    ("v 0 0 0\nf 1 2/x 3\n", r"r\.obj:2: bad face line '1 2/x 3': expected corners"),
    ("v 0 0 0\nf 1 1\n", r"r\.obj:2: a face needs at least 3 corners, got '1 1'"),
    ("v 0 0\n", r"r\.obj:1: bad vertex line '0 0': expected 3 numbers"),
    ("v 0 0 0\nvn 0 a 1\n", r"r\.obj:2: bad normal line '0 a 1': expected 3 numbers"),
])
def test_bad_lines_are_named(tmp_path, text, message):
    (tmp_path / "r.obj").write_text(text)
    with pytest.raises(ValueError, match=message):
        read_obj(tmp_path / "r.obj")
