"""The package's argument checks (pointabstract/_validate.py): what each accepts, returns, and the
one message each condition gets."""

import numpy as np
import pytest
import torch

from pointabstract import _validate as V


@pytest.mark.parametrize("value", [3, np.int8(3), np.int64(3), np.uint64(3)])
def test_check_int_accepts_integers(value):
    out = V.check_int("k", value, low=1, high=5)
    assert out == 3 and type(out) is int


@pytest.mark.parametrize("value,error,match", [
    (True, TypeError, "k must be an int, got bool"),
    (np.bool_(False), TypeError, "k must be an int, got bool"),
    (3.0, TypeError, "k must be an int, got float"),
    (np.float32(3), TypeError, "k must be an int, got float32"),
    (torch.tensor(3), TypeError, "k must be an int, got Tensor"),
    ("3", TypeError, "k must be an int, got str"),
    (0, ValueError, "k must be a positive int, got 0"),
    (np.int64(9), ValueError, "k must be at most N = 5, got 9"),
])
def test_check_int_refuses(value, error, match):
    with pytest.raises(error, match=match):
        V.check_int("k", value, low=1, high=5)


def test_check_int_names_other_lower_bounds():
    with pytest.raises(ValueError, match="iters must be an int >= 0, got -1"):
        V.check_int("iters", np.int32(-1), low=0)


@pytest.mark.parametrize("value", [0.5, 2, np.float16(0.5), np.float32(0.5), np.int64(2)])
def test_check_positive_accepts_real_numbers(value):
    out = V.check_positive("radius", value)
    assert out == float(value) and type(out) is float


@pytest.mark.parametrize("value,error,match", [
    (0.0, ValueError, "radius must be a positive finite number, got 0.0"),
    (np.float32("inf"), ValueError, "radius must be a positive finite number, got inf"),
    (np.float64("nan"), ValueError, "radius must be a positive finite number, got nan"),
    (np.bool_(True), TypeError, "radius must be a real number, got bool"),
    (torch.tensor(0.5), TypeError, "radius must be a real number, got Tensor"),
    ("0.5", TypeError, "radius must be a real number, got str"),
])
def test_check_positive_refuses(value, error, match):
    with pytest.raises(error, match=match):
        V.check_positive("radius", value)


def test_check_int_shows_what_arrived_in_one_line():
    with pytest.raises(TypeError, match=r"^k must be an int, got float 2.5$"):
        V.check_int("k", 2.5, low=1)
    with pytest.raises(TypeError, match=r"^k must be an int, got float32 2.5$"):  # not np.float32(2.5)
        V.check_int("k", np.float32(2.5), low=1)
    with pytest.raises(TypeError, match=r"^k must be an int, got Tensor of shape \(2,\)$"):
        V.check_int("k", torch.tensor([1, 2]), low=1)
    with pytest.raises(TypeError) as info:
        V.check_int("k", "x" * 100, low=1)
    assert str(info.value) == f"k must be an int, got str '{'x' * 56}..."  # 57 characters of repr


def test_check_int_allows_none_when_asked():
    assert V.check_int("k", None, low=1, allow_none=True) is None
    assert V.check_int("k", np.int16(4), low=1, allow_none=True) == 4
    with pytest.raises(ValueError, match=r"^k must be a positive int or None, got 0$"):
        V.check_int("k", 0, low=1, allow_none=True)
    with pytest.raises(TypeError, match=r"^k must be an int or None, got str 'all'$"):
        V.check_int("k", "all", low=1, allow_none=True)
    with pytest.raises(TypeError, match=r"^k must be an int, got NoneType None$"):
        V.check_int("k", None, low=1)


def test_check_int_note_follows_the_condition():
    with pytest.raises(ValueError, match=r"^num_points must be an int >= 2 \(one point\), got 1$"):
        V.check_int("num_points", 1, low=2, note=" (one point)")


@pytest.mark.parametrize("value", [0, 3, np.int64(2), np.uint8(1)])
def test_check_int_in_accepts_the_closed_range(value):
    out = V.check_int_in("capsule", value, 0, 3)
    assert out == int(value) and type(out) is int


@pytest.mark.parametrize("value,error,match", [
    (4, ValueError, r"^capsule must be an int in \[0, 3\] \(4 capsules\), got 4$"),
    (-1, ValueError, r"^capsule must be an int in \[0, 3\] \(4 capsules\), got -1$"),
    (1.0, TypeError, r"^capsule must be an int, got float 1.0$"),
    (True, TypeError, r"^capsule must be an int, got bool True$"),
    ("2", TypeError, r"^capsule must be an int, got str '2'$"),
])
def test_check_int_in_refuses(value, error, match):
    with pytest.raises(error, match=match):
        V.check_int_in("capsule", value, 0, 3, note=" (4 capsules)")


def test_check_float_intervals():
    assert V.check_float("max_ratio", np.float32(0.5), low=0.0, high=1.0, high_open=True) == 0.5
    assert V.check_float("sigma", 0, low=0.0) == 0.0
    with pytest.raises(ValueError, match=r"^max_ratio must be a finite number in \[0.0, 1.0\), got 1.0$"):
        V.check_float("max_ratio", 1, low=0.0, high=1.0, high_open=True)
    with pytest.raises(ValueError, match=r"^clip must be a finite number in \(-inf, 2.0\], got 3.0$"):
        V.check_float("clip", 3.0, high=2.0)
    with pytest.raises(ValueError, match=r"^sigma must be a finite number in \[0.0, inf\), got nan$"):
        V.check_float("sigma", float("nan"), low=0.0)
    # (0, inf) is said one way, whichever helper checks it
    with pytest.raises(ValueError, match=r"^low must be a positive finite number, got 0.0$"):
        V.check_float("low", 0.0, low=0.0, low_open=True)
    with pytest.raises(TypeError, match=r"^sigma must be a real number, got bool False$"):
        V.check_float("sigma", False, low=0.0)


@pytest.mark.parametrize("choices", [("fps", "random"), ["fps", "random"], {"fps": 1, "random": 2}])
def test_check_choice_over_any_collection(choices):
    assert V.check_choice("sampling", "random", choices) == "random"
    with pytest.raises(ValueError, match=r"^sampling must be one of \['fps', 'random'\], got 'first'$"):
        V.check_choice("sampling", "first", choices)
    with pytest.raises(ValueError, match=r"^sampling must be one of \['fps', 'random'\], got \['fps'\]$"):
        V.check_choice("sampling", ["fps"], choices)  # unhashable: refused, not a TypeError from `in`


def test_check_choice_none_note_and_bools():
    assert V.check_choice("layout", None, ("a", "b"), allow_none=True) is None
    with pytest.raises(ValueError, match=r"^layout must be one of \['a', 'b'\] or None, got 'c'$"):
        V.check_choice("layout", "c", ("a", "b"), allow_none=True)
    with pytest.raises(ValueError, match=r"^up must be one of \['y', 'z'\] \(the files' up axis\), got 'x'$"):
        V.check_choice("up", "x", ("y", "z"), note=" (the files' up axis)")
    with pytest.raises(ValueError, match=r"^bins must be one of \[0, 1\], got True$"):
        V.check_choice("bins", True, (0, 1))  # True == 1, but a flag is not a count
    with pytest.raises(ValueError, match=r"must be one of \['a'\], got array"):
        V.check_choice("layout", np.array(["a", "b"]), ("a",))


def test_check_bool_shows_what_arrived():
    assert V.check_bool("normalize", np.bool_(True)) is True
    with pytest.raises(TypeError, match=r"^normalize must be True or False, got str 'False'$"):
        V.check_bool("normalize", "False")
    with pytest.raises(TypeError, match=r"^normalize must be True or False, got int 1$"):
        V.check_bool("normalize", 1)


def test_check_features_accepts_features_of_the_cloud():
    pos, x = torch.zeros(2, 5, 3), torch.ones(2, 5, 7, dtype=torch.float64)
    assert V.check_features("x", x, pos) is x
    assert V.check_features("x", x, pos, channels=7) is x
    empty = torch.zeros(2, 0, 3)
    V.check_features("x", torch.zeros(2, 0, 4), empty)  # an empty cloud is pos's to refuse


@pytest.mark.parametrize("x,error,match", [
    (torch.ones(2, 4, 7), ValueError,
     r"^x must have shape \(B, N, C\) = \(2, 5, C\) matching pos \(2, 5, 3\), got \(2, 4, 7\)$"),
    (torch.ones(3, 5, 7), ValueError, r"= \(2, 5, C\) matching pos \(2, 5, 3\), got \(3, 5, 7\)$"),
    (torch.ones(10, 7), ValueError, r"= \(2, 5, C\) matching pos \(2, 5, 3\), got \(10, 7\)$"),
    (torch.ones(2, 5, 7, dtype=torch.int64), TypeError, r"^x must be a floating-point tensor, got dtype torch.int64$"),
    (np.ones((2, 5, 7)), TypeError, r"^x must be a torch.Tensor, got ndarray$"),
    (torch.ones(2, 5, 0), ValueError, r"^x must have at least one channel, got \(2, 5, 0\)$"),
    (torch.tensor([[[0.0], [1.0], [2.0], [float("inf")], [4.0]]] * 2), ValueError,
     r"^x holds NaN or Inf values \(first at index \(0, 3, 0\)\)$"),
])
def test_check_features_refuses(x, error, match):
    with pytest.raises(error, match=match):
        V.check_features("x", x, torch.zeros(2, 5, 3))


def test_check_features_channels_and_names():
    pos = torch.zeros(1, 3, 3)
    with pytest.raises(ValueError, match=r"^features must have shape \(B, N, C\) = \(1, 3, 6\) matching "
                                         r"points \(1, 3, 3\), got \(1, 3, 5\)$"):
        V.check_features("features", torch.zeros(1, 3, 5), pos, pos_name="points", channels=6)
    V.check_features("x", torch.tensor([[[float("nan")]] * 3]), pos, finite=False)


def test_check_ids_labels_in_a_range():
    labels = torch.tensor([0, 3, 9])
    assert V.check_ids("label", labels, (3,), "(B,)", high=10) is labels
    with pytest.raises(ValueError, match=r"^label values must lie in \[0, 8\], got values in \[0, 9\]$"):
        V.check_ids("label", labels, (3,), "(B,)", high=9)
    with pytest.raises(ValueError, match=r"^label must have shape \(B,\) = \(4,\), got \(3,\)$"):
        V.check_ids("label", labels, (4,), "(B,)", high=10)
    with pytest.raises(TypeError, match=r"^label must have dtype int64, got torch.int32$"):
        V.check_ids("label", labels.int(), (3,), "(B,)")
    with pytest.raises(ValueError, match=r"^part values must be >= -1, got values in \[-2, 0\]$"):
        V.check_ids("part", torch.tensor([[0, -2]]), (1, 2), "(B, N)", low=-1)


def test_check_cloud_min_points():
    pos = torch.rand(2, 8, 3)
    assert V.check_cloud("pos", pos, min_points=8) is pos
    with pytest.raises(ValueError, match=r"pos must hold at least one cloud of at least 8 points, "
                                         r"got \(2, 4, 3\)"):
        V.check_cloud("pos", torch.rand(2, 4, 3), min_points=8)
    with pytest.raises(ValueError, match=r"pos must hold at least one cloud of at least 8 points, "
                                         r"got \(0, 64, 3\)"):
        V.check_cloud("pos", torch.rand(0, 64, 3), min_points=8)
    with pytest.raises(ValueError, match=r"pos must hold at least one cloud of at least one point, "
                                         r"got \(2, 0, 3\)"):
        V.check_cloud("pos", torch.rand(2, 0, 3))


def test_check_shape_any_size_is_written_as_its_letter():
    u = torch.rand(2, 7, 4)
    assert V.check_shape("u", u, (None, 7, 4), "(B, P, D)") is u
    with pytest.raises(ValueError, match=r"^u must have shape \(B, P, D\) = \(B, 7, 4\), got \(2, 6, 4\)$"):
        V.check_shape("u", torch.rand(2, 6, 4), (None, 7, 4), "(B, P, D)")
    with pytest.raises(ValueError, match=r"^u must have shape \(B, P, D\) = \(B, 7, 4\), got \(7, 4\)$"):
        V.check_shape("u", torch.rand(7, 4), (None, 7, 4), "(B, P, D)")
    with pytest.raises(ValueError, match=r"^b must have shape \(B,\) = \(3,\), got \(2,\)$"):
        V.check_shape("b", torch.rand(2), (3,), "(B,)")


def test_check_cloud_squares_refuses_coordinates_whose_squared_distances_overflow():
    assert V.square_limit(torch.float32) == pytest.approx(5.33e18, rel=1e-3)
    assert V.square_limit(np.float64) == pytest.approx(3.87e153, rel=1e-3)
    pos = torch.full((1, 4, 3), 5e18)
    assert V.check_cloud("pos", pos, squares=True) is pos and V.check_cloud("pos", pos * 100) is not None
    with pytest.raises(ValueError, match=r"^pos holds coordinates up to 1e\+20 in absolute value: their squared "
                                         r"distances overflow float32 \(\|coordinates\| must stay below 5.33e\+18\); "
                                         r"scale the cloud"):
        V.check_cloud("pos", torch.full((1, 4, 3), -1e20), squares=True)
    assert V.check_cloud("pos", torch.full((1, 4, 3), -1e20, dtype=torch.float64), squares=True) is not None
