"""The browser viewer's pages, read back in Python: the embedded data equals what the Python
functions of the window and the PNG figures compute; the page asks for nothing outside itself;
``view --html`` and ``eval``'s viewer.html. (The pages in a real browser: test_html_browser.py.)"""

from __future__ import annotations

import re

import numpy as np
import pytest

from pointabstract.cli import main
from pointabstract.viz.core.html import (
    check_out_path,
    decode_array,
    encode_array,
    read_page_data,
    rgb8,
    write_page,
)


def _rgb8(colors) -> np.ndarray:
    return np.rint(np.asarray(colors, dtype=float) * 255).astype(np.uint8)


# --- the shared machinery ----------------------------------------------------------------------

@pytest.mark.parametrize("dtype, values", [("f4", [[0.5, -1.25, 3.0]]), ("u1", [0, 255]), ("u2", [0, 65535]),
                                           ("i4", [[-5, 7], [2**31 - 1, 0]])])
def test_encode_decode_round_trip(dtype, values):
    back = decode_array(encode_array(np.array(values), dtype))
    np.testing.assert_array_equal(back, np.array(values))
    assert back.shape == np.array(values).shape


def test_encode_refuses_values_that_do_not_fit_and_unknown_dtypes():
    with pytest.raises(ValueError, match=r"array values in \[0, 256\] do not fit dtype u1"):
        encode_array(np.array([0, 256]), "u1")
    with pytest.raises(ValueError, match=r"dtype must be one of \['f4', 'i4', 'u1', 'u2'\], got 'f8'"):
        encode_array(np.zeros(2), "f8")
    with pytest.raises(ValueError, match=r"colors must be RGB rows in \[0, 1\]"):
        rgb8([[0.0, 1.5, 0.0]])


def test_write_page_is_one_self_contained_file_whose_data_reads_back(tmp_path):
    data = {"task": "x", "a": encode_array(np.arange(6).reshape(2, 3), "i4"), "text": "</script><b>"}
    page = write_page(tmp_path / "sub" / "p.html", title="t <1>", data=data, script="console.log(1);")
    text = page.read_text()
    assert read_page_data(page) == data  # "</" escaped inside the JSON: the tag is not closed early
    assert "<title>t &lt;1&gt;</title>" in text
    assert not re.search(r"<(script|img|link|iframe)[^>]*\s(src|href)=", text)  # nothing loaded from elsewhere
    assert "window.paViewer" in text and "console.log(1);" in text  # the common script, then the task's
    assert "http" not in text  # no address of any kind
    assert [p.name for p in page.parent.iterdir()] == ["p.html"]  # no temp file left


def test_check_out_path_refuses_a_folder_and_an_unwritable_folder(tmp_path):
    with pytest.raises(ValueError, match=r"--html .* is a folder; give a file name such as .*viewer.html"):
        check_out_path(tmp_path)
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match=r"--html .*file/v.html: folder .*file cannot be written: "):
        check_out_path(tmp_path / "file" / "v.html")
    assert check_out_path(tmp_path / "new" / "v.html").parent.is_dir()


def test_read_page_data_names_a_file_that_is_no_viewer_page(tmp_path):
    (tmp_path / "x.html").write_text("<html></html>")
    with pytest.raises(ValueError, match=r"x.html: no pointabstract viewer data"):
        read_page_data(tmp_path / "x.html")


# --- each task's page holds what the Python functions compute ----------------------------------

def test_without_part_labels_the_page_keeps_its_session_and_measures_no_agreement(html_runs, tmp_path):
    from dataclasses import replace

    from pointabstract.viz.classification.html import measured_agreement, part_session
    from pointabstract.viz.tasks import load_session

    session = load_session(html_runs["classification"][0])
    bare = replace(session, config=replace(session.config, data=replace(session.config.data, root=str(tmp_path))))
    assert part_session(bare) is bare and measured_agreement(bare) is None
    assert part_session(session) is not session  # the built-in data has the part-labelled copy


def test_classification_page_holds_the_figures_neighbour_sets_and_the_windows_colours(html_runs, html_pages):
    from pointabstract.viz.classification.app import ViewerState
    from pointabstract.viz.classification.html import part_session
    from pointabstract.viz.classification.scenes import default_k, feature_knn, xyz_knn
    from pointabstract.viz.tasks import load_session

    data = read_page_data(html_pages["classification"])
    session = part_session(load_session(html_runs["classification"][0]))
    assert data["task"] == "classification" and len(data["shapes"]) == 16
    assert data["colorings"] == ["neighbours", "predicted", "true", "part"]  # part-labelled synthetic data
    assert set(data["agreement"]["blocks"]) == {"0", "1", "2", "3"}
    for i in (0, 7):
        shape, sample = data["shapes"][i], session.sample(i)
        assert shape["title"] == sample.title and shape["pred_name"] == sample.pred_name
        np.testing.assert_array_equal(decode_array(shape["pos"]), sample.pos.numpy())
        for b, block in enumerate(shape["blocks"]):
            pos, feats = sample.block(b)
            k = default_k(pos.shape[0])
            assert block["k"] == k
            f_knn, x_knn = decode_array(block["feature_knn"]), decode_array(block["xyz_knn"])
            for q in range(pos.shape[0]):
                np.testing.assert_array_equal(f_knn[q], feature_knn(feats, q, k))
                np.testing.assert_array_equal(x_knn[q], xyz_knn(pos, q, k))
        for coloring in ("neighbours", "part"):  # the window's scene: base colours around the neighbours
            state = ViewerState(session, index=i, block=1, coloring=coloring)
            scene = state.scene(layout="feature")
            block = shape["blocks"][1]
            others = np.setdiff1d(np.arange(block["m"]), scene.feature_idx)
            np.testing.assert_array_equal(decode_array(block["colors"][coloring])[others],
                                          _rgb8(scene.colors["feature"][others]))
            np.testing.assert_array_equal(_rgb8(block["highlight"][coloring]),
                                          _rgb8(scene.colors["feature"][scene.feature_idx[0]]))
            assert block["highlight_name"][coloring] == state.highlight_name()
            assert block["query"] == state.query


def test_capsule_page_holds_the_capsule_assignments_colours_and_purities(html_runs, html_pages):
    from pointabstract.viz.capsules.scenes import capsule_colors
    from pointabstract.viz.tasks import load_session

    data = read_page_data(html_pages["reconstruction"])
    session = load_session(html_runs["reconstruction"][0])
    assert data["task"] == "reconstruction" and len(data["shapes"]) == 16
    assert data["colorings"] == ["capsule", "capsules", "parts"]
    for i in (0, 5):
        shape, sample = data["shapes"][i], session.sample(i)
        np.testing.assert_array_equal(decode_array(shape["capsule_index"]), sample.capsule_index)
        np.testing.assert_array_equal(decode_array(shape["explained_by"]), sample.explained_by)
        np.testing.assert_allclose(decode_array(shape["points"]), sample.points.numpy())
        for coloring in ("capsules", "parts"):
            inp, out = capsule_colors(sample, coloring)
            np.testing.assert_array_equal(decode_array(shape["colors"][coloring]["input"]), _rgb8(inp))
            np.testing.assert_array_equal(decode_array(shape["colors"][coloring]["reconstruction"]), _rgb8(out))
        assert [c["capsule"] for c in shape["capsules"]] == sample.capsule_order()
        assert [c["text"] for c in shape["capsules"]] == [sample.describe_capsule(c) for c in sample.capsule_order()]
        assert shape["purity"] == pytest.approx(sample.purity)
        c = sample.capsule_order()[0]
        inp, out = capsule_colors(sample, "capsule", c)  # what the page paints from the indices
        red = np.all(out == data["highlight"], axis=1)
        np.testing.assert_array_equal(np.flatnonzero(red), sample.capsule_points(c))


def test_segmentation_page_holds_the_panels_colours_levels_and_legend(html_runs, html_pages):
    from pointabstract.viz.segmentation.figures import default_levels
    from pointabstract.viz.segmentation.scenes import legend_entries, segmentation_panels
    from pointabstract.viz.tasks import load_session

    data = read_page_data(html_pages["part_segmentation"])
    session = load_session(html_runs["part_segmentation"][0])
    assert data["task"] == "part_segmentation" and len(data["shapes"]) == 16
    for i in (0, 9):
        shape, sample = data["shapes"][i], session.sample(i)
        assert shape["level"] == default_levels(sample.top_level)[0]
        panels = {p.name: p for p in segmentation_panels(sample, level=1, layout="parts")}
        for name in ("true", "predicted"):
            np.testing.assert_array_equal(decode_array(shape["panels"][name]["colors"]), _rgb8(panels[name].colors))
            assert shape["panels"][name]["title"] == panels[name].title
        np.testing.assert_array_equal(decode_array(shape["wrong"]).astype(bool), sample.wrong)
        assert len(shape["levels"]) == sample.top_level
        for entry in shape["levels"]:
            tree = segmentation_panels(sample, level=entry["level"], layout="tree")[0]
            np.testing.assert_array_equal(decode_array(entry["colors"]), _rgb8(tree.colors))
            assert entry["title"] == tree.title
        assert [e[0] for e in shape["legend"]] == [name for name, _ in legend_entries(sample)]


def test_every_task_of_the_viewer_has_a_page_writer():
    from pointabstract.viz import tasks

    assert set(tasks.HTMLS) == set(tasks.SESSIONS) == set(tasks.STATES) == set(tasks.PAGE_HELP)


# --- the commands ------------------------------------------------------------------------------

def test_view_html_takes_the_views_options(html_runs, tmp_path, capsys):
    ckpt = html_runs["classification"][0]
    out = tmp_path / "v.html"
    assert main(["view", str(ckpt), "--html", str(out), "--index", "2", "--samples", "3", "--block", "2",
                 "--k", "5", "--color", "true", "--query", "4", "--layout", "feature"]) == 0
    assert re.search(r"wrote .*v.html \(\d+\.\d MB, self-contained", capsys.readouterr().out)
    data = read_page_data(out)
    assert [s["index"] for s in data["shapes"]] == [2, 3, 4]
    assert data["block"] == 2 and data["coloring"] == "true" and data["layout"] == "feature"
    assert {b["k"] for b in data["shapes"][0]["blocks"]} == {5}
    assert data["shapes"][0]["blocks"][2]["query"] == 4
    seg = tmp_path / "s.html"
    assert main(["view", str(html_runs["part_segmentation"][0]), "--html", str(seg), "--samples", "2",
                 "--level", "1", "--layout", "tree"]) == 0
    data = read_page_data(seg)
    assert data["layout"] == "tree" and {s["level"] for s in data["shapes"]} == {1}
    caps = tmp_path / "c.html"
    assert main(["view", str(html_runs["reconstruction"][0]), "--html", str(caps), "--samples", "1",
                 "--capsule", "2", "--color", "parts", "--layout", "input"]) == 0
    data = read_page_data(caps)
    assert data["capsule"] == 2 and data["coloring"] == "parts" and data["layout"] == "input"


@pytest.mark.parametrize("extra, pattern", [
    (["--png", "x.png"], r"--html writes the page alone; drop --png"),
    (["--capsule", "1"], r"--capsule applies to reconstruction checkpoints; .* is a 'classification' run"),
    (["--color", "distance"], r"coloring must be one of \['neighbours', 'predicted', 'true', 'part'\] in the page"),
    (["--samples", "0"], r"samples must be a positive int, got 0"),
    (["--index", "99"], r"index must be an int in \[0, 15\] \(the test split has 16 samples\), got 99"),
])
def test_view_html_refuses_in_one_line(html_runs, tmp_path, capsys, extra, pattern):
    assert main(["view", str(html_runs["classification"][0]), "--html", str(tmp_path / "v.html"), *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err and re.search(pattern, err.splitlines()[0]), err
    assert not (tmp_path / "v.html").exists()


def test_the_eval_section_writes_viewer_html_and_links_it(html_runs, tmp_path):
    from pointabstract.cli import _viewer_section
    from pointabstract.engine import restore

    run = restore(html_runs["reconstruction"][0], overrides={"data.workers": 0})
    text, metrics = _viewer_section(run, tmp_path)
    assert metrics == {} and text.startswith("## Interactive viewer") and "[viewer.html](viewer.html)" in text
    data = read_page_data(tmp_path / "viewer.html")
    assert data["task"] == "reconstruction" and len(data["shapes"]) == 16
    agreement = {"block_0": {"feature": 0.5, "xyz": 0.4, "chance": 0.3, "k": 2, "points": 8}, "shapes": 3,
                 "num_points": 64}
    _viewer_section(restore(html_runs["classification"][0], overrides={"data.workers": 0}), tmp_path, agreement)
    shown = read_page_data(tmp_path / "viewer.html")["agreement"]  # the report's numbers, not re-measured
    assert shown["shapes"] == 3 and shown["blocks"]["0"]["feature"] == 0.5


@pytest.mark.slow
def test_eval_writes_viewer_html_beside_the_report_and_links_it(html_runs, tmp_path, capsys):
    out = tmp_path / "eval"
    assert main(["eval", str(html_runs["part_segmentation"][0]), "--out", str(out)]) == 0
    report = (out / "report.md").read_text()
    assert "## Interactive viewer" in report and "[viewer.html](viewer.html)" in report
    data = read_page_data(out / "viewer.html")
    assert data["task"] == "part_segmentation" and len(data["shapes"]) == 16
