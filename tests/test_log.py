"""The library's notes are ``logging`` records of "pointabstract" (pointabstract/_log.py): the
command line prints them exactly as it printed them before they were records, a library user
gets records (never output) and silences them with one line, and importing adds no handler."""

import logging
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from pointabstract._log import STDOUT, cli_notes
from pointabstract.cli import main
from tests.fixtures import TETRA, tiny_model, write_mesh, write_shapes

LOGGER = logging.getLogger("pointabstract")


def _masked(text: str, **paths: Path) -> str:
    """``text`` with each path replaced by its name in capitals and each decimal number by ``F``."""
    for name, path in sorted(paths.items(), key=lambda item: -len(str(item[1]))):
        text = text.replace(str(path), name.upper())
    return re.sub(r"\d+\.\d+", "F", text)


def test_cli_prints_synth_notes_as_before(tmp_path, capsys):
    # the text `pointabstract data synth` printed when these lines were print() calls
    out = tmp_path / "s"
    assert main(["data", "synth", "--out", str(out), "--train-per-class", "1", "--test-per-class", "1",
                 "--num-points", "16", "--workers", "1"]) == 0
    said = capsys.readouterr()
    assert _masked(said.out, s=out) == (
        "synthetic easy train: 16 shapes generated (F s)\n"
        "synthetic easy test: 16 shapes generated (F s)\n"
        "shapes per split: {'train': 16, 'val': 0, 'test': 16} in F s\n"
        "wrote the easy synthetic dataset to S; inspect it with: pointabstract data info S\n")
    assert said.err == ""
    assert [type(h) for h in LOGGER.handlers] == [logging.NullHandler]
    assert LOGGER.propagate and LOGGER.level == logging.NOTSET  # main() restored the logger


def test_cli_prints_train_eval_and_predict_notes_as_before(tmp_path, capsys, monkeypatch):
    # the text train / eval / predict printed when these notes were print() calls (stdout and stderr
    # apart, as a shell redirecting them sees them)
    from pointabstract.data.datasets.folder_cache import cache_folder

    monkeypatch.setenv("POINTABSTRACT_CACHE", str(tmp_path / "cache"))
    shapes, run = write_shapes(tmp_path / "shapes", per_class=4), tmp_path / "run"
    run.mkdir()
    (run / "report.md").write_text("mine")
    args = ["data.dataset=folder", f"data.root={shapes}", "data.num_points=48", "data.batch_size=3",
            "data.eval_batch_size=8", "data.workers=0", "optim.epochs=1", "log.progress=true",
            "log.tensorboard=false", "device=cpu", f"log.out_dir={run}", *tiny_model("centroid_transformer")]
    assert main(["train", "demo", *args, "--overwrite"]) == 0
    said, paths = capsys.readouterr(), {"run": run, "shapes": shapes, "cache": cache_folder(shapes)}
    assert _masked(said.out, **paths) == (
        "--overwrite: replaced in RUN: report.md (not written by train)\n"
        "epoch 1/1 train_accuracy F train_loss F test_overall_accuracy F test_mean_class_accuracy F (F s)\n"
        "test overall accuracy F, mean class accuracy F; outputs in RUN\n")
    assert _masked(said.err, **paths) == ("folder cache CACHE: sampling 9 new or changed train file(s) of 9\n"
                                          "folder cache CACHE: sampling 3 new or changed test file(s) of 3\n")
    for i in range(3):
        write_mesh(shapes / "tetra" / f"added{i}.obj", TETRA, 3.0 + i)
    assert main(["eval", str(run / "last.pt"), "--out", str(tmp_path / "ev")]) == 0
    said = capsys.readouterr()
    assert _masked(said.out, ev=tmp_path / "ev") == "test overall accuracy F, mean class accuracy F; report in " \
                                                     "EV/report.md\n"
    assert _masked(said.err, **paths) == ("note: 3 shape file(s) under SHAPES are not in the split RUN/last.pt "
                                          "was trained on (RUN/split.json): left out of its test set\n")
    (tmp_path / "bad.ply").write_text("ply\nnonsense\n")
    assert main(["predict", str(run), str(shapes / "tetra" / "t0.obj"), str(tmp_path / "bad.ply")]) == 1
    said = capsys.readouterr()
    assert re.fullmatch(r"SHAPES/tetra/t0.obj: (\w+ F  ){3}\[mesh of 4 vertices: 48 points sampled by area "
                        r"\(seed 0\)\]\n", _masked(said.out, **paths)), said.out
    assert _masked(said.err, bad=tmp_path / "bad.ply", **paths) == (
        "RUN is a run folder: using its last.pt\n"
        "skipped BAD: not a PLY file (no 'ply' ... 'end_header' header)\n"
        "error: 1 input(s) skipped (listed above), 1 predicted\n")


def _library_calls(out: Path) -> None:
    """Two library calls that note: what ``overwrite`` replaced (INFO, a stdout line in the CLI) and
    the split of a folder dataset (two WARNINGs: files left out, a split recorded late)."""
    from pointabstract.engine.run_dir import claim_run_folder
    from pointabstract.engine.run_manifest import record_split

    out.mkdir()
    (out / "report.md").write_text("mine")
    claim_run_folder(out, overwrite=True)
    dataset = SimpleNamespace(split_record={"train": ["a.ply"], "test": []}, new_files=["b.ply", "c.ply"],
                              root="shapes")
    record_split(out, dataset, resumed=True)


def test_a_library_user_gets_records_and_no_output(tmp_path, caplog, capsys):
    caplog.set_level(logging.INFO, logger="pointabstract")
    _library_calls(tmp_path / "run")
    assert [(r.name, r.levelname, r.getMessage()) for r in caplog.records] == [
        ("pointabstract.engine.run_dir", "INFO",
         f"--overwrite: replaced in {tmp_path / 'run'}: report.md (not written by train)"),
        ("pointabstract.engine.run_manifest", "WARNING",
         f"note: 2 shape file(s) under shapes are not in the split this run trained on ({tmp_path / 'run'}"
         "/split.json): left out of train and test (train a new run to use them)"),
        ("pointabstract.engine.run_manifest", "WARNING",
         f"note: {tmp_path / 'run'} held no split.json (a run of an earlier version): the split made now from "
         "the files under shapes is recorded there and kept")]
    assert capsys.readouterr() == ("", "")  # the library prints nothing itself


@pytest.mark.parametrize("silenced", [False, True])
def test_a_library_user_shows_or_silences_the_notes(tmp_path, capsys, silenced):
    root = logging.getLogger()
    handler, level = logging.StreamHandler(sys.stderr), LOGGER.level  # what logging.basicConfig() adds
    root.addHandler(handler)
    try:
        if silenced:
            LOGGER.setLevel(logging.ERROR)  # the one line docs/getting_started.md gives
        _library_calls(tmp_path / "run")
    finally:
        root.removeHandler(handler)
        LOGGER.setLevel(level)
    err = capsys.readouterr().err
    if silenced:
        assert err == ""
    else:  # the root logger's level (WARNING): the two warnings, as logging prints them
        assert err.count("note: ") == 2 and "--overwrite" not in err, err


def test_importing_adds_no_handler_but_a_null_one():
    code = ("import logging\nimport pointabstract, pointabstract.cli, pointabstract.engine, pointabstract.data, "
            "pointabstract.predict\nfrom pointabstract.engine import trainer\n"
            "ours = logging.getLogger('pointabstract')\n"
            "print(logging.getLogger().handlers, [type(h).__name__ for h in ours.handlers], ours.level, "
            "ours.propagate)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout == "[] ['NullHandler'] 0 True\n", out.stdout + out.stderr


def test_cli_notes_route_by_stream_and_keep_a_level_the_caller_set(capsys):
    log = logging.getLogger("pointabstract.test")
    with cli_notes(), cli_notes():  # nested: still one handler
        log.info("on stdout", extra=STDOUT)
        log.warning("on stderr, 100% plain")
        log.debug("not shown")
    assert capsys.readouterr() == ("on stdout\n", "on stderr, 100% plain\n")
    LOGGER.setLevel(logging.ERROR)
    try:
        with cli_notes():
            log.warning("silenced")
            log.error("shown")
    finally:
        LOGGER.setLevel(logging.NOTSET)
    assert capsys.readouterr() == ("", "shown\n")
    log.warning("after: no handler of ours")
    assert capsys.readouterr() == ("", "")
