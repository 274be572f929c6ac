"""Every public op takes numpy scalars like Python numbers (the checks themselves: tests/test_validate.py)."""

import numpy as np
import pytest
import torch

from pointabstract import ops
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
