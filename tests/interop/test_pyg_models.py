"""A PyG ``Data`` / ``Batch`` passed straight to a model gives what our padded tensors give."""

import pytest
import torch

pytest.importorskip("torch_geometric")

from torch_geometric.data import Batch, Data  # noqa: E402

from pointabstract.interop.model_input import model_inputs  # noqa: E402
from pointabstract.models import MODELS, build_model  # noqa: E402

# one model of every class and task
NAMES = ["centroid_transformer", "self_attention_transformer", "capsule_ae_demo_dr", "capsule_ae_demo_ca",
         "pointnet_ae_demo", "sequoia_cls", "sequoia_seg", "softmax_seg"]
SIZES = (40, 64, 24)


def _clouds():
    gen = torch.Generator().manual_seed(0)
    return [(torch.rand(n, 3, generator=gen), torch.rand(n, 3, generator=gen)) for n in SIZES]


def _padded(clouds):
    pos = torch.zeros(len(clouds), max(SIZES), 3)
    normal = torch.zeros_like(pos)
    for b, (p, n) in enumerate(clouds):
        pos[b, :len(p)], normal[b, :len(p)] = p, n
    return pos, normal, torch.tensor(SIZES)


def _out(name, model, *args, **kwargs):
    out = model(*args, **kwargs)
    return out["points"] if MODELS[name].task == "reconstruction" else out["logits"]


@pytest.mark.parametrize("name", NAMES)
def test_a_pyg_batch_equals_padded_tensors_with_lengths(name):
    torch.manual_seed(0)
    seg = MODELS[name].task == "part_segmentation"
    channels = 0 if MODELS[name].task == "reconstruction" else 3
    args = {} if MODELS[name].task != "classification" else {"num_classes": 5}
    model = build_model(name, tiny=True, in_channels=channels, **args) if channels else \
        build_model(name, tiny=True, **args)
    model.eval()
    clouds = _clouds()
    category = torch.tensor([0, 2, 1])
    batch = Batch.from_data_list([Data(pos=p, normal=n, category=category[b:b + 1])
                                  for b, (p, n) in enumerate(clouds)])
    pos, normal, lengths = _padded(clouds)
    feats = {"features": normal} if channels else {}
    with torch.no_grad():
        want = _out(name, model, pos, *([category] if seg else []), lengths=lengths, **feats)
        got = _out(name, model, batch)
        one = _out(name, model, Data(pos=clouds[0][0], normal=clouds[0][1], category=category[:1]))
    assert torch.equal(got, want)
    first = want[:1, :SIZES[0]] if seg else want[:1]
    assert (one - first).abs().max() < 1e-4


def test_features_come_from_x_first_then_normal_and_must_fit():
    p, n = torch.rand(5, 3), torch.rand(5, 3)
    _, feats, lengths, _ = model_inputs(Data(pos=p, x=n, normal=p), channels=3)
    assert torch.equal(feats[0], n) and lengths.tolist() == [5]
    with pytest.raises(ValueError, match=r"the model takes 3 feature channels per point: the Data needs x "
                                         r"or normal of shape \(5, 3\), got neither"):
        model_inputs(Data(pos=p), channels=3)
    with pytest.raises(ValueError, match="with a Data / Batch as pos, pass no features or lengths"):
        model_inputs(Data(pos=p), lengths=torch.tensor([5]))
    with pytest.raises(TypeError, match="pos must be a .B, N, 3. tensor or a torch_geometric Data / Batch "
                                        "with a pos tensor, got list"):
        model_inputs([p])
