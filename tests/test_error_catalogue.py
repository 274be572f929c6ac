"""The error catalogue: bad inputs a user can give, and the error each one gets.

This table is documentation as much as a test: every row is a realistic mistake (wrong shape,
wrong type, out-of-range value, missing or damaged file, bad config key, bad command line) and
the exact error type and message it must produce. A message names the argument (or file, or
config key) and shows what arrived. Every new public function adds its rows here; a row whose
message changes on purpose is updated in the same commit.

Sections: ops, models, transforms and loaders, files and checkpoints, configs, command line
(the CLI rows check the single ``error:`` line and exit code 2, never a traceback).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import torch

from pointabstract import data, ops
from pointabstract.bench.seeds import write_results
from pointabstract.cli import main
from pointabstract.data import LayoutNotFoundError
from pointabstract.engine import atomic_save, load_checkpoint, load_config
from pointabstract.engine.distributed import check_device
from pointabstract.engine.run_dir import claim_run_folder
from pointabstract.interop import pyg
from pointabstract.models import build_model
from pointabstract.nn import ContextPool

P = torch.rand(2, 64, 3, generator=torch.Generator().manual_seed(0))


def _reconstruction(overrides):
    from pointabstract.engine.tasks import build_task

    return build_task(load_config(None, ["model=capsule_ae_demo_dr", *overrides]))


def _task(overrides):
    from pointabstract.engine.tasks import build_task

    cfg = load_config(None, overrides)
    return build_task(cfg)


def _metrics():
    from pointabstract.engine import metrics

    return metrics


def _train_on_broken_files(tmp_path):
    from pointabstract.engine import train
    from tests.fixtures import resampled_layout

    root = resampled_layout(tmp_path / "data")
    return train(load_config(None, [f"data.root={root}", "data.num_points=32", "data.workers=2",
                                    f"log.out_dir={tmp_path / 'run'}"]))


def _batches_of_one(overrides, size):
    from pointabstract.engine.tasks import build_task
    from pointabstract.engine.tasks.preflight import check_batch_statistics

    cfg = load_config(None, ["model=capsule_ae_demo_dr", *overrides])
    return check_batch_statistics(cfg, build_task(cfg), size)


def _write(path, text):
    path.write_text(text)
    return path


class _RunsCode:
    def __reduce__(self):
        return (print, ("this must never run",))


def _checkpoint(path, **extra):
    atomic_save({"model": {}, "config": {"model": "demo_model", "optim.epochs": 3}, "epoch": 2,
                 "model_name": "demo_model", **extra}, path)
    return path


def _run_folder(t):
    _checkpoint(t / "run" / "last.pt")
    return t / "run"


def _users_named_like_ours(t):
    """A user's classification set with the file names and the 16 class names of data synth's."""
    from pointabstract.data.synthetic import CLASS_NAMES
    from tests.fixtures import write_modelnet_hdf5

    rng = np.random.default_rng(0)
    splits = {s: (rng.random((16, 32, 3)), np.arange(16)) for s in ("train", "test")}
    return write_modelnet_hdf5(t / "mine", list(CLASS_NAMES), splits).parent


def _folder_with_split(t, *, gone=True):
    """A folder of shapes whose run recorded its split in ``t/split.json``, then (``gone``) lost
    one of the recorded files."""
    import json

    from tests.fixtures import write_shapes

    root = write_shapes(t / "mine", per_class=2)
    made = data.ShapeFolder(root, "train", num_points=8, progress=False)
    (t / "split.json").write_text(json.dumps(made.split_record))
    if gone:
        Path(made.sources[0]).unlink()
    return root


def _part_batch(n_part=64, category=(0, 0), part=0):
    """A part-segmentation training step on a tiny model, with a batch of 2 shapes of 64 points."""
    from pointabstract.engine.tasks import build_task, part_segmentation

    cfg = load_config(None, ["model=sequoia_seg_demo"])
    batch = {"pos": torch.rand(2, 64, 3), "category": torch.tensor(category),
             "part": torch.full((2, n_part), part, dtype=torch.int64)}
    task = build_task(cfg)
    assert isinstance(task, part_segmentation.PartSegmentationTask)
    return task.step(build_model("sequoia_seg_demo", tiny=True), batch, "cpu")


def _part_layout_missing_shape(tmp_path):
    from tests.fixtures import write_normal

    folder = write_normal(tmp_path)
    next(folder.glob("*/m0.txt")).unlink()
    return data.ShapeNetPart(tmp_path, "train")


def _tiny_checkpoint(t, model="centroid_transformer", **flat):
    """An untrained checkpoint of ``model`` at its registry tiny size, written to ``t/p.pt``."""
    from pointabstract.engine import to_flat
    from pointabstract.engine.tasks import build_task
    from pointabstract.models import MODELS
    from pointabstract.predict.loading import _adopt_names

    cfg = load_config(None, {"model": model, **{f"model.{k}": v for k, v in MODELS[model].tiny.items()}, **flat})
    task = build_task(cfg)
    state = {"class_names": ["a", "b", "c"]} if cfg.task == "classification" else {}
    _adopt_names(task, cfg, state, "tiny")
    net = build_model(cfg.model, **{**cfg.model_args, **task.model_args()})
    atomic_save({"model": net.state_dict(), "config": to_flat(cfg), "epoch": 1, "task_state": state}, t / "p.pt")
    return t / "p.pt"


def _predictor(t, model="centroid_transformer", **flat):
    """The predictor of an untrained tiny checkpoint of ``model`` (registry tiny size) written under ``t``."""
    from pointabstract.predict import load

    return load(_tiny_checkpoint(t, model, **flat))


def _empty_h5(t):
    import h5py

    from pointabstract.data.datasets.checksums import read_h5

    with h5py.File(t / "ply_data_train1.h5", "w") as handle:
        handle["data"], handle["label"] = np.zeros((0, 64, 3), np.float32), np.zeros((0, 1), np.uint8)
    return read_h5(t / "ply_data_train1.h5", required={"data": (None, None, 3), "label": (None, None)})


def _step_memory(points, available):
    from pointabstract.engine.tasks import build_task
    from pointabstract.engine.tasks.preflight import check_step_memory

    cfg = load_config(None, ["model=capsule_ae_demo_dr", f"data.num_points={points}", "data.batch_size=8"])
    return check_step_memory(cfg, build_task(cfg), available=available)


def _evaluate(path, **kwargs):
    from pointabstract.engine import evaluate_checkpoint

    return evaluate_checkpoint(path, **kwargs)


C48 = np.random.default_rng(0).normal(size=(48, 3)).astype(np.float32)


def _shape_folder(t, *files, **kwargs):
    """A ShapeFolder over ``t/data`` holding ``files`` (relative path -> text)."""
    from pointabstract.data.datasets.folder import ShapeFolder

    for name, text in files:
        (t / "data" / name).parent.mkdir(parents=True, exist_ok=True)
        (t / "data" / name).write_text(text)
    return ShapeFolder(t / "data", **kwargs)


def _cache_inside_the_data(t):
    import os
    from unittest import mock

    from pointabstract.data.datasets.folder_cache import cache_folder

    with mock.patch.dict(os.environ, {"POINTABSTRACT_CACHE": str(t / "cache")}):
        return cache_folder(t)


def _modelnet_tree_with(t, name):
    (t / "ModelNet40" / name / "train").mkdir(parents=True)
    (t / "ModelNet40" / name / "train" / "w.off").write_text("OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n")
    return data.ModelNet40(t, progress=False, cache_dir=t / "cache")


TRI = "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n"


X10 = torch.rand(10, 3, generator=torch.Generator().manual_seed(1))
UNSORTED = torch.tensor([0, 0, 1, 1, 0, 1, 1, 1, 1, 1])


# (id, call(tmp_path), error type, message regex)
ROWS = [
    # --- predict (pointabstract.load(...).predict) -----------------------------------------------
    ("predict: a cloud of 2 columns", lambda t: _predictor(t).predict(C48[:, :2]), ValueError,
     r"cloud 0 must have shape \(N, 3\) or \(N, 6\) \(x y z \[nx ny nz\]\), or be a batch \(B, N, 3\|6\), "
     r"got \(48, 2\)"),
    ("predict: NaN coordinates", lambda t: _predictor(t).predict(np.where(np.arange(48)[:, None] == 7, np.nan, C48)),
     ValueError, r"cloud 0 holds NaN or Inf values \(first at point 7\)"),
    ("predict: fewer points than the model needs", lambda t: _predictor(t).predict(C48[:3]), ValueError,
     r"cloud 0: has 3 points, fewer than the 256 this model needs \(a quarter of its 1024 input points\)"),
    ("predict: a dict instead of a cloud", lambda t: _predictor(t).predict({"pos": C48}), TypeError,
     r"x must be a path, an \(N, 3\|6\) or \(B, N, 3\|6\) array \(NumPy or torch\) or a list of those, got dict"),
    ("predict: a file that does not exist", lambda t: _predictor(t).predict(t / "chair.ply"), ValueError,
     r"chair.ply: file not found"),
    ("predict: top_k on an autoencoder", lambda t: _predictor(t, "capsule_ae_demo_ca").predict(C48, top_k=3),
     ValueError, r"top_k applies to classification checkpoints; .*p.pt is a 'reconstruction' model"),
    ("eval: votes on a reconstruction checkpoint",
     lambda t: _evaluate(_tiny_checkpoint(t, "capsule_ae_demo_ca"), votes=3, out_dir=t / "eval"), ValueError,
     r"votes does not apply to .*p.pt, a 'reconstruction' checkpoint \(eval options of the 'reconstruction' task: "
     r"none\)"),
    ("eval: the neighbourhood figure of a part-segmentation checkpoint",
     lambda t: _evaluate(_tiny_checkpoint(t, "sequoia_seg_demo", **{"data.dataset": "shapenet_part"}), sections={"neighbourhoods": print},
                         asked=["neighbourhoods"], out_dir=t / "eval"), ValueError,
     r"the neighbourhoods figure does not apply to .*p.pt, a 'part_segmentation' checkpoint \(figures of the "
     r"'part_segmentation' task's report: segmentation, viewer\)"),
    ("predict: zero votes", lambda t: _predictor(t).predict(C48, votes=0), ValueError,
     r"votes must be a positive int, got 0"),
    ("predict: normalize='none' on an autoencoder",
     lambda t: _predictor(t, "capsule_ae_demo_ca").predict(C48, normalize="none"), ValueError,
     r"normalize='none' does not apply to reconstruction: its training normalises every cloud"),
    ("predict: an unknown normalisation", lambda t: _predictor(t).predict(C48, normalize="cube"), ValueError,
     r"normalize must be one of \['unit_sphere', 'none'\], got 'cube'"),
    ("predict: a model trained with normals, a cloud without",
     lambda t: _predictor(t, **{"data.use_normals": True}).predict(np.tile(C48, (6, 1))), ValueError,
     r"cloud 0: the model was trained with normals \(data.use_normals\) and this cloud has none"),
    ("predict: part segmenter without a category", lambda t: _predictor(t, "sequoia_seg", **{"data.num_points": 48}).predict(C48), ValueError,
     r"cloud 0: a part-segmentation model needs the shape's category: give category= \(--category\) one of "
     r"\['Airplane'"),
    ("predict: an unknown category", lambda t: _predictor(t, "sequoia_seg", **{"data.num_points": 48}).predict(C48, category="Sofa"),
     ValueError, r"unknown category 'Sofa'; this model knows \['Airplane', 'Bag'"),
    ("predict: one category for two of three inputs",
     lambda t: _predictor(t, "sequoia_seg", **{"data.num_points": 48}).predict([C48] * 3, category=["Cap", "Mug"]), ValueError,
     r"category holds 2 values for 3 inputs: give one category for all, or one per input"),
    ("predict: an unknown up axis", lambda t: _predictor(t).predict(C48, up="x"), ValueError,
     r"up must be one of \['y', 'z'\] \(the input's up axis\), got 'x'"),
    ("predict: a checkpoint without class names",
     lambda t: __import__("pointabstract.predict.loading", fromlist=["x"]).class_names(
         {}, load_config(None, {"data.dataset": "shapenet_part"}), "old.pt"), ValueError,
     r"old.pt stores no class names \(no task_state\['class_names'\]\) and its dataset 'shapenet_part' has no "
     r"built-in class list"),
    # --- ops ---------------------------------------------------------------------------------
    ("knn: unbatched query", lambda t: ops.knn(torch.rand(64, 3), P, 4), ValueError,
     r"query must have shape \(B, N, C\), got \(64, 3\)"),
    ("knn: k = 0", lambda t: ops.knn(P, P, 0), ValueError, r"k must be a positive int, got 0"),
    ("knn: k > N", lambda t: ops.knn(P, P, 65), ValueError, r"k must be at most N = 64, got 65"),
    ("knn: integer points", lambda t: ops.knn(P.long(), P.long(), 4), TypeError,
     r"query must be a floating-point tensor, got dtype torch.int64"),
    ("knn: NaN points", lambda t: ops.knn(P * float("nan"), P, 4), ValueError,
     r"query holds NaN or Inf values \(first at index \(0, 0, 0\)\)"),
    ("knn: batch sizes differ", lambda t: ops.knn(P, torch.rand(3, 64, 3), 4), ValueError,
     r"query and ref must have the same batch size B, got 2 and 3"),
    ("knn: a list, not a tensor", lambda t: ops.knn([[0.0, 0.0, 0.0]], P, 4), TypeError,
     r"query must be a torch.Tensor, got list"),
    ("knn: unknown backend", lambda t: ops.knn(P, P, 4, backend="magic"), ValueError,
     r"backend must be 'auto' or one of \[.*\] for knn, got 'magic'"),
    ("knn: lengths beyond N", lambda t: ops.knn(P, P, 4, query_lengths=torch.tensor([70, 3])), ValueError,
     r"query_lengths must lie in \[1, 64\] \(N = 64\), got values in \[3, 70\]"),
    ("fps: m = 0", lambda t: ops.farthest_point_sample(P, 0), ValueError, r"m must be a positive int, got 0"),
    ("fps: m > N", lambda t: ops.farthest_point_sample(P, 65), ValueError, r"m must be at most N = 64, got 65"),
    ("fps: float m", lambda t: ops.farthest_point_sample(P, 3.5), TypeError, r"m must be an int, got float"),
    ("fps: unknown start", lambda t: ops.farthest_point_sample(P, 4, start="middle"), ValueError,
     r"start must be one of \['first', 'random'\], got 'middle'"),
    ("ball_query: negative radius", lambda t: ops.ball_query(P, P, -1.0, 4), ValueError,
     r"radius must be a positive finite number, got -1.0"),
    ("ball_query: NaN radius", lambda t: ops.ball_query(P, P, float("nan"), 4), ValueError,
     r"radius must be a positive finite number, got nan"),
    ("ball_query: radius as a string", lambda t: ops.ball_query(P, P, "1", 4), TypeError,
     r"radius must be a real number, got str"),
    ("build_tree: fractional branching", lambda t: ops.build_tree(P, branching=2.0), TypeError,
     r"branching"),
    ("chamfer: 4 channels", lambda t: ops.chamfer_distance(P, torch.rand(2, 64, 4)), ValueError,
     r"y must have shape \(B, N, 3\), got \(2, 64, 4\)"),
    ("chamfer: empty cloud", lambda t: ops.chamfer_distance(torch.rand(2, 0, 3), P), ValueError,
     r"x must hold at least one cloud of at least one point, got \(2, 0, 3\)"),
    ("gather_points: index out of range", lambda t: ops.gather_points(P, torch.tensor([[0, 99]] * 2)),
     ValueError, r"idx values must lie in \[-1, 63\], got values in \[0, 99\]"),
    ("gather_points: float index", lambda t: ops.gather_points(P, torch.zeros(2, 3)), TypeError,
     r"idx must have dtype int64, got torch.float32"),
    ("knn_graph: k = 0", lambda t: ops.knn_graph(torch.rand(10, 3), 0), ValueError,
     r"k must be a positive int, got 0"),
    ("random_sample: m > N", lambda t: ops.random_sample(P, 100), ValueError, r"m must be at most N = 64, got 100"),
    ("kmeans_sample: negative iters", lambda t: ops.kmeans_sample(P, 4, iters=-1), ValueError,
     r"iters must be an int >= 0, got -1"),
    ("knn_interpolate: k = 0",
     lambda t: ops.knn_interpolate(torch.rand(2, 8, 5), torch.rand(2, 8, 3), P, k=0), ValueError,
     r"k must be a positive int, got 0"),
    # --- models ------------------------------------------------------------------------------
    ("build_model: unknown name", lambda t: build_model("pointnet"), ValueError,
     r"unknown model 'pointnet'; choose from \[.*'centroid_transformer'"),
    ("build_model: unknown config field", lambda t: build_model("centroid_transformer", depth=3), ValueError,
     r"unknown config key\(s\) \['depth'\] for model 'centroid_transformer'; valid keys: \["),
    ("build_model: widths of the wrong length", lambda t: build_model("centroid_transformer", widths=(8,)),
     ValueError, r"widths must list 4 block widths and ratios 2 ratios, got \(8,\)"),
    ("build_model: unknown ContextPool locality",
     lambda t: build_model("sequoia_seg", tiny=True, context_pool=True, context_pool_locality="box"), ValueError,
     r"context_pool options \(model.context_pool_<name>\): locality must be one of \['gaussian', 'none', "
     r"'fixed'\], got 'box'"),
    ("ContextPool: features of the wrong width",
     lambda t: ContextPool(8, k=4)(torch.rand(2, 64, 5), P), ValueError,
     r"x must have shape \(B, N, C\) = \(2, 64, 8\) matching pos \(2, 64, 3\), got \(2, 64, 5\)"),
    ("build_model: zero heads", lambda t: build_model("centroid_transformer", heads=0), ValueError,
     r"heads must be a positive int, got 0"),
    ("centroid_transformer: unbatched pos",
     lambda t: build_model("centroid_transformer", tiny=True)(torch.rand(64, 3)), ValueError,
     r"pos must have shape \(B, N, 3\), got \(64, 3\)"),
    ("centroid_transformer: NaN pos",
     lambda t: build_model("centroid_transformer", tiny=True)(torch.full((1, 16, 3), float("nan"))),
     ValueError, r"pos holds NaN or Inf values"),
    ("capsule_ae_demo_dr: 2-D points",
     lambda t: build_model("capsule_ae_demo_dr", tiny=True)(torch.rand(1, 64, 2)), ValueError,
     r"pos must have shape \(B, N, 3\), got \(1, 64, 2\)"),
    ("sequoia_seg_demo: category out of range",
     lambda t: build_model("sequoia_seg_demo", tiny=True)(torch.rand(1, 64, 3), torch.tensor([16])),
     ValueError, r"category values must lie in \[0, 15\], got values in \[16, 16\]"),
    # --- transforms and loaders --------------------------------------------------------------
    ("ModelNet40: no dataset at root", lambda t: data.ModelNet40(t / "nothing", "train"), LayoutNotFoundError,
     r"no ModelNet layout found under .*nothing; looked for:"),
    ("ModelNet40: a folder of class folders of own shapes",
     lambda t: data.ModelNet40(_write((t / "cup").mkdir() or t / "cup" / "a.obj", TRI).parents[1]), LayoutNotFoundError,
     r"holds 1 class folder\(s\) of shape files \(cup\): to train on your own shapes, use data.dataset=folder"),
    ("ModelNet40: a class ModelNet40 does not have", lambda t: _modelnet_tree_with(t, "widget"), ValueError,
     r"w.off: unknown class folder 'widget' \(the ModelNet layout has its fixed classes\); to train on your own "
     r"classes use data.dataset=folder data.root=.*ModelNet40"),
    ("folder: no class folders", lambda t: _shape_folder(t, ("a.obj", TRI)), LayoutNotFoundError,
     r"data: no class folders: data.dataset=folder reads ROOT/<class>/<shape files> \(found in .*data: a.obj\)"),
    ("folder: no such folder", lambda t: _shape_folder(t / "none"), LayoutNotFoundError,
     r"none/data: no such folder"),
    ("folder: a class folder without shape files", lambda t: _shape_folder(t, ("cup/a.obj", TRI), ("mug/notes.md", "")),
     ValueError, r"mug: class folder without any shape file \(.ply .off .obj .stl .pcd .xyz .txt .csv .xyzn .xyzrgb .pts .npy .npz\); "
                 r"it holds: notes.md"),
    ("folder: train/ and test/ in some class folders only",
     lambda t: _shape_folder(t, ("cup/train/a.obj", TRI), ("mug/a.obj", TRI)), ValueError,
     r"class folder 'mug' has no train/ or test/ folder while others have"),
    ("folder: a split list naming a missing file",
     lambda t: _shape_folder(t, ("cup/a.obj", TRI), ("train.txt", "cup/a.obj\n"), ("test.txt", "cup/b.obj\n")),
     ValueError, r"test.txt: entry 1 'cup/b.obj': no such shape file under .*data \(paths are relative to the data folder"),
    ("folder: a file in both split lists",
     lambda t: _shape_folder(t, ("cup/a.obj", TRI), ("train.txt", "cup/a.obj\n"), ("test.txt", "cup/a.obj\n")),
     ValueError, r"test.txt: entry 1 'cup/a.obj' is also listed in train.txt"),
    ("folder: a cache folder inside the data", _cache_inside_the_data, ValueError,
     r"the cache folder .*cache/folder/.* lies inside the data folder .*; set POINTABSTRACT_CACHE to a folder outside it"),
    ("folder: normals asked of a cloud without", lambda t: _shape_folder(
        t, ("cup/a.xyz", "0 0 0\n1 0 0\n"), ("cup/b.xyz", "0 0 0\n0 1 0\n"), num_points=2, use_normals=True),
     ValueError, r"a.xyz: data.use_normals=true but this point cloud has no normals"),
    ("folder: an unreadable shape file",
     lambda t: _shape_folder(t, ("cup/train/b.obj", "v 0 0\n"), ("cup/test/a.obj", TRI), num_points=2),
     ValueError, r"b.obj:1: bad vertex line '0 0': expected 3 numbers"),
    ("config: data.test_fraction of 1", lambda t: load_config(None, ["data.test_fraction=1"]), ValueError,
     r"data.test_fraction must be a finite number in \(0.0, 1.0\), got 1.0"),
    ("ModelNet40: unknown split", lambda t: data.ModelNet40(t, "val"), ValueError,
     r"split must be one of \['train', 'test'\], got 'val'"),
    ("ModelNet40: unknown sampling", lambda t: data.ModelNet40(t, "train", sampling="best"), ValueError,
     r"sampling must be one of \['first', 'random', 'fps'\], got 'best'"),
    ("ModelNet40: num_points = 0", lambda t: data.ModelNet40(t, "train", num_points=0), ValueError,
     r"num_points must be a positive int or None, got 0"),
    ("ShapeNetPart: no dataset at root", lambda t: data.ShapeNetPart(t / "nothing", "train"),
     LayoutNotFoundError, r"no ShapeNetPart layout found under .*nothing"),
    ("RandomScale: high < low", lambda t: data.RandomScale(2, 1), ValueError,
     r"high must be a finite number in \[2.0, inf\), got 1.0"),
    ("RandomScale: negative low", lambda t: data.RandomScale(-1, 1), ValueError,
     r"low must be a positive finite number, got -1.0"),
    ("RandomTranslate: negative shift", lambda t: data.RandomTranslate(-0.1), ValueError,
     r"max_shift must be a finite number in \[0.0, inf\), got -0.1"),
    ("RandomRotate: unknown axis", lambda t: data.RandomRotate("w"), ValueError,
     r"axis must be one of \['x', 'y', 'z'\], got 'w'"),
    ("Jitter: negative sigma", lambda t: data.Jitter(sigma=-1), ValueError,
     r"sigma must be a finite number in \[0.0, inf\), got -1.0"),
    ("RandomDropout: ratio >= 1", lambda t: data.RandomDropout(1.5), ValueError,
     r"max_ratio must be a finite number in \[0.0, 1.0\), got 1.5"),
    ("Compose: not callables", lambda t: data.Compose([1, 2]), TypeError, r"transforms\[0\] is not callable: 1"),
    ("Resample: n = 0", lambda t: data.Resample(0), ValueError, r"n must be a positive int, got 0"),
    ("collate: no samples", lambda t: data.collate([]), ValueError,
     r"samples is empty: cannot collate a batch of 0 samples"),
    ("collate: sample without pos", lambda t: data.collate([{"label": 1}]), ValueError,
     r"sample 0 has no 'pos' \(keys: \['label'\]\)"),
    ("sample_surface: no faces",
     lambda t: data.sample_surface(np.zeros((3, 3)), np.zeros((0, 3), dtype=np.int64), 10,
                                   rng=np.random.default_rng(0)),
     ValueError, r"faces must have shape \(F, 3\) with F > 0, got \(0, 3\)"),
    ("generate_synthetic: no shapes per class",
     lambda t: data.generate_synthetic(t / "s", train_per_class=0, progress=False), ValueError,
     r"train_per_class must be a positive int, got 0"),
    # --- files and checkpoints ---------------------------------------------------------------
    ("read_off: missing file", lambda t: data.read_off(t / "none.off"), ValueError,
     r"none.off: cannot read OFF file \(\[Errno 2\] No such file or directory"),
    ("read_off: empty file", lambda t: data.read_off(_write(t / "e.off", "")), ValueError,
     r"e.off: empty file \(no OFF header\)"),
    ("read_off: wrong header", lambda t: data.read_off(_write(t / "b.off", "PLY\n1 0 0\n0 0 0\n")), ValueError,
     r"b.off:1: expected the header 'OFF', got 'PLY'"),
    ("read_off: truncated", lambda t: data.read_off(_write(t / "s.off", "OFF\n3 1 0\n0 0 0\n1 1 1\n")),
     ValueError, r"s.off:4: truncated file: the header announces 3 vertices and 1 faces, found 2 data lines"),
    ("read_shape: unknown extension", lambda t: data.read_shape(_write(t / "scan.dxf", "0\n")), data.ShapeFileError,
     r"scan.dxf: unknown extension '.dxf'; supported: .ply .off .obj .stl .pcd .xyz .txt .csv .xyzn .xyzrgb .pts .npy .npz"),
    ("read_shape: missing file", lambda t: data.read_shape(t / "chair.ply"), data.ShapeFileError,
     r"chair.ply: file not found"),
    ("read_shape: empty file", lambda t: data.read_shape(_write(t / "e.xyz", "")), data.ShapeFileError,
     r"e.xyz: empty: no data line"),
    ("read_shape: unreadable binary", lambda t: data.read_shape(_write(t / "b.pcd", "\x00\x01garbage")),
     data.ShapeFileError, r"b.pcd: not a PCD file \(no 'DATA ascii\|binary' header line\)"),
    ("read_shape: non-finite coordinates", lambda t: data.read_shape(_write(t / "n.xyz", "0 0 0\n1 nan 2\n")),
     data.ShapeFileError, r"n.xyz: non-finite coordinates \(NaN or Inf\) at point 1 \(1 of 2 points\)"),
    ("read_shape: 2-D points", lambda t: data.read_shape(_write(t / "xy.csv", "0,0\n1,1\n")), data.ShapeFileError,
     r"xy.csv:1: 2 columns; expected 3 \(x y z\) or 6 \(x y z nx ny nz\), or a header line naming"),
    ("read_shape: array of the wrong shape",
     lambda t: data.read_shape(np.save(t / "a.npy", np.zeros((5, 2))) or t / "a.npy"), data.ShapeFileError,
     r"a.npy: the array must be a numeric \(N, 3\) or \(N, 6\) array \(x y z \[nx ny nz\]\), got shape \(5, 2\)"),
    ("read_shape: face of a missing vertex",
     lambda t: data.read_shape(_write(t / "m.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 9\n")), data.ShapeFileError,
     r"m.obj:4: face corner '9' refers to a missing vertex \(the file has 3 vertices\)"),
    ("find_shape_files: a folder without shapes",
     lambda t: data.find_shape_files([_write(t / "notes.md", "") and t]), data.ShapeFileError,
     r"no shape file \(.ply .off .obj .stl .pcd .xyz .txt .csv .xyzn .xyzrgb .pts .npy .npz\) in this folder or below \(it holds: notes.md\)"),
    ("find_shape_files: a path that does not exist", lambda t: data.find_shape_files([t / "scans"]),
     data.ShapeFileError, r"scans: no such file or folder"),
    ("find_shape_files: a pattern matching no shape file", lambda t: data.find_shape_files([str(t / "*.ply")]),
     data.ShapeFileError, r"\*.ply: no shape file \(.ply .off .obj .stl .pcd .xyz .txt .csv .xyzn .xyzrgb .pts .npy .npz\) matches"),
    ("sample_shape: a mesh of zero area",
     lambda t: data.sample_shape(data.read_shape(_write(t / "flat.obj", "v 0 0 0\nv 1 0 0\nv 2 0 0\nf 1 2 3\n")), 8,
                                 rng=np.random.default_rng(0)),
     data.ShapeFileError, r"flat.obj: mesh has no triangle of positive finite area"),
    ("verify_md5: malformed digest", lambda t: data.verify_md5(t / "a.zip", "abc"), ValueError,
     r"expected must be a 32-digit md5 hex digest, got 'abc'"),
    ("verify_md5: altered download", lambda t: data.verify_md5(_write(t / "a.zip", "x"), "0" * 32), ValueError,
     r"a.zip: md5 9dd4e461268c8034f5c8564e155c67a6 does not match the expected 0{32} \(incomplete or altered"),
    ("checkpoint: missing", lambda t: load_checkpoint(t / "none.pt"), FileNotFoundError,
     r"checkpoint .*none.pt does not exist"),
    ("checkpoint: not a torch file", lambda t: load_checkpoint(_write(t / "g.pt", "garbage")), ValueError,
     r"g.pt is not a readable checkpoint \(not a torch zip archive: it starts with b'garb'\)"),
    ("checkpoint: a plain state_dict",
     lambda t: load_checkpoint(torch.save(torch.nn.Linear(2, 2).state_dict(), t / "sd.pt") or t / "sd.pt"),
     ValueError, r"sd.pt is not a pointabstract checkpoint \(a plain state_dict, missing \['config', 'epoch'"),
    ("checkpoint: another project's dict",
     lambda t: load_checkpoint(torch.save({"model": {}, "config": {"lr": 1}, "epoch": 3}, t / "o.pt") or t / "o.pt"),
     ValueError, r"o.pt is not a pointabstract checkpoint \(a dict, its config names no model\)"),
    ("checkpoint: asks to run code", lambda t: load_checkpoint(_checkpoint(t / "evil.pt", metrics=_RunsCode())),
     ValueError, r"evil.pt refused: it asks to load 'builtins.print', which a pointabstract checkpoint never "
                 r"holds and which could run code when loaded; nothing from it was run"),
    ("train: a run folder that holds a run", lambda t: claim_run_folder(_run_folder(t)), FileExistsError,
     r"log.out_dir .*run already holds a run \(last.pt \(epoch 2 of 3, model 'demo_model'\)\); continue it "
     r"with --resume, train into another log.out_dir, or pass --overwrite to replace it"),
    # --- configs -----------------------------------------------------------------------------
    ("config: unknown key", lambda t: load_config(None, ["optim.lr_rate=1"]), ValueError,
     r"unknown config key\(s\) \['optim.lr_rate'\]; valid keys: \["),
    ("config: wrong type", lambda t: load_config(None, ["optim.epochs=ten"]), ValueError,
     r"optim.epochs must be an int, got 'ten'"),
    ("config: unknown preset", lambda t: load_config("nosuchpreset"), FileNotFoundError,
     r"no config file 'nosuchpreset' and no preset of that name; presets: \["),
    ("config: task the model does not serve", lambda t: load_config(None, ["task=segmentation"]), ValueError,
     r"model 'centroid_transformer' serves the 'classification' task, the config asks for task 'segmentation'"),
    ("config: unknown sampling", lambda t: load_config(None, ["data.sampling=best"]), ValueError,
     r"data.sampling must be one of \['first', 'random', 'fps'\], got 'best'"),
    ("config: zero epochs", lambda t: load_config(None, ["optim.epochs=0"]), ValueError,
     r"optim.epochs must be a positive int, got 0"),
    ("config: schedule every batch", lambda t: load_config(None, ["optim.schedule_every=batch"]), ValueError,
     r"optim.schedule_every must be one of \['epoch', 'step'\], got 'batch'"),
    ("config: infinite lr", lambda t: load_config(None, ["optim.lr=inf"]), ValueError,
     r"optim.lr must be a positive finite number, got inf"),
    ("config: negative lr", lambda t: load_config(None, ["optim.lr=-1e-3"]), ValueError,
     r"optim.lr must be a positive finite number, got -0.001"),
    ("config: widths not a list", lambda t: load_config(None, ["model.widths=abcd"]), ValueError,
     r"model.widths must be a list like \[.*\], got 'abcd'"),
    ("config: device tpu", lambda t: load_config(None, ["device=tpu"]), ValueError,
     r"device must be auto, cpu, cuda or cuda:N, got 'tpu'"),
    ("config: negative precise-BN batches", lambda t: _reconstruction(["task.bn_batches=-1"]), ValueError,
     r"task.bn_batches must be an int >= 0, got -1"),
    ("config: zero batch", lambda t: load_config(None, ["data.batch_size=0"]), ValueError,
     r"data.batch_size must be a positive int, got 0"),
    ("device: unknown name", lambda t: check_device("gpu0"), ValueError,
     r"device must be cpu, cuda or cuda:N, got 'gpu0'"),
    # --- interop: the torch_cluster / PyG drop-ins ---------------------------------------------
    ("pyg.fps: ptr not sorted", lambda t: pyg.fps(P[0], ptr=[0, 40, 30, 64]), ValueError,
     r"ptr must be sorted in ascending order, got \[0, 40, 30, 64\]"),
    ("pyg.fps: ptr does not end at N", lambda t: pyg.fps(P[0], ptr=torch.tensor([0, 32, 60])), ValueError,
     r"ptr must start at 0 and end at N = 64, got 0 \.\.\. 60"),
    ("pyg.fps: ptr of one entry", lambda t: pyg.fps(P[0], ptr=[64]), ValueError,
     r"ptr must have shape \(B \+ 1,\) with B >= 1, got \(1,\)"),
    ("pyg.fps: batch and ptr disagree", lambda t: pyg.fps(P[0], torch.zeros(64, dtype=torch.int64), ptr=[0, 32, 64]),
     ValueError, r"batch and ptr describe different clouds: sizes \[64\] and \[32, 32\]"),
    ("pyg.fps: a ratio above 1", lambda t: pyg.fps(P[0], ptr=[0, 32, 64], ratio=torch.tensor([0.5, 2.0])),
     ValueError, r"ratio values must lie in \(0, 1\], got 2.0"),
    ("pyg.fps: one ratio too many", lambda t: pyg.fps(P[0], ptr=[0, 32, 64], ratio=torch.tensor([0.5] * 3)),
     ValueError, r"ratio must be a number, a 0-d tensor or one value per cloud \(B = 2\), got shape \(3,\)"),
    ("pyg.radius: ignore_same_index not a bool", lambda t: pyg.radius(P[0], P[0], 0.5, ignore_same_index="no"),
     TypeError, r"ignore_same_index must be a bool, got str"),
    # --- benchmark records --------------------------------------------------------------------
    ("write_results: nothing measured", lambda t: write_results("x", [], "", out_dir=t), ValueError,
     r"bench x measured nothing, so nothing is written \(.*x.md and .*x.json are left as they were\)"),
    ("config: a comment after a typed override", lambda t: load_config(None, ["optim.epochs=3 #three"]),
     ValueError, r"override optim.epochs='3 #three': '#' would start a YAML comment and drop ' #three'"),
    ("config: preset with a YAML syntax error",
     lambda t: load_config(_write(t / "p.yaml", "model: centroid_transformer\noptim.lr: [0.1\nseed: 1\n")),
     ValueError, r"p.yaml:3: not valid YAML \(expected ',' or '\]', but got ':'; while parsing a flow sequence started "
     r"at line 2\)"),
    ("config: preset not UTF-8",
     lambda t: load_config((t / "l.yaml").write_bytes(b"seed: \xff\n") and t / "l.yaml"), ValueError,
     r"l.yaml: not a UTF-8 text file \(byte 0xff at offset 6\)"),
    ("config: empty preset", lambda t: load_config(_write(t / "e.yaml", "# nothing yet\n")), ValueError,
     r"e.yaml is empty: a preset must be a mapping of 'key: value' lines"),
    ("config: a nested key also given flat",
     lambda t: load_config(_write(t / "n.yaml", "data:\n  root: a\ndata.root: b\n")), ValueError,
     r"n.yaml: key 'data.root' is given twice \(as 'data: root' and as 'data.root'\); keep one"),
    ("config: a key twice in one mapping",
     lambda t: load_config(_write(t / "d.yaml", "model: demo\nmodel:\n  k: 8\n")), ValueError,
     r"d.yaml:2: not valid YAML \(key 'model' is given twice in one mapping\)"),
    ("config: task.scale of one value", lambda t: _task(["model=sequoia_seg_demo", "task.scale=[0.5]"]),
     ValueError, r"task.scale must be a list of 2 numbers \[low, high\], got \[0.5\]"),
    ("config: unknown part category", lambda t: _task(["model=sequoia_seg_demo", "task.categories=[Plane]"]),
     ValueError, r"task.categories must name ShapeNetPart categories \(.*\), got unknown \['Plane'\]"),
    ("chamfer: squared as a string", lambda t: ops.chamfer_distance(P, P, squared="False"), TypeError,
     r"squared must be True or False, got str 'False'"),
    ("confusion matrix: label beyond the classes",
     lambda t: _metrics().ConfusionMatrix(3).update(torch.rand(2, 3), torch.tensor([0, 3])), ValueError,
     r"labels values must lie in \[0, 2\], got values in \[0, 3\]"),
    ("confusion matrix: logits of another class count",
     lambda t: _metrics().ConfusionMatrix(3).update(torch.rand(2, 4), torch.tensor([0, 1])), ValueError,
     r"logits must have shape \(B, C\) = \(2, 3\), got \(2, 4\)"),
    ("part IoU: predicted part id out of range",
     lambda t: _metrics().shape_ious(torch.tensor([[6, 50]]), torch.tensor([[6, 7]]), torch.tensor([2])), ValueError,
     r"pred values must lie in \[0, 49\], got values in \[6, 50\]"),
    ("part IoU: prediction and truth of different sizes",
     lambda t: _metrics().shape_ious(torch.tensor([[6, 7, 7]]), torch.tensor([[6, 7]]), torch.tensor([2])), ValueError,
     r"pred must have shape \(B, N\) = \(1, 2\), got \(1, 3\)"),
    ("capsule purity: part id >= num_parts",
     lambda t: _metrics().capsule_purity(P, P, torch.full((2, 64), 4), torch.zeros(64, dtype=torch.int64), num_parts=4),
     ValueError, r"part values must lie in \[0, 3\], got values in \[4, 4\]"),
    ("F-score: zero threshold", lambda t: _metrics().reconstruction_scores(P, P, threshold=0), ValueError,
     r"threshold must be a positive finite number, got 0.0"),
    ("train: a NaN in a training file", lambda t: _train_on_broken_files(t), ValueError,
     r"the training set cannot be read, found before training: .*bathtub_0001.txt: non-finite value \(NaN or "
     r"Inf\) at line 3; 'pointabstract data info .* --check' lists every problem"),
    ("train: BatchNorm batches of one shape", lambda t: _batches_of_one(["data.batch_size=1"], 100), ValueError,
     r"data.batch_size=1 gives the BatchNorm layers of 'capsule_ae_demo_dr' one shape per step"),
    ("train: a last batch of one shape", lambda t: _batches_of_one(["data.batch_size=16"], 33), ValueError,
     r"the last training batch of every epoch would hold 1 shape \(33 training shapes, data.batch_size=16\).* "
     r"choose e.g. data.batch_size=17"),
    ("config: a layer size below one", lambda t: load_config(None, ["model=capsule_ae_demo_dr", "model.encoder_dims=[-1]"]),
     ValueError, r"model.encoder_dims must list layer sizes >= 1 like \[64, 128\], got \[-1\]"),
    ("centroid routing: unknown init", lambda t: __import__("pointabstract.nn.routing", fromlist=["x"])
     .CentroidRouting(16, 4, 4, 8, init="fps"), ValueError,
     r"init must be one of \['linear', 'soft_average'\], got 'fps'"),
    # --- capsule models, part segmentation, ContextPool options, the PyG drop-ins ----
    ("capsule_ae_demo_dr: fewer points than the minimum",
     lambda t: build_model("capsule_ae_demo_dr", tiny=True)(torch.rand(2, 4, 3)), ValueError,
     r"pos must hold at least one cloud of at least 8 points, got \(2, 4, 3\)"),
    ("capsule_ae_demo_em: an Inf point",
     lambda t: build_model("capsule_ae_demo_em", tiny=True)(P.index_put((torch.tensor([1]), torch.tensor([5])),
                                                                        torch.tensor(float("inf")))),
     ValueError, r"pos holds NaN or Inf values \(first at index \(1, 5, 0\)\)"),
    ("capsule_ae_demo_dr: an empty batch",
     lambda t: build_model("capsule_ae_demo_dr", tiny=True)(torch.rand(0, 64, 3)), ValueError,
     r"pos must hold at least one cloud of at least 8 points, got \(0, 64, 3\)"),
    ("capsule_ae_demo_ca: an empty batch in eval mode",
     lambda t: build_model("capsule_ae_demo_ca", tiny=True).eval()(torch.rand(0, 64, 3)), ValueError,
     r"pos must hold at least one cloud of at least 8 points, got \(0, 64, 3\)"),
    ("PrimaryPointCapsules: an empty batch",
     lambda t: __import__("pointabstract.nn.capsules", fromlist=["x"]).PrimaryPointCapsules(8, 4, hidden=(8,))(
         torch.rand(0, 64, 3)), ValueError,
     r"pos must hold at least one cloud of at least one point, got \(0, 64, 3\)"),
    ("PrimaryPointCapsules: a NaN point",
     lambda t: __import__("pointabstract.nn.capsules", fromlist=["x"]).PrimaryPointCapsules(8, 4, hidden=(8,))(
         torch.full((1, 64, 3), float("nan"))), ValueError, r"pos holds NaN or Inf values \(first at index"),
    ("part segmentation: a part id of another category", lambda t: _part_batch(part=10), ValueError,
     r"part label 10 of shape 0 point 0 is not one of Airplane's parts \[0, 1, 2, 3\]"),
    ("part segmentation: a part id beyond the 50 parts", lambda t: _part_batch(part=50), ValueError,
     r"part label 50 of shape 0 point 0 is not one of Airplane's parts \[0, 1, 2, 3\]"),
    ("part segmentation: a category index out of range", lambda t: _part_batch(category=(0, 16)), ValueError,
     r"category must hold int64 ids in \[0, 16\), got \[0, 16\]"),
    ("part segmentation: labels for fewer points than pos", lambda t: _part_batch(n_part=60), ValueError,
     r"part must have shape \(B, N\) of pos = \(2, 64\), got \(2, 60\)"),
    ("ShapeNetPart: a split file naming a missing shape", lambda t: _part_layout_missing_shape(t), ValueError,
     r"shuffled_train_file_list.json: entry 1 'shape_data/03797390/m0': file .*m0.txt not found"),
    ("ContextPool: k = 1", lambda t: ContextPool(8, k=1), ValueError, r"k must be an int >= 2, got 1"),
    ("ContextPool: fractional k", lambda t: ContextPool(8, k=2.5), TypeError, r"k must be an int, got float 2.5"),
    ("ContextPool: unknown weights", lambda t: ContextPool(8, weights="attention"), ValueError,
     r"weights must be one of \['learned', 'uniform', 'nonlocal'\], got 'attention'"),
    ("ContextPool: normalize as a string", lambda t: ContextPool(8, normalize="no"), TypeError,
     r"normalize must be True or False, got str 'no'"),
    ("ContextPool: unnormalised uniform weights", lambda t: ContextPool(8, weights="uniform", normalize=False),
     ValueError, r"normalize=False needs learned or nonlocal weights .*got weights='uniform'"),
    ("ContextPool: a window without the fixed locality", lambda t: ContextPool(8, window=3), ValueError,
     r"window is only used with locality='fixed', got window=3 with locality='gaussian'"),
    ("ContextPool: a window wider than k", lambda t: ContextPool(8, k=4, locality="fixed", window=5), ValueError,
     r"window must be at most k = 4, got 5"),
    ("ContextPool: NaN support scale", lambda t: ContextPool(8, r=float("nan")), ValueError,
     r"r must be a positive finite number, got nan"),
    ("ContextPool: zero hidden channels", lambda t: ContextPool(8, hidden=0), ValueError,
     r"hidden must be a positive int, got 0"),
    ("ContextPool: an empty batch", lambda t: ContextPool(8, k=4)(torch.rand(0, 16, 8), torch.rand(0, 16, 3)),
     ValueError, r"pos must hold at least one cloud of at least one point, got \(0, 16, 3\)"),
    ("build_model: ContextPool k = 1 in the config",
     lambda t: build_model("sequoia_seg", tiny=True, context_pool=True, context_pool_k=1), ValueError,
     r"context_pool options \(model.context_pool_<name>\): k must be an int >= 2, got 1"),
    ("pyg.fps: an empty cloud without channels", lambda t: pyg.fps(torch.rand(0, 0)), ValueError,
     r"x must have shape \(N, C\) with C >= 1, got \(0, 0\)"),
    ("pyg.fps: batch not sorted", lambda t: pyg.fps(X10, UNSORTED), ValueError,
     r"batch must hold non-negative cloud ids sorted in ascending order"),
    ("pyg.knn: empty nodes of no channels", lambda t: pyg.knn(torch.rand(0, 0), X10, 3), ValueError,
     r"x must have shape \(N, C\) with C >= 1, got \(0, 0\)"),
    ("pyg.knn: batch_x not sorted", lambda t: pyg.knn(X10, X10, 3, UNSORTED), ValueError,
     r"batch_x must hold non-negative cloud ids sorted in ascending order"),
    ("pyg.knn: batch_y of another length", lambda t: pyg.knn(X10, X10, 3, None, torch.zeros(9, dtype=torch.int64)),
     ValueError, r"batch_y must have shape \(N,\) = \(10,\), got \(9,\)"),
    ("pyg.knn: k = 0", lambda t: pyg.knn(X10, X10, 0), ValueError, r"k must be a positive int, got 0"),
    ("pyg.knn: x and y of different widths", lambda t: pyg.knn(torch.rand(10, 2), X10, 3), ValueError,
     r"x and y must share C, dtype and device, got x \(10, 2\)"),
    ("pyg.knn: batch_size below the cloud ids",
     lambda t: pyg.knn(X10, X10, 3, torch.tensor([0] * 5 + [1] * 5), batch_size=1), ValueError,
     r"batch_size = 1 but the batch vectors hold cloud id 1"),
    ("pyg.knn_graph: batch of another length", lambda t: pyg.knn_graph(X10, 3, torch.zeros(11, dtype=torch.int64)),
     ValueError, r"batch must have shape \(N,\) = \(10,\), got \(11,\)"),
    ("pyg.knn_graph: k as a float", lambda t: pyg.knn_graph(X10, 3.0), TypeError, r"k must be an int, got float"),
    ("pyg.knn_graph: unknown flow", lambda t: pyg.knn_graph(X10, 3, flow="both"), ValueError,
     r"flow must be one of \['source_to_target', 'target_to_source'\], got 'both'"),
    ("pyg.radius: r = 0", lambda t: pyg.radius(X10, X10, 0), ValueError,
     r"r must be a positive finite number, got 0"),
    ("pyg.radius: NaN r", lambda t: pyg.radius(X10, X10, float("nan")), ValueError,
     r"r must be a positive finite number, got nan"),
    ("pyg.radius: max_num_neighbors = 0", lambda t: pyg.radius(X10, X10, 0.5, max_num_neighbors=0), ValueError,
     r"max_num_neighbors must be a positive int or None, got 0"),
    ("pyg.radius: NaN nodes", lambda t: pyg.radius(X10, X10 * float("nan"), 0.5), ValueError,
     r"y holds NaN or Inf values"),
    ("pyg.radius_graph: negative r", lambda t: pyg.radius_graph(X10, -1.0), ValueError,
     r"r must be a positive finite number, got -1.0"),
    ("pyg.radius_graph: max_num_neighbors = 0", lambda t: pyg.radius_graph(X10, 0.5, max_num_neighbors=0),
     ValueError, r"max_num_neighbors must be a positive int or None, got 0"),
    ("pyg.radius_graph: batch not sorted", lambda t: pyg.radius_graph(X10, 0.5, UNSORTED), ValueError,
     r"batch must hold non-negative cloud ids sorted in ascending order"),
    ("pyg.radius_graph: a float batch vector", lambda t: pyg.radius_graph(X10, 0.5, torch.zeros(10)), TypeError,
     r"batch must be an integer tensor, got torch.float32"),
    ("browser page: an index that does not fit its dtype",
     lambda t: __import__("pointabstract.viz.core.html", fromlist=["x"]).encode_array(np.array([70000]), "u2"),
     ValueError, r"array values in \[70000, 70000\] do not fit dtype u2"),
    ("browser page: read a file that is no viewer page",
     lambda t: (t / "x.html").write_text("<html></html>") and
     __import__("pointabstract.viz.core.html", fromlist=["x"]).read_page_data(t / "x.html"),
     ValueError, r"x.html: no pointabstract viewer data \(no script #pa-data\) in this file"),
    # --- what a command did not write, a full disk, a recorded split (issue 38 items 1, 2, 5, 6) ----
    ("data synth --overwrite: a user's set with our file names and class list",
     lambda t: __import__("pointabstract.data.synthetic.output", fromlist=["x"]).claim_output(
         _users_named_like_ours(t), overwrite=True), FileExistsError,
     r"holds 3 file\(s\) that data synth did not write .*refused, nothing there is touched \(a set without data "
     r"synth's manifest counts as its own only when its first shape is the one this version draws with seed 0"),
    ("data synth: a set larger than the free space",
     lambda t: __import__("pointabstract.data.synthetic.output", fromlist=["x"]).claim_output(t / "s", needed=10**18),
     OSError, r"--out .*s: the set needs about 1000000000\.0 GB and .* free: free some space, make a smaller set"),
    ("train: log.out_dir holding a config.yaml no run wrote",
     lambda t: claim_run_folder(_write(t / "config.yaml", "model: demo\n").parent), FileExistsError,
     r"log.out_dir .* holds config.yaml, which train writes but no run of its own wrote there \(if config.yaml is "
     r"the preset you are training, keep it outside log.out_dir"),
    ("folder dataset: a file of the recorded split is gone",
     lambda t: data.ShapeFolder(_folder_with_split(t), "test", num_points=8, split_file=t / "split.json"),
     ValueError, r"split.json: the (train|test) file '.*' of the run's split is no longer under .*mine: the run's "
                 r"split cannot be reused exactly"),
    ("folder dataset: a split.json that is no split record",
     lambda t: data.ShapeFolder(_folder_with_split(t, gone=False), "test", num_points=8,
                                split_file=_write(t / "other.json", "[]")),
     ValueError, r"other.json: not a split recorded by a run \(it needs 'classes', 'train' and 'test' lists"),
    # issue 38: sizes, precision and output paths
    ("predict: a model input beyond float32 (normalize='none')",
     lambda t: _predictor(t).predict(np.full((1024, 3), 1e39), normalize="none"), ValueError,
     r"cloud 0: coordinates up to 1e\+39 in the model's frame, beyond float32's range"),
    ("model: coordinates whose squared distances overflow float32",
     lambda t: build_model("softmax_seg_demo", tiny=True)(torch.full((1, 16, 3), 1e20), torch.zeros(1, dtype=torch.int64)),
     ValueError, r"pos holds coordinates up to 1e\+20 in absolute value: their squared distances overflow float32 "
                 r"\(\|coordinates\| must stay below 5.33e\+18\)"),
    ("dataset: an HDF5 file holding no shape", _empty_h5, ValueError,
     r"ply_data_train1.h5: holds no shape \(dataset 'data' has shape \(0, 64, 3\)\); remove the file or write "
     r"its shapes"),
    ("train: a step that cannot fit the free memory", lambda t: _step_memory(1_000_000, 2**30), ValueError,
     r"data.num_points=1000000 with data.batch_size=8: one training step of 'capsule_ae_demo_dr' needs at least "
     r".* GiB .* more than the 1.0 GiB free on this device; the most that could fit: data.num_points="),
    ("view output: a file of another format", lambda t: __import__(
        "pointabstract.viz.core.outputs", fromlist=["x"]).check_output(t / "notes.md", "--html"), ValueError,
     r"--html .*notes.md: the name must end in .html or .htm \(it writes an HTML page\), e.g. notes.html"),
]

CLI_ROWS = [
    ("view --input: with --index", ["view", "{file}", "--input", "{tmp}/chair.ply", "--index", "2", "--png",
                                    "{tmp}/v.png"],
     r"--input shows one file in the window, --png or --html; drop --index"),
    ("view: --category without --input", ["view", "{file}", "--category", "Mug", "--png", "{tmp}/v.png"],
     r"--category applies with --input FILE \(a dataset sample has its category\)"),
    ("predict: --out is a file", ["predict", "{file}", "chair.ply", "--out", "{file}"],
     r"--out .*file is a file, not a folder"),
    ("predict: --up x", ["predict", "{file}", "chair.ply", "--up", "x"],
     r"--up must be one of \['y', 'z'\] \(the files' up axis\), got 'x'"),
    ("view: --up without --input", ["view", "{file}", "--up", "z", "--png", "{tmp}/v.png"],
     r"--up applies with --input FILE \(a dataset sample is in the model's frame\)"),
    ("predict: no such checkpoint", ["predict", "{tmp}/none.pt", "chair.ply"], r"checkpoint .*none.pt does not exist"),
    ("predict: a foreign file as checkpoint", ["predict", "{file}", "chair.ply"], r"file is not a readable checkpoint"),
    ("train: unknown config key", ["train", "demo", "optim.lr_rate=3"], r"unknown config key\(s\) \['optim.lr_rate'\]"),
    ("train: log.out_dir under a file", ["train", "demo", "log.out_dir={file}/run", "data.root={tmp}/nothing"],
     r"log.out_dir .*file/run cannot be written: Not a directory"),
    ("train: resume with nothing to resume", ["train", "demo", "--resume", "log.out_dir={tmp}/none"],
     r"nothing to resume in .*none: no last.pt"),
    ("train: folder dataset at a missing folder", ["train", "demo", "data.dataset=folder", "data.root={tmp}/nothing",
                                                   "log.out_dir={tmp}/run"],
     r"nothing: no such folder \(data.dataset=folder reads ROOT/<class>/<shape files>\)"),
    ("train: no dataset", ["train", "demo", "data.root={tmp}/nothing", "log.out_dir={tmp}/run"],
     r"no ModelNet layout found under .*nothing"),
    ("eval: foreign checkpoint", ["eval", "{file}"], r"file is not a readable checkpoint"),
    ("data md5: missing file", ["data", "md5", "{tmp}/none.zip"], r"No such file or directory"),
    ("eval: negative votes", ["eval", "{file}", "--votes", "-3"], r"votes must be a positive int, got -3"),
    ("bench ops: unknown device", ["bench", "ops", "--device", "tpu"],
     r"--device must be cpu, cuda or cuda:N, got 'tpu'"),
    ("train: model.widths not a list", ["train", "demo", "model.widths=abcd"], r"model.widths must be a list"),
    ("view: --context-pool on a foreign file", ["view", "{file}", "--context-pool", "0", "--png", "{tmp}/cp.png"],
     r"file is not a readable checkpoint"),
    ("bench ops: zero repeats", ["bench", "ops", "--repeats", "0"], r"--repeats must be a positive int, got 0"),
    ("bench gpu: unknown device", ["bench", "gpu", "--device", "tpu"], r"--device must be cpu, cuda or cuda:N, got 'tpu'"),
    ("bench gpu: --out holding other files", ["bench", "gpu", "--out", "{tmp}"],
     r"--out .* holds files this check did not write; give a new or empty folder"),
    ("bench gpu: no budget", ["bench", "gpu", "--budget-s", "0"], r"--budget-s must be a positive number of seconds"),
    ("bench ops: --out under a file", ["bench", "ops", "--out", "{file}/ops.md"], r"--out .*file/ops.md"),
    ("train: --resume and --overwrite", ["train", "demo", "--resume", "--overwrite"],
     r"--resume continues the run in log.out_dir and --overwrite replaces it: give one"),
    ("bench capsules: nothing to run", ["bench", "capsules", "--skip-timing", "--train-steps", "0",
                                        "--results", "{tmp}/bench"],
     r"nothing to run: --skip-timing and --train-steps 0 select no measurement \(.*capsules.md and "
     r".*capsules.json are left as they were\)"),
    ("bench capsules: zero seeds", ["bench", "capsules", "--seeds", "0", "--results", "{tmp}/bench"],
     r"--seeds must be a positive int \(training runs per routing\), got 0"),
    ("bench contextpool: zero steps", ["bench", "contextpool", "--steps", "0", "--out-dir", "{tmp}/bench"],
     r"--steps must be a positive int, got 0"),
    ("bench data: nothing to time", ["bench", "data", "--root", "{tmp}", "--synth-per-class", "0",
                                     "--out", "{tmp}/data.md"],
     r"nothing to run: --root .* holds no ModelNet layout and --synth-per-class 0 skips the generation row"),
    ("bench sequoia: N = 0", ["bench", "sequoia", "--ns", "0"], r"--ns must be a positive int, got 0"),
    ("bench capsules: --results under a file", ["bench", "capsules", "--results", "{file}/bench"],
     r"--results .*file/bench/capsules.md: folder .*file/bench cannot be written: Not a directory"),
    ("train: task.scale of one value", ["train", "parts_demo", "task.scale=[0.5]", "log.out_dir={tmp}/run"],
     r"task.scale must be a list of 2 numbers \[low, high\], got \[0.5\]"),
    ("train: a preset that is not a mapping", ["train", "{file}"],
     r"file: a preset must be a mapping of 'key: value' lines"),
    ("data synth: a folder holding files it did not write", ["data", "synth", "--out", "{tmp}", "--overwrite"],
     r"holds 1 file\(s\) that data synth did not write \(e.g. .*file\): refused, nothing there is touched"),
    ("data synth: --out is a file", ["data", "synth", "--out", "{file}"],
     r"file is a file, not a folder \(--out must be a folder\)"),
    ("data synth: one point per shape", ["data", "synth", "--out", "{tmp}/s", "--num-points", "1"],
     r"num_points must be an int >= 2 \(one point cannot be centred and scaled into the unit sphere\)"),
    ("data synth: zero shapes per class", ["data", "synth", "--out", "{tmp}/s", "--train-per-class", "0"],
     r"train_per_class must be a positive int, got 0"),
    ("data synth: no generating process", ["data", "synth", "--out", "{tmp}/s", "--workers", "0"],
     r"workers must be a positive int, got 0"),
    ("data synth: a nuisance switch on the easy level", ["data", "synth", "--out", "{tmp}/s", "--no-noise"],
     r"--no-noise applies to --level hard only \(the easy set has no nuisances\)"),
    ("data synth: hard level, zero test shapes", ["data", "synth", "--level", "hard", "--out", "{tmp}/s",
                                                   "--test-per-class", "0"],
     r"test_per_class must be a positive int, got 0"),
    ("data synth: hard level, one point per shape", ["data", "synth", "--level", "hard", "--out", "{tmp}/s",
                                                      "--num-points", "1"],
     r"num_points must be an int >= 2 \(one point cannot be centred and scaled into the unit sphere\), got 1"),
    ("data synth: hard level, negative seed", ["data", "synth", "--level", "hard", "--out", "{tmp}/s",
                                                "--seed", "-1"],
     r"seed must be an int >= 0, got -1"),
    ("bench curves: a zero budget", ["bench", "curves", "capsules", "--budgets", "0", "--dry-run"],
     r"--budgets must be a positive int, got 0"),
    ("bench curves: a budget given twice", ["bench", "curves", "capsules", "--budgets", "3", "3", "--dry-run"],
     r"--budgets must be distinct, got \[3, 3\]"),
    ("bench curves: a negative budget", ["bench", "curves", "sequoia_seg", "--budgets", "-2", "--dry-run"],
     r"--budgets must be a positive int, got -2"),
    ("export: into a folder holding other files", ["export", "{file}", "{tmp}"],
     r"holds files an export does not write \(e.g. 'file'\): refused, nothing there is touched"),
    ("export: into a file", ["export", "{file}", "{file}"], r"file is a file; the export goes into a folder"),
    ("eval: a folder that is not an export", ["eval", "{tmp}"],
     r"is a folder without config.json and model.safetensors: give a trainer checkpoint"),
    ("bench curves: zero threads", ["bench", "curves", "contextpool", "--threads", "0", "--dry-run"],
     r"--threads must be a positive int, got 0"),
    ("bench curves: zero jobs", ["bench", "curves", "contextpool", "--jobs", "0", "--dry-run"],
     r"--jobs must be a positive int, got 0"),
    ("bench curves: seeds reaching the A/A control's", ["bench", "curves", "contextpool", "--seeds", "1001",
                                                         "--dry-run"],
     r"--seeds 1001 would reach the A/A control's seeds \(seed \+ 1000\); give at most 1000, or --no-control"),
    ("view --html: a folder", ["view", "{file}", "--html", "{tmp}"],
     r"--html .* is a folder; give a file name such as .*viewer.html"),
    ("view --html: a folder that cannot be written", ["view", "{file}", "--html", "{file}/viewer.html"],
     r"--html .*file/viewer.html: folder .*file cannot be written: Not a directory"),
    ("view --html: with --png", ["view", "{file}", "--html", "{tmp}/v.html", "--png", "{tmp}/v.png"],
     r"--html writes the page alone; drop --png"),
    # issue 38: output paths, run folders, sizes
    ("view --html: a Markdown name", ["view", "{file}", "--html", "{tmp}/notes.md"],
     r"--html .*notes.md: the name must end in .html or .htm"),
    ("view --html: a PNG name", ["view", "{file}", "--html", "{tmp}/v.png"],
     r"--html .*v.png: the name must end in .html or .htm"),
    ("view --png: a folder", ["view", "{file}", "--png", "{tmp}"], r"--png .* is a folder; give a file name such "
                                                                   r"as .*view.png"),
    ("view --png: a folder that cannot be written", ["view", "{file}", "--png", "/proc/v.png"],
     r"--png /proc/v.png: folder /proc cannot be written"),
    ("predict: a folder without last.pt", ["predict", "{tmp}", "chair.ply"],
     r"is a folder without last.pt \(a run folder holds the last.pt and best.pt that `pointabstract train` "
     r"writes\) and not an exported model \(config.json \+ model.safetensors\); its checkpoints: none"),
    ("bench capsules: fewer points than the encoder takes", ["bench", "capsules", "--points", "4", "--results",
                                                             "{tmp}/bench"],
     r"--points must be an int >= 8 \(the fewest input points per cloud the capsule autoencoder's encoder takes\), "
     r"got 4"),
]


@pytest.mark.parametrize("call, error, pattern", [row[1:] for row in ROWS], ids=[row[0] for row in ROWS])
def test_api_errors(call, error, pattern, tmp_path):
    with pytest.raises(error, match=pattern):
        call(tmp_path)


@pytest.mark.parametrize("argv, pattern", [row[1:] for row in CLI_ROWS], ids=[row[0] for row in CLI_ROWS])
def test_cli_errors(argv, pattern, tmp_path, capsys):
    (tmp_path / "file").write_text("not a checkpoint")
    argv = [a.format(tmp=tmp_path, file=tmp_path / "file") for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err, err
    assert re.search(pattern, err.splitlines()[0]), err


def test_the_catalogue_is_long_enough():
    assert len(ROWS) + len(CLI_ROWS) >= 40
