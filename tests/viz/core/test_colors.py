import numpy as np
import pytest
import torch

from pointabstract.data import NUM_PARTS, SHAPENET_PART
from pointabstract.viz.core.colors import (
    GREY,
    HIGHLIGHT,
    HIGHLIGHTS,
    QUERY,
    ScalarLegend,
    class_palette,
    contrasting_highlight,
    label_colors,
    legend_image,
    part_legend,
    part_palette,
    scalar_colors,
)


def test_class_palette_is_fixed_distinct_and_in_range():
    p = class_palette(40)
    assert p.shape == (40, 3) and p.dtype == np.float64
    assert (p >= 0).all() and (p <= 1).all()
    assert np.array_equal(p, class_palette(40))  # fixed, no randomness
    assert np.array_equal(class_palette(5), p[:5])  # a prefix of any longer palette
    assert len(np.unique(p.round(6), axis=0)) == 40


def test_part_palette_is_keyed_on_the_50_global_part_ids():
    p = part_palette()
    assert p.shape == (NUM_PARTS, 3) and (p >= 0).all() and (p <= 1).all()
    assert len(np.unique(p.round(6), axis=0)) == NUM_PARTS
    for category in SHAPENET_PART:  # every category's parts are clearly apart (>= 0.2 in some channel)
        colors = p[list(category.parts)]
        gaps = np.abs(colors[:, None] - colors[None]).max(-1) + np.eye(len(colors))
        assert gaps.min() >= 0.2, category.name


def test_part_legend_names_parts_with_their_palette_colours():
    legend = part_legend("Chair")
    assert [name for name, _ in legend] == ["back", "seat", "leg", "arm"]
    assert legend[1][1] == tuple(part_palette()[13])  # Chair owns ids 12-15: seat is 13
    assert part_legend(4) == legend and part_legend("03001627") == legend
    with pytest.raises(ValueError, match="unknown ShapeNetPart category 'Sofa'"):
        part_legend("Sofa")
    with pytest.raises(ValueError, match=r"category must be an int in \[0, 15\] \(a ShapeNetPart index\), got 16"):
        part_legend(16)


def test_label_colors_picks_palette_rows_and_checks_labels():
    pal = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], float)
    assert np.array_equal(label_colors(torch.tensor([2, 0, 1]), pal), pal[[2, 0, 1]])
    with pytest.raises(ValueError, match=r"labels must lie in \[0, 3\), got values in \[0, 3\]"):
        label_colors([0, 3], pal)
    with pytest.raises(ValueError, match="labels must be a 1-D integer array"):
        label_colors([0.5], pal)
    with pytest.raises(ValueError, match=r"palette must have shape \(L, 3\)"):
        label_colors([0], pal[:, :2])
    with pytest.raises(ValueError, match="num_classes must be a positive int"):
        class_palette(0)


def test_scalar_colors_map_the_range_to_the_colour_map_ends():
    colors, legend = scalar_colors(np.array([2.0, 4.0, 3.0]), cmap="viridis", label="d")
    assert colors.shape == (3, 3) and (colors >= 0).all() and (colors <= 1).all()
    assert legend == ScalarLegend("viridis", 2.0, 4.0, "d")
    from matplotlib import colormaps

    assert np.allclose(colors[0], colormaps["viridis"](0.0)[:3]) and np.allclose(colors[1], colormaps["viridis"](1.0)[:3])
    clipped, _ = scalar_colors([-5.0, 5.0], vmin=0.0, vmax=1.0)
    assert np.allclose(clipped[0], colormaps["viridis"](0.0)[:3])
    constant, _ = scalar_colors([1.0, 1.0])  # no range: the low end, no division by zero
    assert np.isfinite(constant).all()
    with pytest.raises(ValueError, match="values holds NaN or Inf"):
        scalar_colors([1.0, float("nan")])
    with pytest.raises(ValueError, match="unknown cmap 'nope'"):
        scalar_colors([1.0], cmap="nope")
    with pytest.raises(ValueError, match="vmax must be >= vmin"):
        scalar_colors([1.0], vmin=2.0, vmax=1.0)


def test_legend_image_is_an_rgb_colour_bar_of_the_requested_size():
    img = legend_image(ScalarLegend("magma", 0.0, 1.0, "distance"), width=100, height=300)
    assert img.shape == (300, 100, 3) and img.dtype == np.uint8
    assert len(np.unique(img.reshape(-1, 3), axis=0)) > 50  # a gradient, not a blank
    assert tuple(np.round(np.array(HIGHLIGHT) * 255)) not in set(map(tuple, img.reshape(-1, 3)))
    with pytest.raises(ValueError, match="legend needs width >= 40"):
        legend_image(ScalarLegend("magma", 0, 1), width=10)


def test_the_highlight_is_red_unless_the_points_around_it_are_close_to_red():
    assert contrasting_highlight(GREY) == ("red", HIGHLIGHT)
    assert contrasting_highlight(class_palette(3)[1]) == ("red", HIGHLIGHT)  # green
    assert contrasting_highlight(class_palette(3)[0]) == ("black", HIGHLIGHTS["black"])  # crimson: 0.21 from red
    # a part colouring holding red and black: the next colour far from both, and from the query's blue
    assert contrasting_highlight(np.array([HIGHLIGHT, (0.1, 0.1, 0.1), GREY])) == ("magenta", HIGHLIGHTS["magenta"])
    # every category's parts get a highlight 0.35 or more away from all of them
    palette = part_palette()
    for category in SHAPENET_PART:
        colours = palette[list(category.parts)]
        _, rgb = contrasting_highlight(colours)
        assert np.linalg.norm(colours - np.asarray(rgb), axis=1).min() >= 0.35, category.name
    # nothing far enough: the farthest
    crowd = np.array([rgb for rgb in HIGHLIGHTS.values()] + [QUERY])
    name, _ = contrasting_highlight(crowd)
    assert name in HIGHLIGHTS
