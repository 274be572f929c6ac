import numpy as np
import pytest

from pointabstract.data.datasets.checksums import check_whole


@pytest.mark.parametrize("values", [
    np.array([0, 3, 39], np.uint8),
    np.array([0, 3, 39], np.int64),
    np.array([[0.0], [3.0], [-2.0]], np.float32),  # integer-valued floats are whole numbers
    np.array([True, False]),
    np.zeros((0, 1), np.float64),
])
def test_whole_values_pass(values):
    check_whole("f.h5", values, name="labels")


@pytest.mark.parametrize("values, message", [
    (np.array([1.0, 0.5, 7.5]), r"f\.h5: labels must be whole numbers, got 0\.5 at sample 1$"),
    (np.array([[2.0], [3.0], [7.5]], np.float32), r"got 7\.5 at sample 2$"),
    (np.array([1.0, np.nan]), r"got nan at sample 1$"),
    (np.array([np.inf]), r"got inf at sample 0$"),
    (np.array(["chair", "bed"]), r"f\.h5: labels must be whole numbers, got values of dtype <U5$"),
])
def test_non_whole_values_name_the_file_the_value_and_the_sample(values, message):
    with pytest.raises(ValueError, match=message):
        check_whole("f.h5", values, name="labels")


def test_rows_of_many_values_name_the_first_bad_row_and_value():
    pid = np.zeros((3, 4))
    pid[2, 1], pid[1, 3] = 2.25, 9.5
    with pytest.raises(ValueError, match=r"f\.txt: part ids must be whole numbers, got 9\.5 at line 2$"):
        check_whole("f.txt", pid, name="part ids", unit="line", first=1)


def test_an_hdf5_file_without_shapes_is_named(tmp_path):
    """ModelNet40 / ShapeNetPart HDF5 files of 0 shapes: one line naming the file, not numpy's
    "cannot reshape array of size 0"."""
    import h5py

    from pointabstract.data.datasets.checksums import read_h5

    path = tmp_path / "ply_data_train1.h5"
    with h5py.File(path, "w") as handle:
        handle["data"] = np.zeros((0, 64, 3), np.float32)
        handle["label"] = np.zeros((0, 1), np.uint8)
    with pytest.raises(ValueError, match=r"ply_data_train1\.h5: holds no shape \(dataset 'data' has shape "
                                         r"\(0, 64, 3\)\); remove the file or write its shapes"):
        read_h5(path, required={"data": (None, None, 3), "label": (None, None)})
