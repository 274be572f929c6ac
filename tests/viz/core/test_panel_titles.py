"""The --png panel titles of the classification and capsule views say what each panel shows."""

import numpy as np
import pytest

from pointabstract.viz import load_session
from pointabstract.viz.capsules.app import CapsuleViewerState
from pointabstract.viz.classification.app import ViewerState
from pointabstract.viz.core.panel_titles import figure_title
from tests.viz._capsule_runs import tiny_ae_run


@pytest.fixture(scope="module")
def ae(tmp_path_factory):
    return load_session(tiny_ae_run(tmp_path_factory)[0])


def test_neighbourhood_titles_name_the_space_k_block_and_colours(o3d, session):
    state = ViewerState(session, index=1, block=1, k=5)
    titles = state.panel_titles()
    assert len(titles) == len(state.panel_scenes()) == 2
    assert titles[0].startswith("feature-space neighbours (K = 5, block 1, 24 points)\n")
    assert titles[1].startswith("3D neighbours (K = 5, block 1, 24 points)\n")
    assert "red: its 5 nearest in feature space" in titles[0] and "red: its 5 nearest in 3D" in titles[1]
    assert all("blue sphere: the query" in t and "grey: the block's other points" in t for t in titles)
    assert all("light grey: the 48 input points" in t for t in titles)  # 24 of 48 points: the cloud behind
    state.press("[")  # block 0: all 48 input points, no cloud behind them; K follows the state
    state.press(".")
    titles = state.panel_titles()
    assert titles[0].startswith("feature-space neighbours (K = 10, block 0, 48 points)")
    assert not any("light grey" in t for t in titles)


def test_neighbourhood_titles_follow_the_colouring_and_the_layout(session):
    state = ViewerState(session, index=2, block=1, k=4, coloring="predicted", layout="xyz")
    (title,) = state.panel_titles()
    assert title.startswith("3D neighbours (K = 4, block 1, 24 points)")
    assert f"other points: the colour of the predicted class ({state.sample.pred_name})" in title
    state = ViewerState(session, index=2, block=1, k=4, coloring="true", layout="feature")
    (title,) = state.panel_titles()
    assert title.startswith("feature-space neighbours") and f"true class ({state.sample.label_name})" in title
    state = ViewerState(session, index=2, block=1, k=4, coloring="distance")
    titles = state.panel_titles()
    assert "colour: feature-space distance to the query (blue sphere)" in titles[0]
    assert "colour: 3D distance to the query (blue sphere)" in titles[1]
    assert not any("red" in t for t in titles)  # no neighbours painted red in this colouring
    state.sample.part = np.arange(48) % 4 + 12  # as if ShapeNetPart: Chair parts 12-15
    state.coloring = "part"
    assert all("other points: the colour of their part" in t for t in state.panel_titles())


def test_capsule_titles_say_input_or_reconstruction_and_what_is_highlighted(o3d, ae):
    state = CapsuleViewerState(ae, index=1, capsule=2)
    s = state.sample
    titles = state.panel_titles()
    assert len(titles) == len(state.panel_scenes()) == 2
    explained = int((s.explained_by == 2).sum())
    assert titles[0] == (f"input ({s.pos.shape[0]} points)\nred: the {explained} input points whose nearest "
                         "decoded point is capsule 2's")
    decoded = len(s.capsule_points(2))
    assert titles[1].startswith(f"reconstruction ({s.points.shape[0]} points, CD {s.chamfer * 1e3:.2f} x 1e-3)\n"
                                f"red: what capsule 2 decodes ({decoded} point")
    state.press("N")  # the next capsule: the titles follow
    assert f"capsule {state.capsule}'s" in state.panel_titles()[0] and state.capsule != 2
    state.press("C")
    titles = state.panel_titles()
    assert state.coloring == "capsules" and f"each of the {s.num_capsules} capsules its own" in titles[1]
    assert "red" not in " ".join(titles)
    state.press("C")
    titles = state.panel_titles()
    assert state.coloring == "parts" and "colour: the true parts" in titles[0]
    assert f"colour: each capsule's majority part (purity {s.purity:.3f})" in titles[1]
    state.press("V")  # layout: the input alone
    assert [t.split("\n")[0] for t in state.panel_titles()] == [f"input ({s.pos.shape[0]} points)"]


def test_figure_title_names_the_model_and_the_checkpoint(session, ae):
    assert figure_title(session) == f"{session.config.model} (last.pt)"
    assert figure_title(ae) == f"{ae.config.model} (last.pt)" and "capsule_ae" in figure_title(ae)


def test_neighbours_of_a_red_class_are_drawn_and_titled_black(session):
    from pointabstract.viz.core.colors import HIGHLIGHT, HIGHLIGHTS

    index = next(i for i in range(len(session)) if session.sample(i).label == 0)  # class 0: crimson
    state = ViewerState(session, index=index, block=1, k=4, coloring="true", layout="xyz")
    scene = state.scene()
    assert np.allclose(scene.colors["xyz"][scene.xyz_idx], HIGHLIGHTS["black"])
    assert "black: its 4 nearest in 3D" in state.panel_titles()[0]
    state = ViewerState(session, index=index, block=1, k=4, coloring="neighbours", layout="xyz")
    assert np.allclose(state.scene().colors["xyz"][state.scene().xyz_idx], HIGHLIGHT)
    assert "red: its 4 nearest in 3D" in state.panel_titles()[0]


def test_model_label_names_the_settings_a_run_changed(ae):
    """Shared by every figure and page title: the registry name, plus what the run changed."""
    import dataclasses

    from pointabstract.viz.core.panel_titles import model_label

    label = model_label(ae.config)  # the tiny test model: its sizes differ from the registry's
    assert label.startswith(f"{ae.config.model} with ") and "latent_caps=" in label
    assert model_label(dataclasses.replace(ae.config, model_args={})) == ae.config.model
