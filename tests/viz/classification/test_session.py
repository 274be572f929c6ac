import numpy as np
import pytest
import torch

from pointabstract.models import MODELS
from pointabstract.viz import tasks
from pointabstract.viz.classification import session as session_module
from pointabstract.viz.classification.session import ViewSession
from pointabstract.viz.tasks import load_session


def test_session_runs_the_model_like_eval_and_keeps_every_block(session, tiny_run):
    assert len(session) == 12 and session.class_names == ["sphere", "square", "line"]
    assert not session.model.training
    sample = session.sample(4)
    assert sample.index == 4 and sample.label == 1 and sample.label_name == "square"
    assert sample.pos.shape == (48, 3) and sample.probs.shape == (3,)
    assert sample.pred == int(sample.probs.argmax()) and sample.pred_name in session.class_names
    widths = MODELS["centroid_transformer"].tiny["widths"]  # the tiny run's blocks: 48, 24, 24, 6 points
    assert [tuple(b["features"].shape) for b in sample.blocks] == list(zip((48, 24, 24, 6), widths))
    assert sample.default_block == 3
    with torch.no_grad():  # the same logits as a plain forward of the same points
        logits = session.model(sample.pos[None])["logits"][0]
    assert torch.allclose(logits.softmax(-1), sample.probs, atol=1e-6)
    assert sample.title.startswith("#4: predicted ") and sample.title.endswith("true square")


def test_labels_at_carries_input_labels_to_a_blocks_points(session):
    sample = session.sample(0)
    pos, _ = sample.block(1)
    labels = np.arange(48)
    carried = sample.labels_at(1, labels)  # each block point takes its nearest input point's label
    nearest = ((pos[:, None] - sample.pos[None]) ** 2).sum(-1).argmin(1).numpy()
    assert np.array_equal(carried, labels[nearest])
    with pytest.raises(ValueError, match=r"labels must have shape \(48,\)"):
        sample.labels_at(1, labels[:5])


def test_session_errors_are_clear(session, tiny_run, tmp_path):
    with pytest.raises(ValueError, match=r"index must be an int in \[0, 11\] \(the test split of .* has 12 samples\), got 12"):
        session.sample(12)
    with pytest.raises(ValueError, match=r"block must be an int in \[-4, 3\] for this model, got 9"):
        session.sample(0).block(9)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_session(tmp_path / "missing.pt")
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="is not a readable checkpoint"):
        load_session(tmp_path / "junk.pt")
    with pytest.raises(ValueError, match="split must be one of"):
        load_session(tiny_run[0], split="val")


class _LogitsOnly(torch.nn.Module):
    def forward(self, pos, *, features=None):
        return {"logits": torch.zeros(pos.shape[0], 3)}


class _NoBlocks(torch.nn.Module):
    def forward(self, pos, *, features=None, return_features=False):
        return {"logits": torch.zeros(pos.shape[0], 3)}


@pytest.mark.parametrize("model", [_LogitsOnly(), _NoBlocks()])
def test_a_model_without_features_is_refused(session, model):
    other = ViewSession(model, session.dataset, session.class_names, session.config, session.checkpoint)
    with pytest.raises(ValueError, match="per-block features.*the viewer has nothing to show"):
        other.sample(0)
    assert {"SampleView", "ViewSession"} <= set(session_module.__all__)
    assert {"SESSIONS", "load_session"} <= set(tasks.__all__)
