"""Scores that tell a reconstruction from a template: retrieval, specificity, diversity, sampling floor."""

import contextlib

import numpy as np
import pytest
import torch

from pointabstract.data import collate
from pointabstract.data.synthetic import generate
from pointabstract.engine.config import DataConfig
from pointabstract.engine.metrics.retrieval import (
    depends_on_input,
    pairwise_chamfer,
    pairwise_chamfer_naive,
    retrieval_scores,
    retrieval_scores_naive,
    sampling_floor,
)
from pointabstract.engine.tasks.reconstruction import ReconstructionSettings, ReconstructionTask


def _shapes(q=12, n=96, seed=0):
    """q distinct clouds: boxes of different proportions, each sampled at n random points."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(q):
        size = np.array([1.0 + 0.4 * (i % 4), 1.0 + 0.5 * (i // 4), 0.3 + 0.1 * i])
        out.append((rng.random((n, 3)) - 0.5) * size)
    return torch.tensor(np.stack(out), dtype=torch.float32)


def test_pairwise_chamfer_matches_the_reference():
    x, y = _shapes(5, 40, seed=1), _shapes(7, 33, seed=2)
    torch.testing.assert_close(pairwise_chamfer(x, y), pairwise_chamfer_naive(x, y), rtol=1e-5, atol=1e-7)
    pairs = torch.tensor([[0, 6], [4, 0], [2, 2]])
    torch.testing.assert_close(pairwise_chamfer(x, y, pairs=pairs), pairwise_chamfer_naive(x, y)[pairs[:, 0], pairs[:, 1]],
                               rtol=1e-5, atol=1e-7)


def test_hand_computed_case():
    # two one-point "clouds" at 0 and at 3 on x; outputs: both decoded to the point 1
    inputs = torch.tensor([[[0.0, 0, 0]], [[3.0, 0, 0]]])
    outputs = torch.tensor([[[1.0, 0, 0]], [[1.0, 0, 0]]])
    s = retrieval_scores(outputs, inputs)
    # chamfer(1, 0) = 1 + 1 = 2, chamfer(1, 3) = 4 + 4 = 8: shape 0 retrieves itself, shape 1 does not
    assert s["retrieval"] == 0.5 and s["retrieval_chance"] == 0.5
    assert s["specificity"] == pytest.approx(np.median([8 / 2, 2 / 8]))  # the median of 4 and 0.25
    assert s["diversity"] == 0.0  # identical outputs


def test_a_model_returning_its_input_scores_one():
    x = _shapes()
    s = retrieval_scores(x.clone(), x)
    assert s["retrieval"] == 1.0 and s["diversity"] == pytest.approx(1.0) and s["specificity"] > 1e6
    assert depends_on_input(s)


def test_a_constant_model_scores_chance():
    x = _shapes(q=16)
    template = x.mean(0, keepdim=True).expand(len(x), -1, -1)  # one mean cloud for every input
    s = retrieval_scores(template.contiguous(), x)
    assert s["retrieval"] <= 2 / 16  # its own input is the nearest only by chance
    assert s["diversity"] == 0.0 and s["specificity"] < 1.25
    assert not depends_on_input(s)


def test_scores_match_the_reference_on_noisy_reconstructions():
    x = _shapes(10, 64, seed=3)
    noisy = x + 0.2 * torch.randn(x.shape, generator=torch.Generator().manual_seed(0))
    got, want = retrieval_scores(noisy, x, shifts=3), retrieval_scores_naive(noisy, x, shifts=3)
    for key in want:
        assert got[key] == pytest.approx(want[key], rel=1e-5), key


def test_sampling_floor_is_zero_for_one_sampling_and_positive_for_two():
    a, b = _shapes(4, 200, seed=0), _shapes(4, 200, seed=9)
    assert sampling_floor(a, a) == 0.0 and sampling_floor(a, b) > 0


def test_checks_name_the_argument():
    x = _shapes(3)
    with pytest.raises(ValueError, match="at least 2"):
        retrieval_scores(x[:1], x[:1])
    with pytest.raises(ValueError, match="outputs"):
        retrieval_scores(x[:2], x)
    with pytest.raises(ValueError, match="pairs must index"):
        pairwise_chamfer(x, x, pairs=torch.tensor([[0, 3]]))


class _Constant(torch.nn.Module):
    """A template-fitting 'autoencoder': the same cloud for every input."""

    def __init__(self, n):
        super().__init__()
        self.cloud = torch.nn.Parameter(torch.randn(n, 3, generator=torch.Generator().manual_seed(0)) * 0.5)

    def forward(self, pos, **_):
        return {"points": self.cloud.expand(len(pos), -1, -1),
                "capsule_index": torch.zeros(len(self.cloud), dtype=torch.int64)}


class _Identity(torch.nn.Module):
    """A perfect autoencoder without capsules."""

    def forward(self, pos, **_):
        return {"points": pos.clone()}


@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    root = tmp_path_factory.mktemp("synth")
    generate(root, train_per_class=1, test_per_class=2, num_points=256, workers=1, progress=False)
    return root


def _evaluate(root, model, tmp_path):
    data = DataConfig(dataset="shapenet_part", root=str(root), num_points=128, batch_size=4, eval_batch_size=8,
                      workers=0)
    task = ReconstructionTask(data, seed=0, settings=ReconstructionSettings(retrieval_pool=24))
    ds = task.dataset("test", train=False)
    loader = torch.utils.data.DataLoader(ds, batch_size=8, collate_fn=collate)
    metrics = task.evaluate(model, loader, torch.device("cpu"), autocast=contextlib.nullcontext)
    return metrics, task.summary(metrics), "\n".join(task.report(metrics, tmp_path))


def test_the_task_flags_a_template_and_passes_a_faithful_model(synth, tmp_path):
    metrics, summary, report = _evaluate(synth, _Constant(128), tmp_path)
    assert metrics["retrieval_pool"] == 24 and metrics["retrieval"] <= 3 / 24
    assert "WARNING" in summary and "barely depend on the input" in report
    # the floor: two random samplings of 128 of the 256 stored points differ
    assert 0 < metrics["sampling_floor"] < metrics["chamfer"]
    metrics, summary, report = _evaluate(synth, _Identity(), tmp_path)
    assert metrics["retrieval"] == 1.0 and metrics["chamfer"] == 0.0
    assert "WARNING" not in summary and "barely depend" not in report and "retrieval 1.000" in report
    assert "capsule_spread" not in metrics  # no capsules: no capsule spread


def test_the_pool_is_the_same_shapes_every_run(synth):
    from pointabstract.engine.tasks.reconstruction_pool import RetrievalPool

    data = DataConfig(dataset="shapenet_part", root=str(synth), num_points=128, workers=0)
    ds = ReconstructionTask(data, seed=0).dataset("test", train=False)
    a, b = RetrievalPool(ds, 10, batch_size=4), RetrievalPool(ds, 10, batch_size=4)
    assert np.array_equal(a.indices, b.indices) and len(set(a.indices.tolist())) == 10
    torch.testing.assert_close(a.inputs, b.inputs)
    assert a.floor == b.floor > 0


def test_pool_setting_is_checked():
    data = DataConfig(dataset="shapenet_part", root="x", num_points=128, workers=0)
    with pytest.raises(ValueError, match="task.retrieval_pool"):
        ReconstructionTask(data, settings=ReconstructionSettings(retrieval_pool=1))
    with pytest.raises(ValueError, match="task.retrieval_pool"):
        ReconstructionTask(data, settings=ReconstructionSettings(retrieval_pool=-2))


def test_capsule_spread_hand_computed_and_reference():
    from pointabstract.engine.metrics.capsule_spread import (
        capsule_spread,
        capsule_spread_naive,
        kmeans_spread,
    )

    # two capsules of two points each: (+-1, 0, 0) around x = -5 and x = 5; radius of gyration
    # sqrt(mean(16, 36, 16, 36)) = sqrt(26); each capsule's RMS spread 1
    pts = torch.tensor([[[-6.0, 0, 0], [-4.0, 0, 0], [4.0, 0, 0], [6.0, 0, 0]]])
    idx = torch.tensor([0, 0, 1, 1])
    assert capsule_spread(pts, idx) == pytest.approx(1 / 26 ** 0.5)
    # interleaved capsules {-6, 4} and {-4, 6} scatter over the whole shape: RMS 5 each, spread 0.98
    assert capsule_spread(pts, torch.tensor([0, 1, 0, 1])) == pytest.approx(5 / 26 ** 0.5)
    x = _shapes(3, 50, seed=4)
    rnd = torch.randint(0, 5, (50,), generator=torch.Generator().manual_seed(1))
    assert capsule_spread(x, rnd) == pytest.approx(capsule_spread_naive(x, rnd), rel=1e-9)
    assert kmeans_spread(x, 5) < capsule_spread(x, rnd)  # a compact partition beats a random one
