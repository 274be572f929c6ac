from collections import Counter

import numpy as np
import pytest
import torch

from pointabstract.engine.tasks.reconstruction import capsule_purity_naive, reconstruction_scores
from pointabstract.viz import load_session
from pointabstract.viz.capsules.session import CapsuleSample, CapsuleSession, part_name
from tests.viz._capsule_runs import tiny_ae_run


@pytest.fixture(scope="module")
def ae(tmp_path_factory) -> CapsuleSession:
    return load_session(tiny_ae_run(tmp_path_factory)[0])


def test_session_reconstructs_like_a_plain_eval_forward(ae):
    assert isinstance(ae, CapsuleSession) and len(ae) == 16 and not ae.model.training
    assert ae.routing == "centroid attention" and ae.category_names[0] == "Airplane"
    sample = ae.sample(3)
    assert sample.index == 3 and sample.pos.shape == (64, 3) and sample.points.shape == (64, 3)
    assert sample.num_capsules == 4 and sample.category_name == ae.category_names[3]  # one shape per category
    with torch.no_grad():
        out = ae.model(sample.pos[None])
    assert torch.equal(out["points"][0], sample.points)
    assert np.array_equal(out["capsule_index"].numpy(), sample.capsule_index)
    assert np.array_equal(sample.capsule_points(1), np.arange(16, 32))  # capsule-major patches of 16
    cd, _ = reconstruction_scores(sample.points[None], sample.pos[None], threshold=0.05)
    assert sample.chamfer == pytest.approx(float(cd[0]))
    assert sample.title == f"#3 {sample.category_name}: CD {sample.chamfer * 1e3:.2f} x 1e-3"


def test_explained_by_and_majority_parts_match_plain_loops(ae):
    sample = ae.sample(5)
    d = torch.cdist(sample.pos.double(), sample.points.double())  # (N, N_out)
    # each input point's capsule decoded its nearest point (up to float32 ties between decoded points)
    own = torch.as_tensor(sample.capsule_index)[None] == torch.as_tensor(sample.explained_by)[:, None]
    nearest_own = torch.where(own, d, torch.inf).min(1).values
    assert torch.allclose(nearest_own, d.min(1).values, atol=1e-6)
    nearest_input = d.argmin(0).numpy()  # (N_out,) each decoded point's nearest input point
    for capsule in range(sample.num_capsules):
        labels = sample.part[nearest_input[sample.capsule_index == capsule]].tolist()
        counts = Counter(labels)
        top = max(counts.values())
        assert sample.capsule_parts[capsule] == min(p for p, c in counts.items() if c == top)  # ties: lowest
        assert sample.capsule_purity[capsule] == pytest.approx(top / len(labels))
    naive = capsule_purity_naive(sample.points[None], sample.pos[None], torch.as_tensor(sample.part)[None],
                                 torch.as_tensor(sample.capsule_index))
    assert sample.purity == pytest.approx(float(naive[0]))


def _hand_sample(capsule_parts, part=True) -> CapsuleSample:
    pos = torch.tensor([[0.0, 0, 0], [1, 0, 0], [2, 0, 0], [3, 0, 0]])
    index = np.array([0, 1, 2, 3])
    parts = np.array(capsule_parts) if part else None
    return CapsuleSample(-1, pos, pos.clone(), index, 4, 0.0, index.copy(), category_name="Airplane",
                         part=np.array([0, 1, 0, 1]) if part else None, capsule_parts=parts,
                         capsule_purity=np.array([1.0, 0.5, 0.75, np.nan]) if part else None)


def test_capsules_are_grouped_by_majority_part_hand_computed():
    sample = _hand_sample([3, 1, 3, -1])  # capsule 3 decoded no point: in no group, ordered last
    assert sample.part_groups() == {1: [1], 3: [0, 2]}
    assert sample.capsule_order() == [1, 0, 2, 3]
    assert sample.describe_groups() == "Airplane wing: 1; Airplane engine: 0 2"
    assert sample.describe_capsule(2) == "capsule 2: 1 point, 75% Airplane engine"
    assert sample.describe_capsule(3) == "capsule 3: 1 point"
    assert sample.title == "shape Airplane: CD 0.00 x 1e-3"
    plain = _hand_sample(None, part=False)
    assert plain.part_groups() == {} and plain.capsule_order() == [0, 1, 2, 3] and plain.describe_groups() == ""
    assert part_name(0) == "Airplane body" and part_name(48) == "Table leg"
    with pytest.raises(ValueError, match=r"part must be a ShapeNetPart part id in \[0, 50\), got 50"):
        part_name(50)


def test_errors_name_the_argument_and_the_rule(ae, tiny_run):
    with pytest.raises(ValueError, match=r"index must be an int in \[0, 15\] \(the test split of .* has 16 samples\), got 16"):
        ae.sample(16)
    with pytest.raises(ValueError, match=r"capsule must be an int in \[0, 3\] \(this model has 4 latent "
                                         r"capsules\), got 4"):
        ae.sample(0).capsule_points(4)
    with pytest.raises(ValueError, match=r"item\['pos'\] must have shape \(N, 3\), got \(64, 2\)"):
        ae.reconstruct({"pos": np.zeros((64, 2), np.float32)})
    with pytest.raises(ValueError, match="this shows classification runs; this is a 'reconstruction' run"):
        load_session(ae.checkpoint, task="classification")
    with pytest.raises(ValueError, match="this shows reconstruction runs; this is a 'classification' run"):
        load_session(tiny_run[0], task="reconstruction")


def test_a_model_without_capsule_index_is_refused(ae):
    class PointsOnly(torch.nn.Module):
        def forward(self, pos):
            return {"points": pos}

    other = CapsuleSession(PointsOnly(), ae.dataset, ae.category_names, ae.config, ae.checkpoint)
    with pytest.raises(ValueError, match="returned no 'points' and 'capsule_index': the capsule viewer"):
        other.sample(0)
