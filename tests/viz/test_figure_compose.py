import numpy as np
import pytest

from pointabstract.viz.figure_compose import compose_figure


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
