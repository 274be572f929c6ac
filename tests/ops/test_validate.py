"""The shared argument checks, and every public op taking numpy scalars like Python numbers."""

import numpy as np
import pytest
import torch

from pointabstract import ops
from pointabstract.ops import _validate as V
from tests.fixtures import cloud

P = cloud(2, 40, seed=1)
F = cloud(2, 40, 5, seed=2)

# (name, call with the numbers given as arguments); each is run with Python and numpy numbers
CALLS = [
    ("farthest_point_sample", lambda i, f: ops.farthest_point_sample(P, i(7))),
    ("knn", lambda i, f: ops.knn(P, P, i(5))),
    ("knn features", lambda i, f: ops.knn(F, F, i(5))),
    ("ball_query", lambda i, f: ops.ball_query(P, P, f(0.4), i(6))),
    ("knn_interpolate", lambda i, f: ops.knn_interpolate(F, P, P, k=i(3))),
    ("knn_graph", lambda i, f: ops.knn_graph(P, i(4))),
    ("random_sample", lambda i, f: ops.random_sample(P, i(9), generator=torch.Generator().manual_seed(0))),
    ("kmeans_sample", lambda i, f: ops.kmeans_sample(P, i(4), iters=i(2))),
    ("build_tree", lambda i, f: ops.build_tree(P, branching=i(3), leaf_size=i(4)).leaf_order),
]


def _flat(out):
    if isinstance(out, torch.Tensor):
        return [out]
    return [t for o in out for t in _flat(o)]


@pytest.mark.parametrize("int_type,float_type", [(np.int64, np.float32), (np.int32, np.float64),
                                                 (np.uint16, np.float16)])
@pytest.mark.parametrize("name,call", CALLS, ids=[c[0] for c in CALLS])
def test_numpy_scalars_work_like_python_numbers(name, call, int_type, float_type):
    want = _flat(call(int, lambda x: float(float_type(x))))
    got = _flat(call(int_type, float_type))
    assert len(got) == len(want) and all(torch.equal(a, b) for a, b in zip(got, want))


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
