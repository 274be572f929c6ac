"""The data benchmark's plumbing (its numbers are printed by tools/benchmark_data.py, not tested)."""

import argparse
import re

import pytest

from pointabstract.bench import data as bench


def test_run_on_tiny_layouts_without_workers(tmp_path):
    root = bench.build_layouts(tmp_path, shapes=4, points=32, txt_points=40)
    assert (root / "modelnet40_ply_hdf5_2048" / "ply_data_train1.h5").is_file()
    assert len(list((root / "ModelNet40").glob("*/train/*.off"))) == 4
    messages = []
    rows = bench.run(root=root, num_points=16, points=32, workers=0, batch_size=2, synth_per_class=0,
                     progress=messages.append)
    whats = [r.what for r in rows]
    assert whats == ["ModelNet40 hdf5, sampling=first", "ModelNet40 hdf5, sampling=random",
                     "ModelNet40 hdf5, sampling=fps", "ModelNet40 resampled, sampling=first",
                     "ModelNet40 resampled, sampling=random", "ModelNet40 off: building the cache (once)",
                     "ModelNet40 cached off, sampling=first", "ModelNet40 cached off, sampling=random"]
    assert all(r.per_second > 0 and r.samples == 4 for r in rows) and len(messages) == 7
    assert not list(root.glob("ModelNet40/*.h5"))  # the cache went to the temporary folder


def test_table_and_arguments():
    rows = [bench.Row("ModelNet40 hdf5, sampling=first", 256, 1024, 4321.4, note="2 workers, batch 32"),
            bench.Row("synthetic generation (16 categories)", 144, 2048, 95.2, "shapes/s")]
    table = bench.format_table(rows)
    assert table.splitlines()[0] == "| what | shapes | points | speed | note |"
    assert "| ModelNet40 hdf5, sampling=first | 256 | 1024 | 4,321 samples/s | 2 workers, batch 32 |" in table
    assert "| synthetic generation (16 categories) | 144 | 2048 | 95 shapes/s |  |" in table
    parser = argparse.ArgumentParser()
    bench.add_arguments(parser)
    args = parser.parse_args(["--shapes", "8", "--workers", "0"])
    assert (args.shapes, args.workers, args.batch_size, args.root) == (8, 0, 32, None)


def test_main_writes_the_table(tmp_path, capsys):
    parser = argparse.ArgumentParser()
    bench.add_arguments(parser)
    args = parser.parse_args(["--shapes", "3", "--points", "16", "--txt-points", "16", "--num-points", "8",
                              "--workers", "0", "--batch-size", "2", "--synth-per-class", "0",
                              "--out", str(tmp_path / "bench.md")])
    assert bench.main(args, command="python tools/benchmark_data.py --shapes 3") == 0
    text = (tmp_path / "bench.md").read_text()
    assert "`python tools/benchmark_data.py --shapes 3`" in text and "| ModelNet40 hdf5, sampling=fps |" in text
    assert "# data benchmark" in capsys.readouterr().out


def test_nothing_to_time_is_refused_up_front_and_the_table_kept(tmp_path, capsys):
    from pointabstract.cli import main as cli

    out = tmp_path / "bench.md"
    out.write_text("# Data benchmark\n\n| previous | table |\n")
    before = out.read_bytes()
    (tmp_path / "empty").mkdir()
    assert cli(["bench", "data", "--root", str(tmp_path / "empty"), "--synth-per-class", "0",
                "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and re.fullmatch(
        r"error: nothing to run: --root .*empty holds no ModelNet layout and --synth-per-class 0 skips "
        r"the generation row \(.*bench.md is left as it was\)\n", err), err
    assert out.read_bytes() == before
    assert cli(["bench", "data", "--shapes", "0", "--out", str(out)]) == 2
    assert re.fullmatch(r"error: --shapes must be a positive int, got 0\n", capsys.readouterr().err)
    assert out.read_bytes() == before


def test_an_empty_run_writes_nothing(tmp_path, monkeypatch):
    out = tmp_path / "bench.md"
    out.write_text("previous\n")
    monkeypatch.setattr(bench, "run", lambda **kwargs: [])
    parser = argparse.ArgumentParser()
    bench.add_arguments(parser)
    with pytest.raises(ValueError, match=r"^bench data measured nothing, so nothing is written \(.*bench.md is "
                                         r"left as it was\)$"):
        bench.main(parser.parse_args(["--out", str(out)]))
    assert out.read_text() == "previous\n"


def test_an_out_under_a_file_is_refused_before_any_work(tmp_path, capsys, monkeypatch):
    from pointabstract.cli import main as cli

    (tmp_path / "file").write_text("x")

    def work(**kwargs):
        raise AssertionError("work started")

    monkeypatch.setattr(bench, "run", work)
    assert cli(["bench", "data", "--out", str(tmp_path / "file" / "d.md")]) == 2
    assert re.fullmatch(r"error: --out .*file/d.md: folder .*file is a file, not a folder\n",
                        capsys.readouterr().err)


def test_formats_prints_the_reader_table_of_every_format(tmp_path, capsys, monkeypatch):
    """The table's plumbing; trimesh and Open3D are stood in for by one reader that refuses clouds
    (importing both costs seconds; tests/data/test_cross_library.py reads with them)."""
    from pointabstract.bench import readers
    from pointabstract.cli import main
    from pointabstract.data.files import read_shape

    def other(path, kind):
        def call():
            if kind == "cloud":
                raise ValueError("meshes only")
            read_shape(path)
        return call

    monkeypatch.setattr(readers, "_readers", lambda: {"ours": lambda path, kind: lambda: read_shape(path),
                                                      "other": other})
    assert main(["bench", "data", "--formats", "--grid", "4", "--repeats", "1", "--out", str(tmp_path / "r.md")]) == 0
    table = (tmp_path / "r.md").read_text()
    rows = [line for line in table.splitlines() if line.startswith("| ") and "vertices" in line]
    labels = {row.split(" | ")[0][2:] for row in rows}
    assert {"binary STL", "ASCII STL, upper case", "binary PLY, mixed faces", "ASCII PLY, mixed faces",
            "OBJ, mixed faces", "OFF, mixed faces", "PCD binary_compressed", "XYZN", "XYZRGB", "PTS"} <= labels
    assert all(row.split(" | ")[2] != "-" for row in rows)  # ours reads every file
    assert all((row.split(" | ")[3] == "-") == (row.split(" | ")[4] == "- |") for row in rows)  # ratio iff other
    assert "| file | size | ours ms | other ms | ours / fastest other |" in capsys.readouterr().out


def test_formats_refuses_a_grid_too_small_for_a_torus(capsys):
    from pointabstract.cli import main

    assert main(["bench", "data", "--formats", "--grid", "2"]) == 2
    assert "--grid must be an int >= 3 (a torus grid needs 3 x 3 vertices), got 2" in capsys.readouterr().err
