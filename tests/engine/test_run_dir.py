import os

import pytest

from pointabstract.engine.run_dir import (
    check_writable_file,
    config_changes,
    prepare_out_dir,
    record_config_changes,
    remove_stale_temporaries,
)


def test_prepare_out_dir_creates_and_refuses_files(tmp_path):
    assert prepare_out_dir(tmp_path / "a" / "b").is_dir()
    (tmp_path / "f").write_text("x")
    with pytest.raises(NotADirectoryError, match=r"log.out_dir .*/f is a file, not a folder"):
        prepare_out_dir(tmp_path / "f")
    with pytest.raises(NotADirectoryError, match=r"log.out_dir .*/f/run cannot be written: Not a directory"):
        prepare_out_dir(tmp_path / "f" / "run")
    with pytest.raises(PermissionError, match=r"log.out_dir /sys/pointabstract-test cannot be written"):
        prepare_out_dir("/sys/pointabstract-test")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_prepare_out_dir_refuses_a_read_only_folder(tmp_path):
    (tmp_path / "ro").mkdir(mode=0o500)
    with pytest.raises(PermissionError, match="cannot be written: Permission denied"):
        prepare_out_dir(tmp_path / "ro")


def test_check_writable_file(tmp_path):
    assert check_writable_file(tmp_path / "new" / "t.md") == tmp_path / "new" / "t.md"
    assert not (tmp_path / "new" / "t.md").exists()
    with pytest.raises(IsADirectoryError, match="is a folder; give a file name"):
        check_writable_file(tmp_path)
    (tmp_path / "f").write_text("x")
    with pytest.raises(NotADirectoryError, match=r"--out .*/f/t.md: folder .*/f is a file, not a folder"):
        check_writable_file(tmp_path / "f" / "t.md")


def test_stale_temporaries_of_dead_processes_are_removed(tmp_path):
    dead, live, other = (tmp_path / ".last.pt.tmp-999999999", tmp_path / f".best.pt.tmp-{os.getppid()}",
                         tmp_path / ".notes.txt")
    for path in (dead, live, other):
        path.write_bytes(b"partial")
    own = tmp_path / f".last.pt.tmp-{os.getpid()}"
    own.write_bytes(b"partial")
    assert sorted(remove_stale_temporaries(tmp_path)) == sorted([dead, own])
    assert live.exists() and other.exists() and not dead.exists() and not own.exists()


def test_config_changes_are_listed_and_recorded(tmp_path):
    changes = config_changes({"optim.lr": 0.1, "seed": 0, "old.key": 1}, {"optim.lr": 0.2, "seed": 0, "new": 2})
    assert changes == {"optim.lr": (0.1, 0.2)}
    record_config_changes(tmp_path, changes, epoch=3)
    path = record_config_changes(tmp_path, {"seed": (0, 1)}, epoch=5)
    import yaml

    history = yaml.safe_load(path.read_text())
    assert [h["epoch"] for h in history] == [3, 5]
    assert history[0]["changes"] == {"optim.lr": {"from": 0.1, "to": 0.2}}


def test_a_new_run_never_replaces_a_finished_one(tiny_overrides, tmp_path, notes):
    from pointabstract.engine import load_checkpoint, load_config, train

    cfg = load_config(None, [*tiny_overrides, "optim.epochs=2"])
    train(cfg)
    out = tmp_path / "run"
    (out / "eval_last").mkdir()
    before = {name: (out / name).read_bytes() for name in ("last.pt", "best.pt", "metrics.jsonl")}
    with pytest.raises(FileExistsError, match=r"already holds a run \(last\.pt \(epoch 2 of 2, model "
                                              r"'centroid_transformer'\)\); continue it with --resume"):
        train(load_config(None, [*tiny_overrides, "optim.epochs=1"]))
    assert before == {name: (out / name).read_bytes() for name in before}
    notes()
    train(load_config(None, [*tiny_overrides, "optim.epochs=1"]), overwrite=True)
    said = notes()
    assert "--overwrite: replaced the run in" in said and "removed last.pt, best.pt, metrics.jsonl" in said
    assert "kept eval_last/" in said and (out / "eval_last").is_dir()
    assert load_checkpoint(out / "last.pt")["epoch"] == 1
    assert len((out / "metrics.jsonl").read_text().splitlines()) == 1


def test_the_run_lock_refuses_a_live_writer_and_takes_over_a_dead_ones(tiny_overrides, tmp_path):
    import socket
    import subprocess
    import sys

    from pointabstract.engine import load_config, train
    from pointabstract.engine.run_dir import RunFolderBusyError, RunLock

    out = tmp_path / "run"
    out.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (out / ".lock").write_text(f"{socket.gethostname()} {holder.pid}")
        with pytest.raises(RunFolderBusyError, match=rf"is being written by another training \(process "
                                                     rf"{holder.pid} on "):
            train(load_config(None, [*tiny_overrides, "optim.epochs=1"]))
    finally:
        holder.kill()
        holder.wait()
    train(load_config(None, [*tiny_overrides, "optim.epochs=1"]))  # the dead holder's lock is taken over
    assert not (out / ".lock").exists()
    with RunLock(out) as lock:
        assert (out / ".lock").read_text() == f"{socket.gethostname()} {__import__('os').getpid()}"
        with pytest.raises(RunFolderBusyError):
            _other_process_lock(out)  # a second process while this one holds it
    assert not lock.held and not (out / ".lock").exists()


def _other_process_lock(out):
    import subprocess
    import sys

    code = ("import sys; from pointabstract.engine.run_dir import RunLock, RunFolderBusyError\n"
            f"try:\n    RunLock({str(out)!r}).acquire()\nexcept RunFolderBusyError as e:\n    print(e); sys.exit(3)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if done.returncode == 3:
        from pointabstract.engine.run_dir import RunFolderBusyError

        raise RunFolderBusyError(done.stdout)


def test_overwrite_under_several_processes_is_rank_zero_s_alone(tmp_path):
    from pointabstract.engine.trainer import claim_for_rank

    def held_run():
        (tmp_path / "last.pt").write_bytes(b"not a checkpoint")
        (tmp_path / "metrics.json").write_text("{}")

    held_run()
    for is_main in (True, False):  # without --overwrite every process refuses alike
        with pytest.raises(FileExistsError, match="already holds a run"):
            claim_for_rank(tmp_path, overwrite=False, is_main=is_main)
    claim_for_rank(tmp_path, overwrite=True, is_main=False)  # another rank: does not look, removes nothing
    assert (tmp_path / "last.pt").is_file() and (tmp_path / "metrics.json").is_file()
    claim_for_rank(tmp_path, overwrite=True, is_main=True)  # rank 0 removes the old run
    assert not (tmp_path / "last.pt").exists() and not (tmp_path / "metrics.json").exists()


def _preset_in_its_out_dir(tiny_overrides, folder):
    """A preset the user wrote by hand, saved as config.yaml in the folder it trains into, beside
    notes of theirs called report.md and metrics.json (no checkpoint: nothing was trained there)."""
    import yaml

    from pointabstract.engine import load_config
    from pointabstract.engine.config import to_flat

    folder.mkdir(parents=True)
    flat = to_flat(load_config(None, [*tiny_overrides, "optim.epochs=1", f"log.out_dir={folder}"]))
    (folder / "config.yaml").write_text("# my preset, with my comments\n" + yaml.safe_dump(flat))
    (folder / "report.md").write_text("# my notes\n")
    (folder / "metrics.json").write_text('{"mine": 1}\n')
    return {name: (folder / name).read_bytes() for name in ("config.yaml", "report.md", "metrics.json")}


def test_train_never_replaces_files_it_did_not_write(tiny_overrides, tmp_path, capsys):
    # issue 38: without a checkpoint in log.out_dir, train replaced config.yaml (here the preset being
    # trained), report.md and metrics.json without a word
    from pointabstract.cli import main

    folder = tmp_path / "exp"
    before = _preset_in_its_out_dir(tiny_overrides, folder)
    assert main(["train", str(folder / "config.yaml")]) == 2
    err = capsys.readouterr().err
    assert err == (f"error: log.out_dir {folder} holds metrics.json, report.md, config.yaml, which train writes "
                   "but no run of its own wrote there (if config.yaml is the preset you are training, keep it "
                   "outside log.out_dir: train writes its resolved config there): refused, nothing is touched; "
                   "train into another log.out_dir, move them away, or pass --overwrite to replace them\n")
    assert {name: (folder / name).read_bytes() for name in before} == before
    assert sorted(p.name for p in folder.iterdir()) == ["config.yaml", "metrics.json", "report.md"]
    assert main(["train", str(folder / "config.yaml"), "--overwrite"]) == 0
    said = capsys.readouterr().out
    assert f"--overwrite: replaced in {folder}: metrics.json, report.md, config.yaml (not written by train)" in said
    assert (folder / "last.pt").is_file() and (folder / "config.yaml").read_bytes() != before["config.yaml"]


def test_a_run_of_its_own_without_a_checkpoint_is_replaced_quietly(tiny_overrides, tmp_path, notes):
    from pointabstract.engine import load_config, train
    from pointabstract.engine.run_dir import RUN_FILES
    from pointabstract.engine.run_manifest import read_run_manifest, record_run_files

    out = tmp_path / "run"
    out.mkdir()
    record_run_files(out, ["config.yaml", "metrics.jsonl", "tb"])  # a run killed in its first epoch
    for name in ("config.yaml", "metrics.jsonl"):
        (out / name).write_text("left by the killed run\n")
    (out / "tb").mkdir()
    (out / "tb" / "events.old").write_text("x")
    (out / "notes.txt").write_text("mine")
    train(load_config(None, [*tiny_overrides, "optim.epochs=1"]))
    assert "--overwrite" not in notes()
    assert not (out / "tb" / "events.old").exists() and (out / "notes.txt").read_text() == "mine"
    present = {name for name in RUN_FILES if (out / name).exists()}
    assert present <= read_run_manifest(out) and {"last.pt", "config.yaml", "report.md"} <= present


def test_overwrite_names_what_no_run_wrote_beside_a_run(tmp_path, notes):
    from pointabstract.engine.run_dir import claim_run_folder
    from pointabstract.engine.run_manifest import record_run_files

    record_run_files(tmp_path, ["last.pt", "metrics.jsonl"])
    (tmp_path / "last.pt").write_bytes(b"not a checkpoint")
    (tmp_path / "metrics.jsonl").write_text("{}\n")
    (tmp_path / "report.md").write_text("mine")
    assert claim_run_folder(tmp_path, overwrite=True) == ["last.pt", "metrics.jsonl", "report.md"]
    assert "removed last.pt, metrics.jsonl, report.md (not written by train)" in notes()
