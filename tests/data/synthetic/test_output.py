"""data synth never destroys what it did not write, and an interrupt leaves the previous set."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

from pointabstract.cli import main
from pointabstract.data.synthetic import generate
from pointabstract.data.synthetic import generator as generator_module
from pointabstract.data.synthetic.output import MANIFEST, claim_output, is_complete, read_manifest

ROOT = Path(__file__).resolve().parents[3]
TINY = dict(train_per_class=1, test_per_class=1, num_points=32, progress=False, workers=1)


def _snapshot(root):
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _real_modelnet(root):
    """A user's real dataset in the PointNet HDF5 layout (40 real class names)."""
    folder = root / "modelnet40_ply_hdf5_2048"
    folder.mkdir(parents=True)
    (folder / "shape_names.txt").write_text("airplane\nbathtub\nbed\nbench\n")
    for name in ("ply_data_train0.h5", "ply_data_test0.h5"):
        with h5py.File(folder / name, "w") as f:
            f["data"] = np.random.default_rng(0).random((4, 16, 3), dtype=np.float32)
            f["label"] = np.arange(4, dtype=np.int32)[:, None]
    parts = root / "shapenet_part_seg_hdf5_data"
    parts.mkdir()
    (parts / "all_object_categories.txt").write_text("Airplane\t02691156\n")
    return root


@pytest.mark.parametrize("overwrite", [False, True])
def test_a_users_real_dataset_is_refused_and_untouched(tmp_path, overwrite, capsys):
    root = _real_modelnet(tmp_path / "datasets")
    before = _snapshot(root)
    with pytest.raises(FileExistsError, match=r"holds 4 file\(s\) that data synth did not write \(e.g. .*"
                                              r"ply_data_test0.h5\): refused, nothing there is touched"):
        generate(root, overwrite=overwrite, **TINY)
    args = ["data", "synth", "--out", str(root), "--num-points", "32", "--train-per-class", "1"]
    assert main(args + (["--overwrite"] if overwrite else [])) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert _snapshot(root) == before and sorted(p.name for p in tmp_path.iterdir()) == ["datasets"]


def test_one_foreign_file_beside_an_earlier_set_is_refused(tmp_path):
    generate(tmp_path / "s", **TINY)
    (tmp_path / "s" / "modelnet40_ply_hdf5_2048" / "my_notes.txt").write_text("mine")
    before = _snapshot(tmp_path / "s")
    with pytest.raises(FileExistsError, match=r"my_notes.txt\): refused"):
        generate(tmp_path / "s", overwrite=True, **TINY)
    assert _snapshot(tmp_path / "s") == before


def test_an_earlier_set_is_replaced_only_with_overwrite(tmp_path):
    root = tmp_path / "s"
    generate(root, seed=1, **TINY)
    assert is_complete(root) and read_manifest(root)["seed"] == 1
    before = _snapshot(root)
    with pytest.raises(FileExistsError, match=r"already holds a synthetic set \(level easy, seed 1\); pass "
                                              r"--overwrite to replace it"):
        generate(root, seed=2, **TINY)
    assert _snapshot(root) == before
    generate(root, seed=2, overwrite=True, **TINY)
    assert read_manifest(root)["seed"] == 2 and _snapshot(root) != before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s"]  # no staging folder left behind


def test_an_interrupt_leaves_the_previous_set_and_no_partial_one(tmp_path, monkeypatch):
    root = tmp_path / "s"
    generate(root, **TINY)
    before = _snapshot(root)
    real, calls = generator_module._write_h5, [0]

    def interrupted(path, **arrays):
        calls[0] += 1
        if calls[0] == 2:  # after the first file of the new set
            raise KeyboardInterrupt
        real(path, **arrays)

    monkeypatch.setattr(generator_module, "_write_h5", interrupted)
    with pytest.raises(KeyboardInterrupt):
        generate(root, seed=5, overwrite=True, **TINY)
    assert _snapshot(root) == before and sorted(p.name for p in tmp_path.iterdir()) == ["s"]
    calls[0] = 0
    with pytest.raises(KeyboardInterrupt):
        generate(tmp_path / "fresh", **TINY)  # a fresh target: nothing that looks like a set
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s"]


def test_what_a_killed_run_left_is_cleaned_or_put_back(tmp_path):
    root = tmp_path / "s"
    generate(root, **TINY)
    before = _snapshot(root)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    (tmp_path / f".s.synth-new-{dead}" / "modelnet40_ply_hdf5_2048").mkdir(parents=True)  # half-written
    assert claim_output(root, overwrite=True) == "replace"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s"]
    os.replace(root, tmp_path / f".s.synth-old-{dead}")  # killed between the two renames of the swap
    with pytest.raises(FileExistsError, match="already holds a synthetic set"):
        claim_output(root)  # the previous set is put back first, then (without --overwrite) kept
    assert _snapshot(root) == before and sorted(p.name for p in tmp_path.iterdir()) == ["s"]


def _users_shapenet_classification(root):
    """A user's ShapeNetPart-as-classification set: the file names of our layout and the 16
    categories in alphabetical order (our easy level's class list), with the user's own points."""
    from pointabstract.data.synthetic import CLASS_NAMES

    folder = root / "modelnet40_ply_hdf5_2048"
    folder.mkdir(parents=True)
    (folder / "shape_names.txt").write_text("".join(f"{name}\n" for name in CLASS_NAMES))
    for split in ("train", "test"):
        with h5py.File(folder / f"ply_data_{split}0.h5", "w") as f:
            f["data"] = np.random.default_rng(0).random((16, 32, 3), dtype=np.float32)
            f["label"] = np.arange(16, dtype=np.int32)[:, None]
        (folder / f"{split}_files.txt").write_text(f"data/modelnet40_ply_hdf5_2048/ply_data_{split}0.h5\n")
    return root


@pytest.mark.parametrize("overwrite", [False, True])
def test_a_users_set_with_our_class_list_is_never_replaced(tmp_path, overwrite, capsys):
    # issue 38: the class list alone made it "a set of an earlier version", and --overwrite deleted it
    root = _users_shapenet_classification(tmp_path / "shapenet_cls")
    before = _snapshot(root)
    args = ["data", "synth", "--out", str(root), "--num-points", "32", "--train-per-class", "1",
            "--test-per-class", "1", "--workers", "1"]
    assert main(args + (["--overwrite"] if overwrite else [])) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "holds 5 file(s) that data synth did not write" in err
    assert "counts as its own only when its first shape is the one this version draws with seed 0" in err
    assert _snapshot(root) == before and sorted(p.name for p in tmp_path.iterdir()) == ["shapenet_cls"]


@pytest.mark.slow  # 10 s: make and a CLI process
@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_demo_data_never_replaces_a_users_set_without_a_manifest(tmp_path):
    root = _users_shapenet_classification(tmp_path / "synthetic")
    before = _snapshot(root)
    done = subprocess.run(["make", "--no-print-directory", "-o", "setup", "demo-data", f"SYNTH={root}",
                           f"CLI={sys.executable} -m pointabstract.cli"], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert done.returncode != 0 and "that data synth did not write" in done.stderr, done.stderr
    assert _snapshot(root) == before


def test_a_set_of_an_earlier_version_is_replaced_only_when_it_proves_it(tmp_path, capsys):
    root = tmp_path / "s"
    generate(root, **TINY)  # seed 0: its first shape is the one this version draws
    (root / MANIFEST).unlink()  # as written before manifests existed
    with pytest.raises(FileExistsError, match=r"already holds a synthetic set \(written by an earlier version "
                                              r"before manifests\); pass --overwrite"):
        generate(root, **TINY)
    assert main(["data", "synth", "--out", str(root), "--num-points", "32", "--train-per-class", "1",
                 "--test-per-class", "1", "--workers", "1", "--overwrite"]) == 0
    said = capsys.readouterr().out
    assert f"--overwrite: replaced the earlier synthetic set in {root} (written before manifests, 11 files)" in said
    assert is_complete(root)
    generate(tmp_path / "seed3", seed=3, **TINY)  # another seed: nothing proves it is ours
    (tmp_path / "seed3" / MANIFEST).unlink()
    before = _snapshot(tmp_path / "seed3")
    with pytest.raises(FileExistsError, match=r"refused, nothing there is touched \(a set without data synth's "
                                              r"manifest counts as its own only when"):
        generate(tmp_path / "seed3", overwrite=True, **TINY)
    assert _snapshot(tmp_path / "seed3") == before


def test_overwrite_says_which_set_it_replaced(tmp_path, capsys):
    root = tmp_path / "s"
    generate(root, seed=1, **TINY)
    assert main(["data", "synth", "--out", str(root), "--num-points", "32", "--train-per-class", "1",
                 "--test-per-class", "1", "--workers", "1", "--seed", "2", "--overwrite"]) == 0
    assert (f"--overwrite: replaced the earlier synthetic set in {root} (level easy, seed 1, 32 shapes, 12 files)"
            in capsys.readouterr().out)


@pytest.mark.parametrize("argv, pattern", [
    (["--num-points", "1"], r"num_points must be an int >= 2 \(one point cannot be centred and scaled"),
    (["--train-per-class", "0"], r"train_per_class must be a positive int, got 0"),
    (["--test-per-class", "-1"], r"test_per_class must be a positive int, got -1"),
    (["--seed", "-1"], r"seed must be an int >= 0, got -1"),
    (["--workers", "0"], r"workers must be a positive int, got 0"),
])
def test_options_that_cannot_make_a_dataset_are_refused(tmp_path, argv, pattern, capsys):
    assert main(["data", "synth", "--out", str(tmp_path / "s"), *argv]) == 2
    assert re.search(pattern, capsys.readouterr().err)
    assert not (tmp_path / "s").exists()


def test_a_non_finite_set_is_never_written(tmp_path, monkeypatch):
    real = generator_module._generate_split

    def broken(*args, **kwargs):
        pos, normal, pid, category = real(*args, **kwargs)
        pos[0, 0, 0] = np.nan
        return pos, normal, pid, category

    monkeypatch.setattr(generator_module, "_generate_split", broken)
    with pytest.raises(ValueError, match=r"the generated train points hold NaN/Inf values .*nothing was written"):
        generate(tmp_path / "s", **TINY)
    assert list(tmp_path.iterdir()) == []


def test_a_file_put_into_the_folder_while_generating_is_never_deleted(tmp_path, monkeypatch):
    root = tmp_path / "s"
    generate(root, **TINY)
    real = generator_module._write_h5

    def and_a_user_file(path, **arrays):
        real(path, **arrays)
        (root / "notes.txt").write_text("written meanwhile")

    monkeypatch.setattr(generator_module, "_write_h5", and_a_user_file)
    with pytest.raises(FileExistsError, match=r"notes.txt appeared while the set was generated"):
        generate(root, overwrite=True, **TINY)
    assert (root / "notes.txt").read_text() == "written meanwhile" and is_complete(root)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s"]
