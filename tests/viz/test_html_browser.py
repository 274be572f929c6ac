"""The browser viewer's pages in a real headless Chromium (Debian package ``chromium``), driven
through the DevTools protocol (:mod:`tests.viz._chromium`) with every network request sent to a
dead proxy: each task's page opens with no console error and no request beyond its own file, a
real mouse click selects what the Python functions say it selects, and a screenshot shows it.

Screenshots go to the test's temporary folder, or to ``$POINTABSTRACT_SCREENSHOTS`` when set.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from tests.viz._chromium import Browser, chromium_path

pytestmark = pytest.mark.skipif(
    chromium_path() is None,
    reason="chromium is not installed (Debian package chromium; `make setup` installs it when run as root): "
           "the browser viewer's pages are not opened in a browser")


@pytest.fixture(scope="module")
def browser():
    with Browser() as b:
        yield b


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    wanted = os.environ.get("POINTABSTRACT_SCREENSHOTS")
    folder = Path(wanted) if wanted else tmp_path_factory.mktemp("screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _open(browser: Browser, page: Path) -> float:
    """Load the page, wait until it has drawn; returns the milliseconds it took."""
    browser.errors.clear()
    browser.requests.clear()
    browser.open(page)
    browser.wait_until("window.paViewer && (paViewer.ready || paViewer.errors.length > 0)")
    assert browser.evaluate("paViewer.errors") == []
    return browser.evaluate("paViewer.readyMs")


def _opened_cleanly(browser: Browser) -> None:
    assert browser.errors == [], browser.errors  # console errors and uncaught exceptions
    assert browser.requests == [], browser.requests  # nothing asked of any network address


def _click_point(browser: Browser, panel: str, trace: int, index: int) -> None:
    x, y = browser.evaluate(f"paViewer.screenOf('{panel}', {trace}, {index})")
    browser.click(x, y)


def _isolated_point(browser: Browser, panel: str, trace: int) -> int:
    """A clickable point drawn at least 8 pixels away from every other one of its trace."""
    xy = np.array(browser.evaluate(f"Array.from(paViewer.panels['{panel}'].screen[{trace}])")).reshape(-1, 3)[:, :2]
    d = np.linalg.norm(xy[:, None] - xy[None], axis=-1) + np.eye(len(xy)) * 1e9
    return int(np.argmax(d.min(1)))


def _choose(browser: Browser, select_id: str, value) -> None:
    browser.evaluate(f"(function () {{ const s = document.getElementById('{select_id}'); s.value = '{value}'; "
                     "s.dispatchEvent(new Event('change')); })()")


def _check_screenshot(path: Path, rgb, *, least: int = 20) -> None:
    """Not blank: drawn points cover part of the image and ``least`` pixels have colour ``rgb``."""
    from PIL import Image

    image = np.asarray(Image.open(path).convert("RGB")).astype(int)
    assert (np.abs(image - 255).sum(-1) > 60).mean() > 0.005, f"{path} is (almost) blank"
    near = (np.abs(image - np.rint(np.asarray(rgb) * 255)).sum(-1) < 40).sum()
    assert near >= least, f"{path}: only {near} pixels of colour {rgb}"


def test_classification_page_click_highlights_the_python_neighbour_sets(browser, html_runs, html_pages, shots):
    from pointabstract.viz.classification.html import part_session
    from pointabstract.viz.classification.scenes import feature_knn, xyz_knn
    from pointabstract.viz.core.colors import HIGHLIGHT
    from pointabstract.viz.tasks import load_session

    ms = _open(browser, html_pages["classification"])
    _choose(browser, "sel-shape", 3)
    _choose(browser, "sel-block", 1)
    q = _isolated_point(browser, "feature", 1)
    _click_point(browser, "feature", 1, q)
    state = browser.evaluate("paViewer.state")
    assert state == {"shape": 3, "block": 1, "coloring": "neighbours", "query": q, "layout": "side_by_side"}
    sample = part_session(load_session(html_runs["classification"][0])).sample(3)
    pos, feats = sample.block(1)
    k = browser.evaluate("paViewer.data.shapes[3].blocks[1].k")
    assert browser.evaluate("paViewer.highlighted('feature')") == sorted(feature_knn(feats, q, k).tolist())
    assert browser.evaluate("paViewer.highlighted('xyz')") == sorted(xyz_knn(pos, q, k).tolist())
    before = browser.evaluate("paViewer.screenOf('xyz', 1, 0)")
    x, y = browser.evaluate("paViewer.screenOf('feature', 1, 0)")
    browser.drag(x + 5, y + 5, 60, 20)  # turns both panels (one camera), selects nothing
    assert browser.evaluate("paViewer.state.query") == q
    assert browser.evaluate("paViewer.screenOf('xyz', 1, 0)") != before
    shot = browser.screenshot(shots / "classification.png")
    _check_screenshot(shot, HIGHLIGHT)
    _opened_cleanly(browser)
    print(f"classification page: drawn {ms:.0f} ms after navigation")


def test_capsule_page_click_selects_the_capsule_and_its_points(browser, html_runs, html_pages, shots):
    from pointabstract.viz.core.colors import HIGHLIGHT
    from pointabstract.viz.tasks import load_session

    _open(browser, html_pages["reconstruction"])
    _choose(browser, "sel-shape", 2)
    i = _isolated_point(browser, "reconstruction", 0)
    _click_point(browser, "reconstruction", 0, i)
    sample = load_session(html_runs["reconstruction"][0]).sample(2)
    c = int(sample.capsule_index[i])
    assert browser.evaluate("paViewer.state") == {"shape": 2, "capsule": c, "coloring": "capsule",
                                                  "layout": "side_by_side"}
    assert browser.evaluate("document.getElementById('sel-capsule').value") == str(c)
    assert browser.evaluate("paViewer.highlighted('reconstruction')") == sample.capsule_points(c).tolist()
    assert browser.evaluate("paViewer.highlighted('input')") == np.flatnonzero(sample.explained_by == c).tolist()
    shot = browser.screenshot(shots / "capsules.png")
    _check_screenshot(shot, HIGHLIGHT, least=5)
    _opened_cleanly(browser)


def test_segmentation_page_steps_through_the_tree_levels(browser, html_runs, html_pages, shots):
    from pointabstract.viz.segmentation.scenes import WRONG, segmentation_panels
    from pointabstract.viz.tasks import load_session

    _open(browser, html_pages["part_segmentation"])
    _choose(browser, "sel-shape", 1)
    _choose(browser, "sel-level", 1)
    sample = load_session(html_runs["part_segmentation"][0]).sample(1)
    tree = segmentation_panels(sample, level=1, layout="tree")[0]
    drawn = browser.evaluate("paViewer.panels.tree.div.data[0].marker.color")
    assert drawn == [f"rgb({r},{g},{b})" for r, g, b in np.rint(tree.colors * 255).astype(int)]
    assert browser.evaluate("paViewer.panels.tree.title.textContent") == tree.title
    assert browser.evaluate("paViewer.wrongPoints()") == np.flatnonzero(sample.wrong).tolist()
    shot = browser.screenshot(shots / "segmentation.png")
    _check_screenshot(shot, WRONG if sample.wrong.any() else tree.colors[0], least=5)
    _choose(browser, "sel-layout", "tree")  # the part panels hidden, the tree panel alone
    assert browser.evaluate("document.getElementById('panel-predicted').parentNode.style.display") == "none"
    _opened_cleanly(browser)
