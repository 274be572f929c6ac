import hashlib
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from pointabstract.bench.data import random_meshes, write_modelnet_hdf5, write_modelnet_off
from pointabstract.cli import main
from pointabstract.data import cli as cli_module
from pointabstract.data.cli import inspect_root
from pointabstract.data.datasets.checksums import ARCHIVES, file_md5, verify_md5
from pointabstract.data.synthetic.nuisances import NUISANCES, Nuisances
from tests.fixtures import write_normal, write_ply


def _modelnet(tmp_path):
    pos = np.random.default_rng(0).normal(size=(5, 16, 3)).astype(np.float32)
    write_modelnet_hdf5(tmp_path / "modelnet40_ply_hdf5_2048", "train", pos=pos, labels=np.array([8, 8, 2, 0, 8]))
    write_modelnet_hdf5(tmp_path / "modelnet40_ply_hdf5_2048", "test", pos=pos[:1], labels=np.array([2]))
    rng = np.random.default_rng(0)
    write_modelnet_off(tmp_path / "ModelNet40", "train", meshes=random_meshes(2, rng), labels=np.array([0, 8]))


def test_info_lists_every_layout_with_counts(tmp_path, capsys):
    _modelnet(tmp_path)
    write_normal(tmp_path)
    assert main(["data", "info", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "ModelNet40, layout 'hdf5'" in out and "  train: 5 shapes, 3 classes" in out
    assert "    airplane 1, bed 1, chair 3" in out
    assert "ModelNet40, layout 'off'" in out and "  train: 2 meshes; caches: none" in out
    assert "ShapeNetPart, layout 'normal'" in out and "    Cap 1, Mug 1" in out
    assert "no problems found" in out


def test_info_lists_shapenet_core_point_clouds_per_split(tmp_path, capsys):
    folder = tmp_path / "shapenet_core13" / "customShapeNet"
    rng = np.random.default_rng(0)
    for synset in ("02691156", "04530566"):  # airplane, watercraft: 5 clouds each, split 4 + 1
        for i in range(5):
            write_ply(folder / synset / "ply" / f"{i:03d}.points.ply", rng.normal(size=(8, 3)))
    assert main(["data", "info", str(tmp_path), "--check"]) == 0
    out = capsys.readouterr().out
    assert f"ShapeNetCore13 point clouds, layout 'ply', in {folder}" in out
    assert "  train: 8 clouds" in out and "  test: 2 clouds" in out


def test_info_reports_problems_and_nothing_found(tmp_path, capsys):
    folder = write_normal(tmp_path)
    (folder / "02954340" / "c1.txt").write_text("1 2 3 0 0 1 99\n")
    lines, problems = inspect_root(tmp_path)
    assert problems == []  # the lists are fine; only --check reads the point files
    assert main(["data", "info", str(tmp_path), "--check"]) == 1
    out = capsys.readouterr().out
    assert "1 problem(s):" in out and "c1.txt: part id 99 at line 1 is not one of Cap's parts" in out
    assert main(["data", "info", str(tmp_path / "empty")]) == 1
    out = capsys.readouterr().out
    assert "no ModelNet layout found" in out and "no ShapeNetPart layout found" in out


def test_info_counts_upper_case_meshes(tmp_path, capsys):
    rng = np.random.default_rng(0)
    paths = write_modelnet_off(tmp_path / "ModelNet40", "train", meshes=random_meshes(2, rng),
                               labels=np.array([0, 8]))
    paths[0].rename(paths[0].with_suffix(".OFF"))
    assert main(["data", "info", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "  train: 2 meshes; caches: none" in out and "    airplane 1, chair 1" in out


def test_info_reports_float_labels_as_a_problem(tmp_path, capsys):
    import h5py

    _modelnet(tmp_path)
    with h5py.File(tmp_path / "modelnet40_ply_hdf5_2048" / "ply_data_train0.h5", "a") as handle:
        del handle["label"]
        handle["label"] = np.array([[8.0], [8.0], [0.5], [0.0], [8.0]])
    assert main(["data", "info", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "1 problem(s):" in out and "no problems found" not in out
    assert "ply_data_train0.h5: labels must be whole numbers, got 0.5 at sample 2" in out


def test_prepare_writes_the_mesh_cache(tmp_path, capsys):
    _modelnet(tmp_path)
    cache_dir = tmp_path / "cache"
    assert main(["data", "prepare", str(tmp_path), "--mesh-points", "64", "--cache-dir", str(cache_dir)]) == 0
    out = capsys.readouterr().out
    assert "test: no" not in out and f"train: {cache_dir / 'ModelNet40_train_64pts_seed0.h5'}" in out
    assert "no test meshes, skipped" in out
    assert main(["data", "prepare", str(tmp_path / "nothing")]) == 2  # one error line, no traceback
    assert "error: no ModelNet layout found" in capsys.readouterr().err


def _fake_synthetic(monkeypatch):
    from pointabstract.data.synthetic import Nuisances

    calls = []
    fake = types.ModuleType("pointabstract.data.synthetic")
    fake.Nuisances = Nuisances
    fake.generate = lambda out, **kwargs: calls.append((out, kwargs)) or {"counts": {"train": 1}, "seconds": 0.5,
                                                                           "replaced": None}
    monkeypatch.setitem(sys.modules, "pointabstract.data.synthetic", fake)
    return calls


def test_synth_passes_level_and_switches_to_the_generator(tmp_path, monkeypatch, capsys):
    calls = _fake_synthetic(monkeypatch)
    assert main(["data", "synth", "--out", str(tmp_path), "--seed", "3", "--train-per-class", "2",
                 "--test-per-class", "1", "--num-points", "128"]) == 0
    assert calls[-1] == (tmp_path, {"level": "easy", "train_per_class": 2, "test_per_class": 1, "num_points": 128,
                                    "seed": 3, "rotation": "up", "workers": None, "progress": True,
                                    "overwrite": False})
    assert f"wrote the easy synthetic dataset to {tmp_path}" in capsys.readouterr().out
    assert main(["data", "synth", "--level", "hard", "--no-partial", "--no-outliers", "--rotation", "so3"]) == 0
    out, kwargs = calls[-1]
    assert out == Path("datasets/synthetic-hard") and kwargs["level"] == "hard" and kwargs["rotation"] == "so3"
    assert kwargs["train_per_class"] is None and kwargs["test_per_class"] is None  # the level's defaults
    assert kwargs["nuisances"] == Nuisances(partial=False, outliers=False)
    assert main(["data", "synth", "--level", "hard"]) == 0 and calls[-1][1]["nuisances"] == Nuisances()
    assert main(["data", "synth", "--no-noise"]) == 2
    assert "error: --no-noise applies to --level hard only" in capsys.readouterr().err


def test_synth_switches_name_every_nuisance():
    assert cli_module._NUISANCES == NUISANCES


def test_md5_helpers_and_command(tmp_path, capsys):
    path = tmp_path / "ModelNet40.zip"
    path.write_bytes(b"x" * 3000)
    digest = hashlib.md5(b"x" * 3000).hexdigest()
    assert file_md5(path, chunk_size=7) == digest == verify_md5(path, digest.upper())
    with pytest.raises(ValueError, match=r"ModelNet40\.zip: md5 .* does not match the expected 0{32}"):
        verify_md5(path, "0" * 32)
    with pytest.raises(ValueError, match=r"ModelNet40\.zip: no verified md5 is recorded"):
        verify_md5(path)
    with pytest.raises(ValueError, match="expected must be a 32-digit md5"):
        verify_md5(path, "abc")
    assert all(a.md5 is None or len(a.md5) == 32 for a in ARCHIVES.values())
    assert main(["data", "md5", str(path)]) == 0
    assert digest in capsys.readouterr().out
    assert main(["data", "md5", str(path), "--expected", digest]) == 0
    assert "OK" in capsys.readouterr().out


def test_info_on_the_real_subsets(realdata):
    lines, problems = inspect_root(realdata)
    text = "\n".join(lines)
    assert problems == []
    assert "  train: 127 shapes, 36 classes" in text and "  test: 29 shapes, 20 classes" in text
    assert "  train: 22 meshes" in text and "  test: 11 shapes" in text


def test_synth_prints_a_line_per_split_when_not_on_a_terminal(tmp_path, capsys):
    # capsys: neither stdout nor stderr is a terminal, so no progress bar: one line per stage instead
    assert main(["data", "synth", "--out", str(tmp_path / "s"), "--train-per-class", "1", "--test-per-class", "1",
                 "--num-points", "16", "--workers", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(" (")[0] for line in lines[:2]] == ["synthetic easy train: 16 shapes generated",
                                                           "synthetic easy test: 16 shapes generated"]
    assert all(line.endswith(" s)") for line in lines[:2]) and lines[2].startswith("shapes per split:")


def test_info_check_and_prepare_print_a_line_per_stage_when_not_on_a_terminal(tmp_path, capsys):
    write_normal(tmp_path)
    assert main(["data", "info", str(tmp_path), "--check"]) == 0
    out = capsys.readouterr().out
    for split, count in (("train", 2), ("val", 1), ("test", 2)):
        assert f"checked ShapeNetPart 'normal' {split}: {count} shapes, 0 problems (" in out
    _modelnet(tmp_path / "mn")
    assert main(["data", "prepare", str(tmp_path / "mn"), "--mesh-points", "64", "--cache-dir",
                 str(tmp_path / "cache")]) == 0
    out = capsys.readouterr().out
    assert f"train: sampling 2 meshes of {tmp_path / 'mn' / 'ModelNet40'} into the cache..." in out


def test_no_stage_lines_on_a_terminal(tmp_path, capsys, monkeypatch):
    from pointabstract.data.synthetic import generator

    for module in (cli_module, generator):
        monkeypatch.setattr(module, "stage_lines", lambda progress=True: False)
    write_normal(tmp_path)
    assert main(["data", "info", str(tmp_path), "--check"]) == 0
    assert main(["data", "synth", "--out", str(tmp_path / "s"), "--train-per-class", "1", "--test-per-class", "1",
                 "--num-points", "16", "--workers", "1"]) == 0
    out = capsys.readouterr().out
    assert "checked" not in out and "generated" not in out


def test_info_describes_a_folder_of_own_shapes(tmp_path, capsys):
    from tests.fixtures import snapshot, write_shapes

    root = write_shapes(tmp_path / "mine")
    before = snapshot(root)
    assert main(["data", "info", str(root)]) == 0
    out = capsys.readouterr().out
    assert f"Your own shapes (data.dataset=folder), layout 'seeded split', in {root}: 3 classes" in out
    assert "split: seeded and stratified per class; shown for seed 0, data.test_fraction 0.2" in out
    assert "  train: 12 files\n    pyramid 4, slab 4, tetra 4\n  test: 3 files\n    pyramid 1, slab 1, tetra 1" in out
    assert "  file types: .obj 5, .off 5, .ply 5" in out and "sampled points cached in" in out
    assert "no problems found" in out and "no ModelNet layout found" not in out
    (root / "tetra" / "t0.obj").write_text("v 0 0\n")
    assert main(["data", "info", str(root), "--check"]) == 1
    assert "t0.obj:1: bad vertex line '0 0': expected 3 numbers" in capsys.readouterr().out
    assert snapshot(root).keys() == before.keys()  # info writes nothing (the file edited above aside)


def test_prepare_by_default_writes_outside_the_data_and_info_finds_it(tmp_path, capsys):
    _modelnet(tmp_path / "data")
    before = sorted(p.relative_to(tmp_path) for p in (tmp_path / "data").rglob("*"))
    assert main(["data", "prepare", str(tmp_path / "data"), "--mesh-points", "64"]) == 0
    assert sorted(p.relative_to(tmp_path) for p in (tmp_path / "data").rglob("*")) == before  # nothing added
    capsys.readouterr()
    assert main(["data", "info", str(tmp_path / "data")]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("  train: 2 meshes; caches: "))
    cache = Path(line.split("caches: ", 1)[1])
    assert cache.name == "ModelNet40_train_64pts_seed0.h5" and cache.is_file()
    assert not cache.is_relative_to(tmp_path / "data")
