"""A tiny trained checkpoint (3 easy classes, 48 points) shared by the viewer tests."""

import os

import pytest

from pointabstract.engine import load_config, train
from tests.fixtures import tiny_model, write_tiny_modelnet
from tests.viz._html_runs import tiny_pages, tiny_runs


def _open3d_or_skip():
    try:
        import open3d  # noqa: F401
    except (ImportError, OSError) as err:  # the library or its shared libraries are absent
        pytest.skip(f"open3d cannot be imported: {err}")


@pytest.fixture
def o3d():
    """Open3D; the test is skipped only when the library itself is absent."""
    _open3d_or_skip()
    import open3d

    return open3d


@pytest.fixture
def xvfb_display():
    """A virtual display (Xvfb) for a subprocess's window: its DISPLAY string; this process's
    DISPLAY is left as it was."""
    import shutil

    from pointabstract.viz.core import backends, render

    if shutil.which("Xvfb") is None:
        pytest.skip("Xvfb is not installed (Debian package xvfb)")
    before = os.environ.get("DISPLAY")
    display = render.start_xvfb()
    if before is None:  # the server is for the subprocess only
        os.environ.pop("DISPLAY")
    else:
        os.environ["DISPLAY"] = before
    yield display
    backends._stop_xvfb()


@pytest.fixture
def compose_calls(monkeypatch) -> list:
    """The (args, kwargs) of every compose_figure call (which still draws): what a titled PNG holds."""
    from pointabstract.viz.core import figure_compose

    calls, real = [], figure_compose.compose_figure
    monkeypatch.setattr(figure_compose, "compose_figure", lambda *a, **k: calls.append((a, k)) or real(*a, **k))
    return calls


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory):
    """(checkpoint path, data root) of a 2-epoch tiny centroid transformer: blocks of 48, 24, 24, 6 points."""
    root = tmp_path_factory.mktemp("viz")
    data = write_tiny_modelnet(root / "data").parent
    overrides = [f"data.root={data}", "data.num_points=48", "data.batch_size=8", "data.eval_batch_size=12",
                 "data.workers=0", "optim.epochs=2", f"log.out_dir={root / 'run'}", "log.progress=false",
                 "log.tensorboard=false", *tiny_model("centroid_transformer")]
    train(load_config(None, overrides))
    return root / "run" / "last.pt", data


@pytest.fixture(scope="session")
def session(tiny_run):
    from pointabstract.viz import load_session

    return load_session(tiny_run[0])


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory):
    """(checkpoint, data root) of the demo preset's model (256 training points, blocks of 256, 128,
    128, 32) after one epoch on a small copy of the built-in synthetic data, stored with 1,024
    points per shape in both its ModelNet and ShapeNetPart (part-labelled) layouts."""
    from pointabstract.data.synthetic import generate

    root = tmp_path_factory.mktemp("demo")
    generate(root / "data", train_per_class=2, test_per_class=1, num_points=1024, workers=1, progress=False)
    overrides = [f"data.root={root / 'data'}", "data.workers=0", "data.batch_size=16", "optim.epochs=1",
                 f"log.out_dir={root / 'run'}", "log.progress=false", "log.tensorboard=false"]
    train(load_config("demo", overrides))
    return root / "run" / "last.pt", root / "data"


@pytest.fixture(scope="module")
def html_runs(tmp_path_factory):
    """{task: (last.pt, data root)} of the tiny runs of the three tasks the browser viewer's tests read."""
    return tiny_runs(tmp_path_factory)


@pytest.fixture(scope="module")
def html_pages(tmp_path_factory):
    """{task: viewer.html} of :func:`html_runs`, written by ``view --html``."""
    return tiny_pages(tmp_path_factory)
