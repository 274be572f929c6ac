import numpy as np
import pytest
import torch
from PIL import Image

from pointabstract.engine import load_config, train
from pointabstract.models import build_model
from pointabstract.viz.context_pool_view import context_pool_colors, context_pool_png, context_pool_view
from tests.fixtures import cloud, tiny_model, write_tiny_modelnet


def _model(**kw):
    torch.manual_seed(0)
    return build_model("centroid_transformer", tiny=True, context_pool=True, context_pool_k=6, **kw).eval()


def test_colours_of_a_block():
    model, pos = _model(), cloud(1, 40, seed=1)
    view = context_pool_colors(model, lambda: model(pos), 1)
    m = 20  # the first centroid block keeps N / 2 points
    assert view.block == 1 and view.pos.shape == (m, 3)
    assert view.weight_colors.shape == view.size_colors.shape == (m, 3)
    np.testing.assert_allclose(view.weight.mean(), 1.0, rtol=1e-5)  # M * softmax weights: mean 1
    assert ((view.size > 0) & (view.size < 1)).all() and (view.sigma > 0).all()
    assert view.size_legend.vmin == pytest.approx(view.size.min()) and view.size_legend.vmax <= 1.0
    assert view.weight_legend.vmin == pytest.approx(np.log2(view.weight.min()))  # log2(M w)
    assert context_pool_colors(model, lambda: model(pos), -1).pos.shape == (5, 3)


def test_variants_without_weights_or_sizes_are_grey():
    model = _model(context_pool_weights="uniform", context_pool_locality="fixed")
    pos = cloud(1, 24, seed=2)
    view = context_pool_colors(model, lambda: model(pos), 0)
    assert view.weight is None and view.size is None and view.weight_legend is None
    assert np.allclose(view.weight_colors, view.weight_colors[0]) and np.allclose(view.size_colors[0], 0.62)


def test_errors():
    plain = build_model("centroid_transformer", tiny=True)
    pos = cloud(1, 24, seed=3)
    with pytest.raises(ValueError, match=r"this model has no ContextPool \(train it with model.context_pool=true\)"):
        context_pool_colors(plain, lambda: plain(pos), 0)
    model = _model()
    with pytest.raises(ValueError, match=r"block must be an int in \[-4, 3\] for this model, got 4"):
        context_pool_colors(model, lambda: model(pos), 4)
    with pytest.raises(ValueError, match=r"ContextPool 0 did not run"):
        context_pool_colors(model, lambda: None, 0)


@pytest.mark.slow  # trains a tiny checkpoint and renders (about 10 s)
def test_checkpoint_to_png_and_cli(o3d, tmp_path):
    from pointabstract.viz.cli import main

    data = write_tiny_modelnet(tmp_path / "data").parent
    train(load_config(None, [f"data.root={data}", "data.num_points=48", "data.batch_size=8", "data.workers=0",
                             "optim.epochs=1", f"log.out_dir={tmp_path / 'run'}", "log.progress=false",
                             "log.tensorboard=false", *tiny_model("centroid_transformer"), "model.context_pool=true"]))
    ckpt = tmp_path / "run" / "last.pt"
    view = context_pool_view(ckpt, block=0, index=1)
    assert view.pos.shape == (48, 3)
    out = context_pool_png(view, tmp_path / "cp.png", width=400, height=200)
    assert Image.open(out).size == (400, 200)
    assert main([str(ckpt), "--context-pool", "2", "--png", str(tmp_path / "cli.png"), "--width", "320",
                 "--height", "160"]) == 0
    assert Image.open(tmp_path / "cli.png").size == (320, 160)
    assert main([str(ckpt), "--context-pool", "9", "--png", str(tmp_path / "x.png")]) == 2
