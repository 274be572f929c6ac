import numpy as np
import pytest
from PIL import Image

from pointabstract.viz.colors import HIGHLIGHT, QUERY
from pointabstract.viz.figures import neighbourhood_figure, neighbourhood_section, pick_queries
from tests.helpers import cloud

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
    with pytest.raises(ValueError, match=r"index 99 is out of range"):
        neighbourhood_figure(session, tmp_path / "x.png", indices=(99,))
    with pytest.raises(ValueError, match=r"k must be an int in \[1, 6\]"):
        neighbourhood_figure(session, tmp_path / "x.png", indices=(0,), k=40)  # block 3 has 6 points
    with pytest.raises(ValueError, match=r"query must be an int in \[0, 6\)"):
        neighbourhood_figure(session, tmp_path / "x.png", indices=(0,), queries=[6])
    with pytest.raises(ValueError, match=r"queries must be an int in \[1, 6\]"):
        neighbourhood_figure(session, tmp_path / "x.png", indices=(0,), queries=7)


def test_pick_queries_spreads_them_out():
    pos = cloud(1, 100, 3, seed=2)[0]
    picked = pick_queries(pos, 4)
    assert picked[0] == 0 and len(set(picked)) == 4
    d = ((pos[picked][:, None] - pos[picked][None]) ** 2).sum(-1).sqrt()
    assert d[~np.eye(4, dtype=bool)].min() > 0.5  # far apart in a cloud of side 2
