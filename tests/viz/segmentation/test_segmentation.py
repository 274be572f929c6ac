"""The part-segmentation view: tree clusters, predicted vs true panels, keys, CLI, eval section."""

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from pointabstract.data import SHAPENET_PART
from pointabstract.engine import load_config, train
from pointabstract.ops import build_tree
from pointabstract.viz.core.colors import part_palette
from pointabstract.viz.segmentation.app import SEG_KEYMAP, SegViewerState
from pointabstract.viz.segmentation.scenes import WRONG, cluster_colors, legend_entries, segmentation_panels
from pointabstract.viz.segmentation.session import (
    SegSample,
    load_seg_session,
    tree_clusters,
)
from tests.fixtures import TASK_DATA, tiny_model, write_tiny_synthetic


@pytest.fixture(scope="module")
def seg_runs(tmp_path_factory):
    """{model name: last.pt} of 1-epoch tiny part segmenters on the tiny synthetic set (64 points)."""
    root = tmp_path_factory.mktemp("seg")
    data = write_tiny_synthetic(root / "data")
    runs = {}
    for model in ("sequoia_seg", "softmax_seg"):
        overrides = [f"model={model}", f"data.root={data}", "data.num_points=64", "data.batch_size=16",
                     "data.workers=0", "optim.epochs=1", f"log.out_dir={root / model}", "log.progress=false",
                     "log.tensorboard=false", *tiny_model(model),
                     *(f"{k}={v}" for k, v in TASK_DATA["part_segmentation"].items())]
        train(load_config(None, overrides))
        runs[model] = root / model / "last.pt"
    return runs


@pytest.fixture(scope="module")
def seq_session(seg_runs):
    return load_seg_session(seg_runs["sequoia_seg"])


def test_tree_clusters_hand_computed():
    # 8 points on a line, shuffled: branching 2, leaf_size 2 -> groups of 2, then of 4, then the root
    x = torch.tensor([5.0, 0.0, 7.0, 2.0, 1.0, 6.0, 3.0, 4.0])
    pos = torch.stack([x, torch.zeros(8), torch.zeros(8)], -1)[None]
    clusters = tree_clusters(build_tree(pos, branching=2, leaf_size=2))
    assert len(clusters) == 4
    order = x.long().numpy()  # point i sits at x = order[i]
    np.testing.assert_array_equal(clusters[0], np.arange(8))
    np.testing.assert_array_equal(clusters[1], order // 2)
    np.testing.assert_array_equal(clusters[2], order // 4)
    np.testing.assert_array_equal(clusters[3], np.zeros(8))


def test_tree_clusters_follow_the_parents():
    tree = build_tree(torch.rand(2, 50, 3, generator=torch.Generator().manual_seed(0)), branching=3, leaf_size=4)
    clusters = tree_clusters(tree, batch=1)
    for lvl in range(1, len(tree.levels)):
        members = tree.levels[1].children[1] if lvl == 1 else None
        if members is not None:  # level 1: the children table lists each group's points
            for node, row in enumerate(members.tolist()):
                assert all(clusters[1][p] == node for p in row if p >= 0)
        parent = tree.levels[lvl - 1].parent[1].numpy()
        np.testing.assert_array_equal(clusters[lvl], parent[clusters[lvl - 1]])
    with pytest.raises(ValueError, match=r"batch must be an int in \[0, 1\], got"):
        tree_clusters(tree, batch=2)
    with pytest.raises(TypeError, match="tree must be a PointTree"):
        tree_clusters("tree")


def test_sample_uses_the_eval_protocol_and_the_models_tree(seq_session):
    from pointabstract.engine.tasks.part_segmentation import restrict_to_category, shape_ious

    s = seq_session.sample(3)
    item = seq_session.dataset[3]
    assert s.category == int(item["category"]) and s.tree_from_model
    assert set(s.pred.tolist()) <= set(SHAPENET_PART[s.category].parts)  # restricted to the category
    with torch.no_grad():
        logits = seq_session.model(torch.as_tensor(item["pos"])[None], torch.tensor([s.category]))["logits"]
    np.testing.assert_array_equal(s.pred, restrict_to_category(logits, torch.tensor([s.category]))[0].argmax(-1))
    np.testing.assert_array_equal(s.wrong, s.pred != item["part"])
    assert s.iou == pytest.approx(float(shape_ious(torch.as_tensor(s.pred)[None],
                                                   torch.as_tensor(item["part"])[None], torch.tensor([s.category]))[0]))
    assert s.top_level == len(s.clusters) - 1 and s.cluster_count(s.top_level) == 1
    with pytest.raises(ValueError, match=r"index must be an int in \[0, \d+\] \(.*\), got 999"):
        seq_session.sample(999)


def test_softmax_model_gets_a_tree_built_on_its_points(seg_runs):
    session = load_seg_session(seg_runs["softmax_seg"])
    s = session.sample(0)
    assert not s.tree_from_model and "not used by the model" in s.tree_note()
    cfg = session.model.cfg
    tree = build_tree(s.pos[None], branching=cfg.branching, leaf_size=cfg.leaf_size)
    for got, want in zip(s.clusters, tree_clusters(tree)):
        np.testing.assert_array_equal(got, want)
    tree_panel = segmentation_panels(s, level=1, layout="tree")[0]
    assert "not used by the model" in tree_panel.title


def _sample(pred, part, clusters):
    pos = torch.arange(len(pred) * 3, dtype=torch.float32).view(-1, 3)
    return SegSample(0, pos, 0, np.array(pred), [np.arange(len(pred)), *map(np.array, clusters)], True,
                     part=None if part is None else np.array(part))


def test_panels_mark_exactly_the_wrong_points_black():
    s = _sample([0, 1, 1, 2, 3], [0, 1, 2, 2, 0], [[0, 0, 1, 1, 2], [0, 0, 0, 0, 0]])  # Airplane parts 0-3
    true, pred, tree = segmentation_panels(s, level=1)
    palette = part_palette()
    np.testing.assert_allclose(true.colors, palette[[0, 1, 2, 2, 0]])
    np.testing.assert_allclose(pred.colors[[0, 1, 3]], palette[[0, 1, 2]])
    np.testing.assert_allclose(pred.colors[[2, 4]], [WRONG, WRONG])
    wrong = [g for g in pred.geometries if g["name"] == "predicted/wrong"][0]
    np.testing.assert_allclose(np.asarray(wrong["geometry"].points), s.pos[[2, 4]].numpy())
    assert wrong["point_size"] > pred.geometries[0]["point_size"]
    assert "2/5 wrong" in pred.title and "3 clusters" in tree.title
    np.testing.assert_allclose(tree.colors, cluster_colors(np.array([0, 0, 1, 1, 2])))
    assert len({tuple(c) for c in tree.colors}) == 3  # one colour per cluster
    assert [n for n, _ in legend_entries(s)] == ["body", "wing", "tail", "engine", "wrong prediction"]


def test_panels_without_true_parts_and_bad_arguments():
    s = _sample([0, 1, 1], None, [[0, 0, 1], [0, 0, 0]])
    panels = segmentation_panels(s, level=2, layout="parts")
    assert [p.name for p in panels] == ["predicted"] and s.wrong is None and s.iou is None
    assert all(g["name"] != "predicted/wrong" for g in panels[0].geometries)
    with pytest.raises(ValueError, match=r"level must be an int in \[1, 2\]"):
        segmentation_panels(s, level=3)
    with pytest.raises(ValueError, match=r"level must be an int in \[1, 2\]"):
        segmentation_panels(s, level=0)
    with pytest.raises(ValueError, match="layout must be one of"):
        segmentation_panels(s, layout="grid")
    with pytest.raises(ValueError, match="clusters must be a non-empty 1-D array"):
        cluster_colors(np.array([-1, 0]))


def test_keys_move_up_and_down_the_tree(seq_session):
    state = SegViewerState(seq_session, index=0, level=1)
    top = state.sample.top_level
    assert set(SEG_KEYMAP) >= {"[", "]", "left", "right", "V"}
    counts = [state.sample.cluster_count(1)]
    for _ in range(top - 1):
        state.press("]")
        counts.append(state.sample.cluster_count(state.level))
    assert state.level == top and counts == sorted(counts, reverse=True) and counts[-1] == 1
    assert "level stays" in state.press("]") and state.level == top
    for _ in range(top + 2):
        state.press("[")
    assert state.level == 1
    state.press("left")
    assert state.index == len(seq_session) - 1
    assert [state.press("V") and state.layout for _ in range(3)] == ["parts", "tree", "all"]
    assert [p.name for p in state.panels()] == ["true", "predicted", "tree"]
    assert "tree level 1/" in state.status() and state.screenshot_name(2).startswith("view02_shape")
    with pytest.raises(ValueError, match="key must be one of"):
        state.press("N")
    with pytest.raises(ValueError, match=r"level must be an int in \[1, "):
        SegViewerState(seq_session, level=top + 1)


def test_checkpoint_kind_and_refused_options(seg_runs, tmp_path, capsys):
    from pointabstract.cli import main

    ckpt = seg_runs["sequoia_seg"]
    out = str(tmp_path / "x.png")
    for extra, message in ((["--k", "5"], "--k applies to classification checkpoints; "),
                           (["--capsule", "1"], "--capsule applies to reconstruction checkpoints; "),
                           (["--color", "part"], "--color does not apply to a part-segmentation checkpoint"),
                           (["--layout", "xyz"], "layout must be one of ['all', 'parts', 'tree']"),
                           (["--level", "99"], r"level must be an int in \[1, "),
                           (["--keys", "N"], r"keys \['N'\] are not in the key map of a part_segmentation run")):
        assert main(["view", str(ckpt), "--png", out, *extra]) == 2
        assert message.replace("\\", "") in capsys.readouterr().err.replace("\\", "") or \
            pytest.fail(f"{extra}: wrong message")


def test_figure_option_and_classification_checkpoints(seg_runs, tiny_run, tmp_path, monkeypatch, capsys):
    from pointabstract.cli import main
    from pointabstract.viz.segmentation import figures as segmentation_figures

    calls = []
    monkeypatch.setattr(segmentation_figures, "segmentation_figure",
                        lambda session, out, **kw: calls.append((len(session), out, kw)) or out)
    assert main(["view", str(seg_runs["sequoia_seg"]), "--figure", str(tmp_path / "f.png"), "--index", "14",
                 "--level", "2"]) == 0
    assert calls == [(16, tmp_path / "f.png", {"indices": [14, 15], "levels": [2]})]
    assert main(["view", str(tiny_run[0]), "--png", str(tmp_path / "c.png"), "--level", "1"]) == 2
    assert "--level applies to part_segmentation checkpoints; " in capsys.readouterr().err


def test_cluster_palette():
    from pointabstract.viz.segmentation.scenes import cluster_palette

    colors = cluster_palette(60)
    assert colors.shape == (60, 3) and len({tuple(c) for c in colors[:54]}) == 54
    np.testing.assert_allclose(colors[54:], colors[:6])  # then the cycle repeats
    parts = {tuple(np.round(c, 6)) for c in part_palette()}
    assert all(tuple(np.round(c, 6)) not in parts for c in colors[:12])  # the first clusters look unlike parts
    assert (colors.max(1) > 0.25).all()  # no near-black: black means "wrong"
    with pytest.raises(ValueError, match="count must be a positive int"):
        cluster_palette(0)


def test_section_is_empty_for_other_tasks():
    from pointabstract.viz.segmentation.figures import default_levels, segmentation_section

    run = SimpleNamespace(config=SimpleNamespace(task="classification"))
    assert segmentation_section(run, "unused") == ("", {})
    assert default_levels(4) == (2, 3) and default_levels(2) == (1,) and default_levels(1) == (1,)


def test_eval_report_and_view_png_headless(seg_runs, tmp_path):
    """One subprocess without a display: eval (report with the figure) and view --png."""
    from PIL import Image

    from pointabstract.viz.core.render import png_backend

    root = Path(__file__).resolve().parents[3]
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env["PYTHONPATH"] = os.pathsep.join([str(root), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    ckpt, report = seg_runs["sequoia_seg"], tmp_path / "report"
    script = ("import sys; from pointabstract.cli import main; "
              f"codes = [main(['eval', {str(ckpt)!r}, '--out', {str(report)!r}]), "
              f"main(['view', {str(ckpt)!r}, '--png', {str(tmp_path / 'view.png')!r}, '--width', '900', "
              "'--height', '400'])]; sys.exit(max(codes))")
    proc = subprocess.run([sys.executable, "-c", script], cwd=root, env=env, capture_output=True, text=True,
                          timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = (report / "report.md").read_text()
    assert "![predicted vs true parts](segmentation.png)" in text and "![per-category IoU](part_iou.png)" in text
    parts = np.round(part_palette() * 255).astype(int)  # (50, 3)
    for png in (report / "segmentation.png", tmp_path / "view.png"):
        img = np.asarray(Image.open(png))[..., :3].astype(int)
        assert png_backend(png) in ("offscreen", "legacy", "software")
        coloured = (np.abs(img[:, :, None, :] - parts).max(-1) <= 2).any(-1)  # pixels of a part colour
        assert coloured.sum() > 200, png
    view = np.asarray(Image.open(tmp_path / "view.png"))
    assert view.shape[0] <= 400 and view.shape[1] <= 900


def test_layout_option_picks_the_panels(seg_runs, tmp_path, capsys):
    from PIL import Image

    from pointabstract.cli import main

    widths = {}
    for layout in ("all", "parts"):
        out = tmp_path / f"{layout}.png"
        assert main(["view", str(seg_runs["sequoia_seg"]), "--png", str(out), "--layout", layout]) == 0
        assert f"| layout {layout}" in capsys.readouterr().out
        with Image.open(out) as image:
            widths[layout] = image.size[0]
    assert widths["parts"] < widths["all"]  # two panels (true | predicted) + the legend, not three
