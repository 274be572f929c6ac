import numpy as np
import pytest

from pointabstract.data import (
    MODELNET10,
    MODELNET40,
    SHAPENET_CORE,
    SHAPENET_CORE13,
    SHAPENET_PART,
    part_range,
    resolve_categories,
    resolve_category,
)


def test_tables():
    assert len(SHAPENET_PART) == 16 and len(MODELNET40) == 40 and len(MODELNET10) == 10
    assert len(SHAPENET_CORE13) == 13 and sorted(SHAPENET_CORE13, key=lambda c: c[1]) == list(SHAPENET_CORE13)
    # SHAPENET_CORE: the 13 first with the same indices, then the 11 ShapeNetPart-only categories
    assert SHAPENET_CORE[:13] == SHAPENET_CORE13 and len(SHAPENET_CORE) == 24
    assert len({c.synset for c in SHAPENET_CORE}) == 24
    assert {c.synset for c in SHAPENET_PART} <= {c.synset for c in SHAPENET_CORE}
    assert [name for name, _ in SHAPENET_CORE[13:16]] == ["bag", "cap", "earphone"]


def test_resolve_category_by_index_name_any_case_and_synset():
    assert resolve_category(4) == resolve_category("Chair") == resolve_category("chair") == 4
    assert resolve_category("03001627") == resolve_category(np.int64(4)) == 4
    assert resolve_category("Cap", SHAPENET_CORE) == 14 and resolve_category("04530566", SHAPENET_CORE13) == 12
    assert resolve_category("Night_Stand", MODELNET40) == 23 and resolve_category(9, MODELNET10) == 9
    assert part_range("Table") == part_range(15) == part_range("04379243") == (47, 48, 49)


def test_resolve_categories_selection():
    assert resolve_categories(None) == list(range(16))
    assert resolve_categories([15, "Cap", "02954340"]) == [2, 15]
    assert resolve_categories("mug") == [11]
    assert resolve_categories(None, SHAPENET_CORE13) == list(range(13))


@pytest.mark.parametrize("category, table, error, match", [
    ("sofa", SHAPENET_PART, ValueError, r"category: unknown ShapeNetPart category 'sofa'; choose from \["),
    ("boat", SHAPENET_CORE13, ValueError, "unknown ShapeNetCore13 category 'boat'"),
    ("02954340", SHAPENET_CORE13, ValueError, "unknown ShapeNetCore13 category '02954340'"),
    ("sofa_table", MODELNET40, ValueError, "unknown ModelNet40 category 'sofa_table'"),
    (16, SHAPENET_PART, ValueError, r"category must be an int in \[0, 15\] \(a ShapeNetPart index\), got 16"),
    (-1, SHAPENET_CORE, ValueError, r"category must be an int in \[0, 23\] \(a ShapeNetCore index\), got -1"),
    (True, SHAPENET_PART, TypeError, "category must be an int index, a name or a synset, got True"),
    (2.0, SHAPENET_PART, TypeError, "category must be an int index"),
])
def test_bad_categories_are_refused(category, table, error, match):
    with pytest.raises(error, match=match):
        resolve_category(category, table)


def test_argument_name_is_in_the_message():
    with pytest.raises(ValueError, match="categories: unknown ShapeNetPart category 'Bicycle'"):
        resolve_categories(["Cap", "Bicycle"])
    with pytest.raises(ValueError, match="unknown ShapeNetPart category 'Sofa'"):
        part_range("Sofa")
