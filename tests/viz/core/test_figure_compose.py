import matplotlib
import numpy as np
import pytest
from PIL import Image

from pointabstract.viz.core import figure_compose
from pointabstract.viz.core.colors import ScalarLegend
from pointabstract.viz.core.figure_compose import TITLE_SPACE, compose_figure, title_space, titled_panels_png
from pointabstract.viz.core.render import png_backend, render_panels_png


def test_grid_with_titles_and_caption_keeps_every_panel():
    red = np.zeros((50, 50, 3), np.uint8)
    red[..., 0] = 255
    img = compose_figure([[red, red], [red, red]], [["a", "b"], ["c", "d"]], ["r0", "r1"], title="t",
                         caption="a caption\nsecond line")
    assert img.dtype == np.uint8 and img.shape[1] == 100
    assert (img == [255, 0, 0]).all(-1).sum() > 4 * 30 * 30  # the four panels, scaled a little at most


def test_grid_errors():
    red = np.zeros((8, 8, 3), np.uint8)
    with pytest.raises(ValueError, match="images must be a non-empty grid"):
        compose_figure([[red], [red, red]], [["a"], ["b", "c"]], ["x", "y"])
    with pytest.raises(ValueError, match="titles must match images panel for panel"):
        compose_figure([[red]], [["a", "b"]], ["x"])


def test_columns_take_their_panels_widths_and_long_titles_get_room():
    wide, narrow = np.zeros((100, 200, 3), np.uint8), np.zeros((100, 40, 3), np.uint8)
    wide[..., 2] = narrow[..., 1] = 255
    img = compose_figure([[wide, narrow]], [["a", "b"]], ["r"], title="t")
    assert img.shape == (100 + TITLE_SPACE, 240, 3)
    blue, green = (img == [0, 0, 255]).all(-1), (img == [0, 255, 0]).all(-1)
    ratio = blue.any(0).sum() / green.any(0).sum()  # each as wide as its image, scaled alike
    assert 4.5 < ratio < 5.5 and blue.sum() > 0.6 * 200 * 100, ratio
    assert np.flatnonzero(blue.any(0)).max() < np.flatnonzero(green.any(0)).min()  # left to right
    five = "1\n2\n3\n4\n5"
    assert title_space(["a", "b\nc\nd"], [200, 40]) == TITLE_SPACE  # three lines fit the usual space
    assert title_space([five, "b"], [200, 40]) == TITLE_SPACE + 25  # two more lines of 12.5 px
    assert title_space(["x" * 60], [100]) > TITLE_SPACE  # wrapped to the panel's width: more lines
    assert compose_figure([[wide, narrow]], [[five, "b"]], ["r"]).shape == (100 + TITLE_SPACE + 25, 240, 3)
    with pytest.raises(ValueError, match="titles and widths must have one entry per panel"):
        title_space(["a"], [10, 20])


def _points(o3d, n=200, seed=0):
    from pointabstract.viz.core.geometry import point_cloud

    pos = np.random.default_rng(seed).normal(size=(n, 3))
    return [{"name": "points", "geometry": point_cloud(pos, (0.2, 0.2, 0.2)), "point_size": 5.0}]


def test_titled_panels_png_is_the_requested_size_titled_and_says_its_backend(o3d, tmp_path, monkeypatch):
    composed = []
    real = figure_compose.compose_figure
    monkeypatch.setattr(figure_compose, "compose_figure", lambda *a, **k: composed.append((a, k)) or real(*a, **k))
    legend = ScalarLegend("viridis", 0.0, 1.0, "a scalar")
    out = titled_panels_png([_points(o3d), _points(o3d, seed=1)], ["left panel", "right panel"], tmp_path / "t.png",
                            width=600, height=340, row_label="#3: a sample", title="model (last.pt)",
                            legend=legend, backend="software")
    img = np.asarray(Image.open(out))[..., :3]
    assert img.shape == (340, 600, 3) and png_backend(out) == "software"
    (args, kwargs), = composed
    images, titles, labels = args
    assert titles == [["left panel", "right panel", ""]] and labels == ["#3: a sample"]
    assert kwargs["title"] == "model (last.pt)"
    assert [im.shape for im in images[0]] == [(215, 245, 3), (215, 245, 3), (215, 110, 3)]  # + the bar
    for value in (0.25, 0.5, 0.75):  # the bar's colours are in the PNG, right of the panels
        rgb = np.round(np.array(matplotlib.colormaps["viridis"](value)[:3]) * 255)
        assert (np.abs(img[:, 480:].astype(int) - rgb) <= 6).all(-1).sum() > 10, value
        assert not (np.abs(img[:, :480].astype(int) - rgb) <= 6).all(-1).any()
    out = titled_panels_png([_points(o3d)] * 2, ["a", "b"], tmp_path / "odd.png", width=601, height=341,
                            row_label="r", title="t", backend="software")
    assert Image.open(out).size == (601, 341)  # panels of 300 px: the figure padded to the exact size


def test_too_small_for_titles_the_panels_are_drawn_alone(o3d, tmp_path):
    panels = [_points(o3d), _points(o3d, seed=1)]
    out = titled_panels_png(panels, ["a", "b"], tmp_path / "t.png", width=300, height=200, row_label="r",
                            title="t", backend="software")
    alone = render_panels_png(panels, tmp_path / "u.png", width=300, height=200, backend="software")
    assert np.array_equal(np.asarray(Image.open(out)), np.asarray(Image.open(alone)))
    assert png_backend(out) == "software"
    with pytest.raises(ValueError, match=r"titles must hold one title per panel \(2\)"):
        titled_panels_png(panels, ["a"], tmp_path / "t.png", width=600, height=400, row_label="r", title="t")
    with pytest.raises(ValueError, match="height must be a positive int, got 0"):
        titled_panels_png(panels, ["a", "b"], tmp_path / "t.png", width=600, height=0, row_label="r", title="t")
