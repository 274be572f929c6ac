import numpy as np
import pytest
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from pointabstract.data.categories import SHAPENET_PART
from pointabstract.data.synthetic.shapes import BUILDERS, OPTIONAL_PARTS, build_shape
from pointabstract.data.synthetic.surface import triangle_areas_normals

NAMES = [c.name for c in SHAPENET_PART]
SEEDS = range(12)


def test_one_builder_per_category_in_shapenet_part_order():
    assert list(BUILDERS) == NAMES
    for name, optional in OPTIONAL_PARTS.items():
        assert set(optional) < set(SHAPENET_PART[NAMES.index(name)].parts)


@pytest.mark.parametrize("name", NAMES)
def test_every_category_builds_valid_labelled_meshes(name):
    category = SHAPENET_PART[NAMES.index(name)]
    required = set(category.parts) - set(OPTIONAL_PARTS.get(name, ()))
    for seed in SEEDS:
        v, f, part = build_shape(name, np.random.default_rng(seed))
        assert v.ndim == 2 and v.shape[1] == 3 and np.isfinite(v).all()
        assert f.ndim == 2 and f.shape[1] == 3 and f.dtype == np.int64
        assert f.min() >= 0 and f.max() < len(v)
        assert part.shape == (len(f),) and set(np.unique(part)) <= set(category.parts)
        assert required <= set(np.unique(part)), f"{name} seed {seed} lacks {required - set(part)}"
        areas, _ = triangle_areas_normals(v, f)
        for p in np.unique(part):
            assert areas[part == p].sum() > 1e-4, f"{name} part {p} has no area"
        assert 0.2 < np.ptp(v, axis=0).max() < 10


@pytest.mark.parametrize("name", sorted(OPTIONAL_PARTS))
def test_optional_parts_really_vary_across_seeds(name):
    present = [set(np.unique(build_shape(name, np.random.default_rng(s))[2])) for s in range(40)]
    for p in OPTIONAL_PARTS[name]:
        with_part = sum(p in parts for parts in present)
        assert 0 < with_part < 40, f"{name} part {p} present in {with_part}/40 shapes"


def _components(faces: np.ndarray) -> int:
    """Number of connected pieces of a set of triangles (sharing vertices)."""
    if len(faces) == 0:
        return 0
    verts = np.unique(faces)
    index = np.searchsorted(verts, faces)
    edges = np.concatenate([index[:, [0, 1]], index[:, [1, 2]]])
    graph = coo_matrix((np.ones(len(edges)), (edges[:, 0], edges[:, 1])), shape=(len(verts),) * 2)
    return connected_components(graph, directed=False)[0]


def test_airplanes_have_zero_two_or_four_engines():
    engines = set()
    for seed in range(40):
        _, f, part = build_shape("Airplane", np.random.default_rng(seed), augment=False)
        engines.add(_components(f[part == 3]))
    assert engines == {0, 2, 4}


def test_same_seed_same_mesh_and_other_seeds_differ():
    a = build_shape("Chair", np.random.default_rng(5))
    b = build_shape("Chair", np.random.default_rng(5))
    c = build_shape("Chair", np.random.default_rng(6))
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert a[0].shape != c[0].shape or not np.allclose(a[0], c[0])


def test_augmentation_rotates_about_y_and_keeps_faces_and_parts():
    plain = build_shape("Table", np.random.default_rng(3), augment=False)
    moved = build_shape("Table", np.random.default_rng(3), augment=True)
    assert np.array_equal(plain[1], moved[1]) and np.array_equal(plain[2], moved[2])
    # rotation about y never mixes y into x/z: the floor stays at y = 0
    assert plain[0][:, 1].min() == pytest.approx(0, abs=1e-9)
    assert moved[0][:, 1].min() == pytest.approx(0, abs=1e-9)
    assert not np.allclose(plain[0], moved[0])


@pytest.mark.parametrize("category, error, match", [
    ("sofa", ValueError, "unknown ShapeNetPart category 'sofa'"),
    (16, ValueError, r"category must be an int in \[0, 15\] \(a ShapeNetPart index\), got 16"),
    (-1, ValueError, r"category must be an int in \[0, 15\] \(a ShapeNetPart index\), got -1"),
    (2.0, TypeError, "category must be"),
])
def test_bad_category_is_refused(category, error, match):
    with pytest.raises(error, match=match):
        build_shape(category, np.random.default_rng(0))


def test_rng_must_be_a_generator():
    with pytest.raises(TypeError, match="rng must be a numpy.random.Generator"):
        build_shape("Mug", 0)
