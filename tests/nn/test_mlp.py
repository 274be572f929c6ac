import pytest
import torch
from torch import nn

from pointabstract.nn import MLP, FeedForward
from pointabstract.nn.mlp import ACTIVATIONS, make_activation


def _set(linear: nn.Linear, weight, bias):
    with torch.no_grad():
        linear.weight.copy_(torch.tensor(weight))
        linear.bias.copy_(torch.tensor(bias))


@pytest.mark.parametrize("act, hidden_out", [
    ("relu", [0.0, 2.0]), ("leaky_relu", [-0.2, 2.0]),
    ("gelu", [float(nn.functional.gelu(torch.tensor(-1.0))), float(nn.functional.gelu(torch.tensor(2.0)))])])
def test_feed_forward_hand_computed(act, hidden_out):
    # no norm, W1 = [[1], [2]] b1 = [-2, 0], W2 = [[1, 1]] b2 = 0; x = 1:
    # hidden pre-activation (-1, 2), out = x + act(-1) + act(2)
    ff = FeedForward(1, hidden=2, norm=None, act=act)
    _set(ff.net[0], [[1.0], [2.0]], [-2.0, 0.0])
    _set(ff.net[2], [[1.0, 1.0]], [0.0])
    torch.testing.assert_close(ff(torch.ones(1, 1, 1)).flatten(), torch.tensor([1.0 + sum(hidden_out)]))


def test_feed_forward_is_pre_norm_with_a_residual():
    torch.manual_seed(0)
    ff = FeedForward(6, hidden=5, act="gelu")
    x = torch.randn(2, 4, 6)
    by_hand = x + ff.net[2](nn.functional.gelu(ff.net[0](nn.functional.layer_norm(x, (6,), ff.norm.weight,
                                                                                   ff.norm.bias))))
    torch.testing.assert_close(ff(x), by_hand)
    assert [n for n, _ in ff.named_parameters()] == ["norm.weight", "norm.bias", "net.0.weight", "net.0.bias",
                                                     "net.2.weight", "net.2.bias"]
    assert FeedForward(6).net[0].out_features == 12  # default hidden width 2 C


def test_mlp_places_norm_activation_and_dropout_between_linears():
    mlp = MLP([3, 4, 5, 2], norm="layer", dropout=0.1, act="relu")
    kinds = [type(m).__name__ for m in mlp]
    assert kinds == ["Linear", "LayerNorm", "ReLU", "Dropout", "Linear", "LayerNorm", "ReLU", "Dropout",
                     "Linear"]
    assert isinstance(MLP([3, 2, 1])[1], nn.LeakyReLU) and MLP([3, 2, 1])[1].negative_slope == 0.2


def test_unknown_activation_is_refused_listing_the_choices():
    assert set(ACTIVATIONS) == {"leaky_relu", "gelu", "relu"}
    with pytest.raises(ValueError, match=r"act must be one of \['gelu', 'leaky_relu', 'relu'\], got 'tanh'"):
        make_activation("tanh")
    with pytest.raises(ValueError, match="act must be one of"):
        FeedForward(4, act="tanh")
    with pytest.raises(ValueError, match="act must be one of"):
        MLP([2, 3, 1], act="swish")
