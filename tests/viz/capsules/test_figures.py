import numpy as np
import pytest
from PIL import Image

from pointabstract.engine import restore
from pointabstract.viz import load_session
from pointabstract.viz.capsules.figures import capsule_figure, capsule_section
from pointabstract.viz.core.colors import HIGHLIGHT
from pointabstract.viz.core.render import png_backend
from tests.viz._capsule_runs import tiny_ae_run

RED = tuple(round(v * 255) for v in HIGHLIGHT)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return tiny_ae_run(tmp_path_factory, "dr"), tiny_ae_run(tmp_path_factory, "ca")


def test_two_checkpoints_reconstruct_the_same_shapes_row_by_row(o3d, runs, tmp_path):
    (dr, data), (ca, _) = runs
    out = capsule_figure([dr, ca], tmp_path / "f" / "fig5.png", indices=(0, 1), panel_size=64)
    img = np.asarray(Image.open(out))[..., :3]
    # 2 shapes x 2 checkpoints = 4 rows of 64-pixel panels: input, all capsules, by part, 4 capsules
    assert img.shape[0] >= 4 * 64 and img.shape[1] >= 7 * 64
    # red capsule points in the capsule panels (right half); compose_figure resamples panels a little
    right = img[:, img.shape[1] // 2:].astype(int)
    assert (np.abs(right - np.array(RED)) <= 30).all(-1).sum() > 10
    assert png_backend(out) in ("offscreen", "legacy", "software")
    # the same shapes: the second model reconstructs the first one's inputs
    a, b = load_session(dr), load_session(ca)
    item = a.item(1)
    assert np.array_equal(b.reconstruct(item, index=1).pos.numpy(), a.sample(1).pos.numpy())


def test_capsules_choose_the_panels_and_bad_arguments_are_refused(o3d, runs, tmp_path, tiny_run):
    (dr, _), _ = runs
    one = capsule_figure(dr, tmp_path / "one.png", indices=(0,), capsules=[3], panel_size=64)
    few = capsule_figure(dr, tmp_path / "two.png", indices=(0,), capsules=[3, 0], panel_size=64)
    assert Image.open(few).size[0] > Image.open(one).size[0]  # one more panel
    with pytest.raises(ValueError, match="indices must be a non-empty list"):
        capsule_figure(dr, tmp_path / "x.png", indices=())
    with pytest.raises(ValueError, match=r"index must be an int in \[0, 15\] .*, got 16"):
        capsule_figure(dr, tmp_path / "x.png", indices=(16,))
    with pytest.raises(ValueError, match=r"capsule must be an int in \[0, 3\]"):
        capsule_figure(dr, tmp_path / "x.png", indices=(0,), capsules=[4])
    with pytest.raises(ValueError, match="max_capsules must be a positive int, got 0"):
        capsule_figure(dr, tmp_path / "x.png", max_capsules=0)
    with pytest.raises(ValueError, match="checkpoints must name at least one"):
        capsule_figure([], tmp_path / "x.png")
    with pytest.raises(ValueError, match="this shows reconstruction runs; this is a 'classification' run"):
        capsule_figure([tiny_run[0], dr], tmp_path / "x.png")


def test_report_section_of_a_restored_run(o3d, runs, tmp_path):
    (dr, _), _ = runs
    run = restore(dr)
    text, metrics = capsule_section(run, tmp_path, indices=(0, 2, 99), panel_size=64)
    assert metrics == {} and (tmp_path / "capsules.png").is_file()
    assert text.startswith("## Latent capsules") and "![capsules](capsules.png)" in text
    assert f"pointabstract view {dr} --data " in text
    sample = load_session(dr).sample(2)
    row = (f"| #2 {sample.category_name} | {sample.chamfer * 1e3:.3f} | {sample.purity:.3f} | "
           f"{sample.describe_groups()} |")
    assert row in text and "| #99" not in text  # shapes beyond the split are dropped
    with pytest.raises(ValueError, match="hold no sample of the 16-shape split"):
        capsule_section(run, tmp_path, indices=(99,))


def test_without_part_labels_the_figure_and_section_say_so(o3d, tmp_path_factory, tmp_path):
    from pointabstract.viz.capsules.app import CapsuleViewerState

    ckpt, _ = tiny_ae_run(tmp_path_factory, "dr", dataset="modelnet40")
    session = load_session(ckpt)
    assert session.sample(0).part is None and session.sample(0).capsule_parts is None
    text, _ = capsule_section(session, tmp_path, indices=(0,), panel_size=64)
    assert "| shape | Chamfer x 1e-3 |" in text and "purity" not in text
    assert Image.open(tmp_path / "capsules.png").size[0] > 0
    with pytest.raises(ValueError, match="coloring 'parts' needs per-point part labels"):
        CapsuleViewerState(session, coloring="parts")


def test_the_title_names_the_settings_a_run_changed_from_its_registry_model(runs):
    """A variant such as ``model.decoders=0`` must not be titled as the registry model itself."""
    import dataclasses

    from pointabstract.models import model_config
    from pointabstract.viz.capsules.figures import _title

    (dr, _), _ = runs
    session = load_session(dr)
    title = _title([session])
    default, used = model_config(session.config.model), session.config.model_config()
    assert "capsule_ae_demo_dr with " in title
    changed = [k for k in session.config.model_args if getattr(used, k) != getattr(default, k)]
    assert len(changed) >= 3  # the tiny test model's sizes
    for key in session.config.model_args:
        assert (f"{key}={getattr(used, key)}" in title) == (key in changed), (key, title)
    plain = dataclasses.replace(session, config=dataclasses.replace(session.config, model_args={}))
    assert "(capsule_ae_demo_dr, last.pt)" in _title([plain])
    # a setting equal to the registry default is not a change
    same = dataclasses.replace(session.config, model_args={"decoders": plain.config.model_config().decoders})
    assert "(capsule_ae_demo_dr, last.pt)" in _title([dataclasses.replace(session, config=same)])
