import numpy as np
import pytest
import torch
from PIL import Image

from pointabstract.viz.classification.figures import (
    contrasting_queries,
    neighbourhood_figure,
    neighbourhood_report,
    neighbourhood_section,
    pick_queries,
)
from pointabstract.viz.core.colors import HIGHLIGHT, QUERY
from pointabstract.viz.core.render import png_backend
from tests.fixtures import cloud, tiny_model, write_tiny_synthetic

RED, BLUE = tuple(round(v * 255) for v in HIGHLIGHT), tuple(round(v * 255) for v in QUERY)


def test_figure_of_a_trained_checkpoint(o3d, tiny_run, tmp_path):
    out = neighbourhood_figure(tiny_run[0], tmp_path / "fig" / "n.png", indices=(0, 1), queries=2, k=3,
                               panel_size=96)
    img = np.asarray(Image.open(out))[..., :3]
    # 2 rows x (2 queries x 2 panels) of 96-pixel panels plus titles
    assert img.shape[1] >= 4 * 96 and img.shape[0] >= 2 * 96
    pixels = set(map(tuple, img.reshape(-1, 3)))
    assert RED in pixels and BLUE in pixels


def test_report_section_links_the_png_it_wrote(o3d, session, tmp_path):
    text = neighbourhood_section(session, tmp_path, indices=(2,), queries=[0, 5], block=1, panel_size=64)
    assert (tmp_path / "neighbourhoods.png").is_file()
    assert "](neighbourhoods.png)" in text and text.startswith("## ")


def test_figure_argument_errors(session, tmp_path):
    with pytest.raises(ValueError, match="indices must be a non-empty list"):
        neighbourhood_figure(session, tmp_path / "x.png", indices=())
    with pytest.raises(ValueError, match=r"index must be an int in \[0, \d+\] .*, got 99"):
        neighbourhood_figure(session, tmp_path / "x.png", indices=(99,))
    with pytest.raises(ValueError, match=r"k must be an int in \[1, 6\]"):
        neighbourhood_figure(session, tmp_path / "x.png", indices=(0,), k=40)  # block 3 has 6 points
    with pytest.raises(ValueError, match=r"query must be an int in \[0, 5\], got 6"):
        neighbourhood_figure(session, tmp_path / "x.png", indices=(0,), queries=[6])
    with pytest.raises(ValueError, match=r"queries must be an int in \[1, 6\]"):
        neighbourhood_figure(session, tmp_path / "x.png", indices=(0,), queries=7)


def test_pick_queries_spreads_them_out():
    pos = cloud(1, 100, 3, seed=2)[0]
    picked = pick_queries(pos, 4)
    assert picked[0] == 0 and len(set(picked)) == 4
    d = ((pos[picked][:, None] - pos[picked][None]) ** 2).sum(-1).sqrt()
    assert d[~np.eye(4, dtype=bool)].min() > 0.5  # far apart in a cloud of side 2


def test_contrasting_queries_picks_the_points_whose_two_neighbourhoods_differ_most():
    # 6 points on a line; features put point 0 next to the far end (4, 5), so its feature and 3D
    # neighbourhoods share only itself; every other point's two neighbourhoods overlap more
    pos = torch.tensor([[0.0, 0, 0], [1, 0, 0], [2, 0, 0], [3, 0, 0], [4, 0, 0], [5, 0, 0]])
    feats = torch.tensor([[4.6], [1.0], [2.0], [3.0], [4.0], [5.0]])
    assert contrasting_queries(pos, feats, 1, 2) == [0]
    # the second query is not inside the first one's 3D neighbourhood ({0, 1})
    second = contrasting_queries(pos, feats, 2, 2)[1]
    assert second not in (0, 1)
    assert len(set(contrasting_queries(pos, feats, 6, 2))) == 6  # asking for all: every point once
    with pytest.raises(ValueError, match=r"queries must be an int in \[1, 6\]"):
        contrasting_queries(pos, feats, 0, 2)


def test_report_on_part_labelled_data_measures_agreement_and_says_it_next_to_the_figure(o3d, demo_run, tmp_path):
    report = neighbourhood_report(demo_run[0], tmp_path, indices=(0, 1), queries=2, panel_size=96,
                                  figure_points=512, agreement_shapes=4)
    agreement = report.metrics["part_agreement"]
    assert agreement["num_points"] == 512 and agreement["shapes"] == 4
    assert report.metrics["part_agreement_training_points"]["num_points"] == 256
    # the demo model at 512 points: blocks of 512, 256, 256, 64 points; the paper's block is 3
    assert [agreement[f"block_{b}"]["points"] for b in range(4)] == [512, 256, 256, 64]
    for b in range(4):
        e = agreement[f"block_{b}"]
        assert 0 <= e["chance"] <= 1 and 0 <= e["feature"] <= 1 and 0 <= e["xyz"] <= 1
    e = agreement["block_3"]
    assert f"| 3 | 64 | 20 | {e['feature']:.3f} | {e['xyz']:.3f} | {e['chance']:.3f} |" in report.markdown
    said = "follow parts more than 3D balls do" if e["feature"] > e["xyz"] + 0.01 else "does NOT group by parts"
    assert "Block 3 (shown): " in report.markdown and said in report.markdown
    assert report.png == tmp_path / "neighbourhoods.png" and png_backend(report.png)
    img = np.asarray(Image.open(report.png))[..., :3]
    pixels = set(map(tuple, img.reshape(-1, 3)))
    assert RED in pixels and BLUE in pixels


def test_report_without_part_labels_says_so(o3d, session, tmp_path):
    report = neighbourhood_report(session, tmp_path, indices=(0,), queries=1, panel_size=64)
    assert report.metrics == {} and "part agreement not measured" in report.markdown


def test_report_of_a_run_trained_on_every_stored_point(o3d, tmp_path):
    # data.num_points=all: the part-labelled split is opened with every stored point, not with "all"
    from pointabstract.engine import load_config, train

    data = write_tiny_synthetic(tmp_path / "data", n=64)
    train(load_config(None, [f"data.root={data}", "data.dataset=modelnet40", "data.num_points=all",
                             "data.workers=0", "data.batch_size=8", "optim.epochs=1", f"log.out_dir={tmp_path / 'run'}",
                             "log.progress=false", "log.tensorboard=false", "device=cpu",
                             *tiny_model("centroid_transformer")]))
    report = neighbourhood_report(tmp_path / "run" / "last.pt", tmp_path / "eval", indices=(0,), queries=1,
                                  panel_size=64, figure_points=64, agreement_shapes=4)
    assert report.metrics["part_agreement_training_points"]["num_points"] == 64  # all 64 stored points
    assert report.metrics["part_agreement"]["shapes"] == 4 and report.png.is_file()
