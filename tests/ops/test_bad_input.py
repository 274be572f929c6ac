"""Every public op refuses bad input with an error naming the argument and what arrived."""

import pytest
import torch

from pointabstract import ops
from tests.fixtures import cloud

P = cloud(2, 10)
Q = cloud(2, 6)


def _nan():
    x = P.clone()
    x[1, 3, 2] = float("nan")
    return x


def _inf():
    x = P.clone()
    x[0, 0, 0] = float("inf")
    return x


CASES = [
    # (call, error type, message pattern)
    (lambda: ops.farthest_point_sample(P[0], 3), ValueError, r"pos must have shape \(B, N, C\), got \(10, 3\)"),
    (lambda: ops.farthest_point_sample(P.long(), 3), TypeError, "pos must be a floating-point tensor, got dtype torch.int64"),
    (lambda: ops.farthest_point_sample(P.numpy(), 3), TypeError, "pos must be a torch.Tensor, got ndarray"),
    (lambda: ops.farthest_point_sample(_nan(), 3), ValueError, r"pos holds NaN or Inf values \(first at index \(1, 3, 2\)\)"),
    (lambda: ops.farthest_point_sample(_inf(), 3), ValueError, "pos holds NaN or Inf"),
    (lambda: ops.farthest_point_sample(P, 11), ValueError, "m must be at most N = 10, got 11"),
    (lambda: ops.farthest_point_sample(P, 0), ValueError, "m must be a positive int, got 0"),
    (lambda: ops.farthest_point_sample(P, 2.0), TypeError, "m must be an int, got float"),
    (lambda: ops.farthest_point_sample(torch.zeros(2, 0, 3), 1), ValueError, "pos must hold at least one cloud of at least one point"),
    (lambda: ops.farthest_point_sample(P, 3, lengths=torch.tensor([10, 11])), ValueError, r"lengths must lie in \[1, 10\] \(N = 10\), got values in \[10, 11\]"),
    (lambda: ops.farthest_point_sample(P, 3, lengths=torch.tensor([10, 0])), ValueError, r"lengths must lie in \[1, 10\]"),
    (lambda: ops.farthest_point_sample(P, 3, lengths=torch.tensor([10.0, 1.0])), TypeError, "lengths must have dtype int64, got torch.float32"),
    (lambda: ops.farthest_point_sample(P, 3, lengths=torch.tensor([10])), ValueError, r"lengths must have shape \(B,\) = \(2,\), got \(1,\)"),
    (lambda: ops.farthest_point_sample(P, 3, start="middle"), ValueError, r"start must be one of \['first', 'random'\], got 'middle'"),
    (lambda: ops.knn(P, P[:1], 3), ValueError, "query and ref must have the same batch size B, got 2 and 1"),
    (lambda: ops.knn(P, cloud(2, 10, 4), 3), ValueError, "query and ref must have the same number of channels C, got 3 and 4"),
    (lambda: ops.knn(P, P.double(), 3), TypeError, "query and ref must have the same dtype"),
    (lambda: ops.knn(P, P.to("meta"), 3), ValueError, "query and ref must be on the same device, got cpu and meta"),
    (lambda: ops.knn(P, Q, 7), ValueError, "k must be at most N = 6, got 7"),
    (lambda: ops.knn(P, Q, 0), ValueError, "k must be a positive int, got 0"),
    (lambda: ops.knn(P, Q, -2), ValueError, "k must be a positive int, got -2"),
    (lambda: ops.knn(P, _nan(), 2), ValueError, "ref holds NaN or Inf"),
    (lambda: ops.knn(P, Q, 2, ref_lengths=torch.tensor([7, 1])), ValueError, r"ref_lengths must lie in \[1, 6\]"),
    (lambda: ops.knn(P, Q, 2, query_lengths=torch.tensor([1, 2, 3])), ValueError, r"query_lengths must have shape \(B,\)"),
    (lambda: ops.knn(P.unsqueeze(0), Q, 2), ValueError, r"query must have shape \(B, N, C\), got \(1, 2, 10, 3\)"),
    (lambda: ops.ball_query(P, Q, 0.1, 7), ValueError, "k must be at most N = 6, got 7"),
    (lambda: ops.ball_query(cloud(2, 10, 2), Q, 0.1, 2), ValueError, r"query must have shape \(B, N, 3\), got \(2, 10, 2\)"),
    (lambda: ops.chamfer_distance(P, cloud(3, 6)), ValueError, "x and y must have the same batch size B, got 2 and 3"),
    (lambda: ops.chamfer_distance(P, Q, point_reduction="max"), ValueError, r"point_reduction must be one of \['mean', 'sum', None\], got 'max'"),
    (lambda: ops.chamfer_distance(P, Q, batch_reduction="median"), ValueError, "batch_reduction must be one of"),
    (lambda: ops.chamfer_distance(cloud(2, 10, 2), cloud(2, 6, 2)), ValueError, r"x must have shape \(B, N, 3\)"),
    (lambda: ops.random_sample(P, 11), ValueError, "m must be at most N = 10, got 11"),
    (lambda: ops.kmeans_sample(P, 0), ValueError, "m must be a positive int, got 0"),
    (lambda: ops.build_tree(cloud(2, 10, 2)), ValueError, r"pos must have shape \(B, N, 3\), got \(2, 10, 2\)"),
    (lambda: ops.build_tree(_nan()), ValueError, "pos holds NaN or Inf"),
    (lambda: ops.knn_interpolate(Q, cloud(2, 6), P, k=7), ValueError, "k must be at most N = 6, got 7"),
    (lambda: ops.gather_points(P, torch.tensor([[0], [1]]).to("meta")), ValueError, "idx must be on cpu, got meta"),
]


@pytest.mark.parametrize("call,error,match", CASES, ids=[c[2][:40] for c in CASES])
def test_bad_input_is_refused(call, error, match):
    with pytest.raises(error, match=match):
        call()
