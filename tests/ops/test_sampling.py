import pytest
import torch

from pointabstract.ops import farthest_point_sample, kmeans_sample, random_sample
from tests.fixtures import cloud


def test_random_sample_distinct_valid_and_reproducible():
    pos = cloud(3, 50)
    lengths = torch.tensor([50, 20, 4])
    a = random_sample(pos, 10, lengths=lengths, generator=torch.Generator().manual_seed(1))
    b = random_sample(pos, 10, lengths=lengths, generator=torch.Generator().manual_seed(1))
    assert torch.equal(a, b) and a.shape == (3, 10)
    assert len(set(a[0].tolist())) == 10 and (a[1] < 20).all()
    assert sorted(a[2, :4].tolist()) == [0, 1, 2, 3] and (a[2, 4:] == -1).all()
    c = random_sample(pos, 10, generator=torch.Generator().manual_seed(2))
    assert not torch.equal(a[0], c[0])


def test_random_sample_is_uniform():
    counts = torch.zeros(10)
    g = torch.Generator().manual_seed(0)
    for _ in range(2000):
        counts += torch.bincount(random_sample(torch.zeros(1, 10, 3), 3, generator=g)[0], minlength=10)
    assert counts.min() > 500 and counts.max() < 700  # expected 600 each


def test_kmeans_two_blobs_by_hand():
    left = torch.tensor([[0.0, 0, 0], [0, 1, 0], [1, 0, 0]])
    right = torch.tensor([[10.0, 0, 0], [10, 1, 0], [11, 0, 0], [11, 1, 0]])
    x = torch.cat([left, right])[None]
    centroids, assign = kmeans_sample(x, 2, iters=3)
    assert assign[0].tolist() == [0, 0, 0, 1, 1, 1, 1]  # FPS seeds: point 0, then point 6
    torch.testing.assert_close(centroids[0], torch.stack([left.mean(0), right.mean(0)]))


def test_kmeans_zero_iterations_are_the_fps_picks():
    x = cloud(2, 100, 8, seed=3)
    result = kmeans_sample(x, 5, iters=0)
    picks = farthest_point_sample(x, 5)
    assert torch.equal(result.centroids, torch.stack([x[b, picks[b]] for b in range(2)]))


def test_kmeans_assignment_is_nearest_and_means_are_cluster_means():
    x = cloud(2, 200, 4, dtype=torch.float64, seed=4)
    centroids, assign = kmeans_sample(x, 6, iters=5)
    before, _ = kmeans_sample(x, 6, iters=4)
    # one more Lloyd step from `before` gives `centroids` and `assign` is nearest to `centroids`
    nearest = torch.cdist(x, centroids).argmin(-1)
    assert torch.equal(assign, nearest)
    step_assign = torch.cdist(x, before).argmin(-1)
    for b in range(2):
        for j in range(6):
            members = x[b, step_assign[b] == j]
            if len(members):
                torch.testing.assert_close(centroids[b, j], members.mean(0))


def test_kmeans_lengths_and_gradients():
    x = cloud(2, 30, 3, dtype=torch.float64, seed=5).requires_grad_()
    lengths = torch.tensor([30, 10])
    centroids, assign = kmeans_sample(x, 4, iters=2, lengths=lengths)
    assert (assign[1, 10:] == -1).all() and (assign[1, :10] >= 0).all()
    centroids.sum().backward()
    assert torch.isfinite(x.grad).all() and (x.grad[1, 10:] == 0).all()
    with pytest.raises(ValueError, match="m must be at most every cloud's length"):
        kmeans_sample(x, 11, lengths=lengths)


def test_kmeans_bad_iters():
    with pytest.raises(ValueError, match="iters must be an int >= 0, got -1"):
        kmeans_sample(cloud(1, 10), 2, iters=-1)
