"""Every task passes a ragged batch's ``lengths`` to the model (docs/models.md#ragged-batches):
a cloud collated with a larger one gives the logits / loss it gives alone."""

import pytest
import torch

from pointabstract.data import collate
from pointabstract.engine import build_task, load_config
from pointabstract.models import build_model
from tests.fixtures import TASK_DATA, write_tiny_synthetic

CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def synthetic_root(tmp_path_factory):
    return write_tiny_synthetic(tmp_path_factory.mktemp("synthetic"))


def _task(root, model, task):
    cfg = load_config(None, {"model": model, "data.root": str(root), "data.num_points": 48,
                             "device": "cpu", **TASK_DATA[task]})
    return build_task(cfg)


def _samples(task):
    dataset = task.dataset("test", train=False)
    small = dict(dataset[0])
    small.update({k: small[k][:30] for k in ("pos", "normal", "part") if k in small})
    return small, dataset[1]


def test_classification_logits_of_a_padded_cloud_equal_alone(synthetic_root):
    task = _task(synthetic_root, "centroid_transformer", "classification")
    small, large = _samples(task)
    torch.manual_seed(0)
    model = build_model("centroid_transformer", tiny=True, **task.model_args()).eval()
    batch = collate([small, large])
    assert batch["lengths"].tolist() == [30, 48]
    with torch.no_grad():
        both = task.forward(model, batch, CPU)
        alone = task.forward(model, collate([small]), CPU)
    assert (both[:1] - alone).abs().max() < 1e-4


@pytest.mark.parametrize("model_name, task_name", [("sequoia_seg", "part_segmentation"),
                                                   ("pointnet_ae_demo", "reconstruction")])
def test_the_loss_of_a_padded_batch_is_that_of_its_real_points(synthetic_root, model_name, task_name):
    task = _task(synthetic_root, model_name, task_name)
    small, large = _samples(task)
    torch.manual_seed(0)
    model = build_model(model_name, tiny=True, **task.model_args()).eval()
    ragged = collate([small, large])
    far = dict(ragged, pos=ragged["pos"].clone())
    far["pos"][0, 30:] = 50.0  # padding that reached the model or the loss would change it
    with torch.no_grad():
        want = task.step(model, ragged, CPU)[0]
        got = task.step(model, far, CPU)[0]
    assert torch.isclose(got, want, atol=1e-5)
    if task_name == "reconstruction":  # the padded cloud's loss is its own: chamfer over 30 points
        with torch.no_grad():
            alone = (task.step(model, collate([small]), CPU)[0] + task.step(model, collate([large]), CPU)[0]) / 2
        assert torch.isclose(want, alone, atol=1e-5)
